/**
 * Registries of a cluster sharing one log (SPEC §6c), without etcd: an in-memory shared store
 * (HEAD compare-and-set, appends delivered to the other nodes asynchronously as a watch would,
 * the proposals table and the signer lease) stands in for ron-node's etcd store, which the
 * ron-node e2e test runs for real.
 */
import { memoryNetwork, createTestIssuer } from '@ron/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { createRegistryClient } from '../src/client.js'
import { generateLogKey, noteSigner, verifyCheckpoint } from '../src/checkpoint.js'
import { genesisHash, type Genesis, type Head } from '../src/entry.js'
import { createRegistryService, type RegistryService } from '../src/service.js'
import type { LogStore, SharedLog, SharedProposal, StoredCheckpoint } from '../src/store/index.js'
import type { PublishedCheckpoint } from '../src/store/shared.js'
import { ALL_SCOPES, ORIGIN, approve, payload, setOf, signers } from './helpers.js'
import { logView } from '../src/log-view.js'

/** What the cluster shares (etcd's part). */
class Central {
  genesis: Genesis | undefined
  head: Head = { version: 0, hash: 'b3:' }
  readonly entries = new Map<number, Uint8Array>()
  readonly leaves: Uint8Array[] = []
  readonly checkpoints: StoredCheckpoint[] = []
  readonly proposals = new Map<string, SharedProposal>()
  readonly byPayload = new Map<string, string>()
  published: PublishedCheckpoint | undefined
  holder: string | undefined
  readonly appendListeners = new Map<string, Set<() => void>>()
  readonly leaseListeners = new Set<() => void>()

  /** As a watch: every other node hears an append on a later turn. */
  appended(by: string): void {
    for (const [node, fns] of this.appendListeners) if (node !== by) for (const fn of fns) setImmediate(fn)
  }

  leaseChanged(): void {
    for (const fn of this.leaseListeners) setImmediate(fn)
  }
}

function sharedStore(c: Central, nodeId: string): LogStore {
  const listeners = new Set<() => void>()
  c.appendListeners.set(nodeId, listeners)
  const shared: SharedLog = {
    sync: () => Promise.resolve({ ...c.head }),
    onAppend(fn) {
      listeners.add(fn)
      return () => listeners.delete(fn)
    },
    leafHash: (v) => c.leaves[v - 1],
    proposals: {
      create(p) {
        const key = `${p.baseVersion}/${p.payloadB3}`
        const other = c.byPayload.get(key)
        if (other !== undefined) return Promise.resolve(structuredClone(c.proposals.get(other)!))
        c.byPayload.set(key, p.id)
        c.proposals.set(p.id, { ...structuredClone(p), approvals: [] })
        return Promise.resolve(p)
      },
      get: (id) => Promise.resolve(c.proposals.has(id) ? structuredClone(c.proposals.get(id)) : undefined),
      addApproval(id, a) {
        const p = c.proposals.get(id)
        if (p === undefined) return Promise.resolve('unknown')
        if (p.approvals.some((x) => x.signerId === a.signerId)) return Promise.resolve('duplicate')
        p.approvals.push(a)
        return Promise.resolve('added')
      },
    },
    signer: {
      holding: () => c.holder === nodeId,
      publish(cp) {
        if (c.holder !== nodeId || (c.published?.treeSize ?? -1) >= cp.treeSize) return Promise.resolve(false)
        c.published = cp
        c.leaseChanged()
        return Promise.resolve(true)
      },
      latest: () => c.published,
      onChange(fn) {
        c.leaseListeners.add(fn)
        return () => c.leaseListeners.delete(fn)
      },
    },
  }
  return {
    kind: 'shared-memory',
    shared,
    open(o) {
      if (c.genesis === undefined) {
        c.genesis = o.genesis
        c.head = { version: 0, hash: genesisHash(o.genesis!) }
      }
      return Promise.resolve({ genesis: c.genesis!, head: { ...c.head }, leafHashes: [...c.leaves], oldest: 1, checkpoints: [...c.checkpoints], notable: [], recoveries: {} })
    },
    head: () => ({ ...c.head }),
    compareAndAppend(expected, e, leaf) {
      if (expected.version !== c.head.version || expected.hash !== c.head.hash) return Promise.resolve(false)
      c.entries.set(e.entry.version, e.bytes)
      c.leaves.push(leaf)
      c.head = { version: e.entry.version, hash: e.hash }
      c.appended(nodeId)
      return Promise.resolve(true)
    },
    read: (v) => Promise.resolve(c.entries.get(v)),
    oldest: () => 1,
    appendCheckpoint(cp) {
      if (!c.checkpoints.some((x) => x.treeSize === cp.treeSize)) c.checkpoints.push(cp)
      return Promise.resolve()
    },
    checkpoints: () => c.checkpoints,
    segments: () => [],
    sizeBytes: () => 0,
    prune: () => Promise.resolve([]),
    probe: () => Promise.resolve(),
    close: () => Promise.resolve(),
  }
}

const open: RegistryService[] = []
afterEach(async () => {
  for (const s of open.splice(0)) await s.close()
})

async function cluster(n: number): Promise<{ central: Central; nodes: RegistryService[]; logKey: string; keys: ReturnType<typeof signers>; issuer: ReturnType<typeof createTestIssuer> }> {
  const central = new Central()
  const key = generateLogKey()
  const keys = signers(3)
  const issuer = createTestIssuer()
  const nodes: RegistryService[] = []
  for (let i = 0; i < n; i++) {
    const svc = await createRegistryService({ origin: ORIGIN, signers: setOf(keys, 2), auth: { keys: issuer.keys }, logKey: key, store: sharedStore(central, `n${i}`) })
    open.push(svc)
    nodes.push(svc)
  }
  return { central, nodes, logKey: noteSigner(ORIGIN, key).verifierKey, keys, issuer }
}

describe('registries sharing one log', () => {
  it('a proposal made on one node is approved on another and committed on a third; every node publishes every commit', async () => {
    const { nodes, keys, issuer } = await cluster(3)
    const token = issuer.mint({ scope: ALL_SCOPES })
    const clients = nodes.map((svc) => createRegistryClient(memoryNetwork({ registry: svc }), { token }))
    const subs = nodes.map((n) => n.subscribe())
    const p = await clients[0]!.propose(payload(1))
    const [a1, a2] = approve(keys.slice(0, 2), p.baseVersion, p.payloadB3)
    await clients[1]!.approve(p.proposalId, a1!)
    await expect(clients[2]!.approve(p.proposalId, a1!)).rejects.toMatchObject({ code: 'DuplicateApproval' })
    await clients[2]!.approve(p.proposalId, a2!)
    const r = await clients[2]!.commit(p.proposalId)
    expect(r.version).toBe(1)
    // A retry on the node that proposed it answers the same entry.
    await expect.poll(() => nodes[0]!.head().version).toBe(1)
    expect((await clients[0]!.commit(p.proposalId)).hash).toBe(r.hash)
    for (const s of subs) {
      const got = await s.recv(AbortSignal.timeout(2000))
      expect('value' in got && got.value.version).toBe(1)
      s.close()
    }
  })

  it('commits racing on two nodes make one linear log: the loser answers ChainMismatch and commits on the new HEAD', async () => {
    const { central, nodes, keys, issuer } = await cluster(2)
    const token = issuer.mint({ scope: ALL_SCOPES })
    const [c0, c1] = nodes.map((svc) => createRegistryClient(memoryNetwork({ registry: svc }), { token })) as [ReturnType<typeof createRegistryClient>, ReturnType<typeof createRegistryClient>]
    const p0 = await c0.propose(payload(10))
    const p1 = await c1.propose(payload(11))
    expect(p0.baseVersion).toBe(p1.baseVersion)
    const results = await Promise.allSettled([
      c0.commit(p0.proposalId, { approvals: approve(keys.slice(0, 2), p0.baseVersion, p0.payloadB3) }),
      c1.commit(p1.proposalId, { approvals: approve(keys.slice(0, 2), p1.baseVersion, p1.payloadB3) }),
    ])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const lost = results.find((r) => r.status === 'rejected')!
    expect(lost.reason).toMatchObject({ code: 'ChainMismatch' })
    const loser = results[0].status === 'rejected' ? c0 : c1
    const again = await loser.propose(payload(results[0].status === 'rejected' ? 10 : 11))
    expect(again.baseVersion).toBe(1)
    await loser.commit(again.proposalId, { approvals: approve(keys.slice(0, 2), again.baseVersion, again.payloadB3) })
    expect(central.head.version).toBe(2)
    await expect.poll(() => nodes.map((n) => n.head().hash)).toEqual([central.head.hash, central.head.hash])
    expect(logView(nodes[0]!).rootHex()).toBe(logView(nodes[1]!).rootHex())
  })

  it('only the lease holder signs; the other node serves what it published, and takes over when the lease moves', async () => {
    const { central, nodes, keys, issuer, logKey } = await cluster(2)
    const token = issuer.mint({ scope: ALL_SCOPES })
    const c1 = createRegistryClient(memoryNetwork({ registry: nodes[1]! }), { token })
    central.holder = 'n0'
    central.leaseChanged()
    const p = await c1.propose(payload(20))
    await c1.commit(p.proposalId, { approvals: approve(keys.slice(0, 2), p.baseVersion, p.payloadB3) })
    // Node 1 committed but does not sign: node 0 follows, signs and publishes; node 1 serves it.
    await expect.poll(() => central.published?.treeSize).toBe(1)
    await expect.poll(() => verifyCheckpoint(nodes[1]!.signedCheckpoint(), logKey).treeSize).toBe(1)
    expect(nodes[1]!.signedCheckpoint()).toBe(central.published!.note)
    // The holder goes: commits go on unsigned until node 1 takes the lease and signs them.
    central.holder = undefined
    const q = await c1.propose(payload(21))
    await c1.commit(q.proposalId, { approvals: approve(keys.slice(0, 2), q.baseVersion, q.payloadB3) })
    expect(verifyCheckpoint(nodes[1]!.signedCheckpoint(), logKey).treeSize).toBe(1)
    central.holder = 'n1'
    central.leaseChanged()
    await expect.poll(() => central.published?.treeSize).toBe(2)
    expect(verifyCheckpoint(nodes[1]!.signedCheckpoint(), logKey).treeSize).toBe(2)
  })
})
