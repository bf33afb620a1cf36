/**
 * What the registry tools (`tools/read-cost.ts`, `read-split.ts`, `commit-cost.ts`, …) share: the
 * signer set they start a registry (or the protocol floor) with, and the log they fill before
 * measuring reads. Apart from `servers/registry/shared.ts` so that a baseline server, which imports
 * that file, never loads `@ron/registry`.
 */
import { generateSignerKey, signApproval, type RegistryClient, type SignerKey, type SignerSet } from '@ron/registry'
import { ORIGIN } from '../servers/registry/shared.js'

/** Three fresh signer keys (`s1`–`s3`) and their 2-of-3 set. */
export function benchSigners(): { keys: SignerKey[]; signers: SignerSet } {
  const keys = ['s1', 's2', 's3'].map(generateSignerKey)
  return { keys, signers: { threshold: 2, signers: keys.map((k) => ({ id: k.id, publicKey: k.publicKey })) } }
}

/**
 * Commits `count` entries through `client`, each a propose and then a commit carrying the
 * approvals of the first two `keys` (entry `i`: the service `storage.node-<i>`), as the tools
 * that measure reads of a 256-entry log do.
 */
export async function fillLog(client: RegistryClient, keys: readonly SignerKey[], count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const p = await client.propose({ schemaVersion: 1, items: [{ kind: 'service', name: `storage.node-${i}`, service: 'storage', node: `node-${i}`, endpoint: `http://10.0.0.${i}:7701` }] })
    await client.commit(p.proposalId, { approvals: keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })) })
  }
}
