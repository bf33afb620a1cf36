import { memoryNetwork, createTestIssuer, type TestIssuer, VirtualClock } from '@ron/core/testing'
import type { Transport } from '@ron/core'
import { createRegistryService, type RegistryService } from '../src/service.js'
import { createRegistryClient, type RegistryClient } from '../src/client.js'
import type { RegistryServiceConfig } from '../src/config.js'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DescriptorSet, SignerSet } from '../src/descriptors.js'
import { generateLogKey, noteSigner } from '../src/checkpoint.js'
import type { Genesis } from '../src/entry.js'
import { generateSignerKey, signApproval, type Approval, type SignerKey } from '../src/signers.js'

export const ORIGIN = 'test.ron/registry'

/** Deterministic-enough signer keys a, b, c… */
export function signers(n: number, prefix = 's'): SignerKey[] {
  return Array.from({ length: n }, (_, i) => generateSignerKey(`${prefix}${i + 1}`))
}

export function setOf(keys: SignerKey[], threshold: number): SignerSet {
  return { threshold, signers: keys.map((k) => ({ id: k.id, publicKey: k.publicKey })) }
}

export function genesisFor(set: SignerSet, treeHash: 'blake3' | 'sha256' = 'blake3'): Genesis {
  return { origin: ORIGIN, treeHash, signers: set, logKey: noteSigner(ORIGIN, generateLogKey()).verifierKey, createdAt: 0 }
}

export function payload(i: number, extra: Partial<DescriptorSet> = {}): DescriptorSet {
  return {
    schemaVersion: 1,
    items: [{ kind: 'service', name: `storage.node-${i}`, service: 'storage', node: `node-${i}`, endpoint: `http://127.0.0.1:${7000 + (i % 1000)}` }],
    ...extra,
  }
}

export function approve(keys: SignerKey[], baseVersion: number, payloadB3: string, origin = ORIGIN): Approval[] {
  return keys.map((k) => signApproval(k, { origin, baseVersion, payloadB3 }))
}

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'ron-registry-'))
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) }
}

export const ALL_SCOPES = ['registry:propose', 'registry:approve', 'registry:commit', 'registry:admin']

export interface Harness {
  svc: RegistryService
  client: RegistryClient
  transport: Transport
  issuer: TestIssuer
  keys: SignerKey[]
  clock: VirtualClock
  close(): Promise<void>
}

/** A registry with a 2-of-3 genesis set on a memory transport, a VirtualClock and an all-scopes client. */
export async function harness(config: RegistryServiceConfig = {}, n = 3, m = 2): Promise<Harness> {
  const clock = new VirtualClock(1_700_000_000_000)
  const issuer = createTestIssuer()
  const keys = signers(n)
  const svc = await createRegistryService({ origin: ORIGIN, signers: setOf(keys, m), drainReadWindowMs: 0, auth: { keys: issuer.keys }, clock, ...config })
  const transport = memoryNetwork({ registry: svc })
  const client = createRegistryClient(transport, { token: issuer.mint({ scope: ALL_SCOPES }) })
  return {
    svc,
    client,
    transport,
    issuer,
    keys,
    clock,
    async close() {
      await svc.close()
      await transport.close()
    },
  }
}
