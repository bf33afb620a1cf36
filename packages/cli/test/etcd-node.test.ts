/**
 * Coordination on etcd (SPEC §6c) in-process: two `startNode` nodes in this process on a real
 * one-member etcd started by the test (loopback, its own data directory), so coverage sees the
 * coordination stores (`src/coordination/*`) the cluster e2e test runs only in spawned processes.
 *
 * - commits from both nodes make one log; a proposal made on one node is committed on the other;
 *   a commit on a stale base loses with ChainMismatch; a large entry (payload over 64 KiB) round-trips;
 * - exactly one node holds the checkpoint signer lease; closing it hands the lease over at once;
 * - a token revoked on one node is refused on the other;
 * - a name bound on one node resolves on the other; a second create of it conflicts (409);
 *   deleted, it is gone everywhere;
 * - etcd down: writes answer 503 Unavailable (`etcd_unavailable`, Retry-After), reads of what is
 *   known go on, `/status` says unreachable; etcd back: writes resume without a restart.
 *
 * Skips, saying why, where etcd is not installed.
 */

import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, generateSignerKey, loadOrCreateLogKey, noteSigner, signApproval, verifyCheckpoint, type RegistryClient } from '@ron/registry'
import { startNode, type RonNode } from '../src/node.js'
import { etcdMissing, startEtcdCluster, type EtcdCluster } from './etcd-cluster.js'

const missing = etcdMissing()
if (missing !== undefined) console.warn(`etcd-node: ${missing}`)
const ORIGIN = 'ron.registry/etcd-inproc'
const LEASE_TTL_SEC = 2

interface N {
  node: RonNode
  token: string
  registry: RegistryClient
  transport: HttpTransport
}

let root: string
let etcd: EtcdCluster | undefined
let signer: ReturnType<typeof generateSignerKey>
let logKey: string
const nodes: N[] = []

async function open(i: number, logKeyFile: string): Promise<N> {
  const node = await startNode({
    dataDir: join(root, `node${i}`),
    portBase: 0,
    drainDeadlineMs: 300,
    etcd: { endpoints: etcd!.endpoints, prefix: '/ron-inproc/', leaseTtlSec: LEASE_TTL_SEC, timeoutMs: 1000 },
    config: { registry: { origin: ORIGIN, logKeyFile, signers: { threshold: 1, signers: [{ id: signer.id, publicKey: signer.publicKey }] } } },
  })
  await node.whenReady(AbortSignal.timeout(20_000))
  const token = (await readFile(node.tokenFile!, 'utf8')).trim()
  const transport = new HttpTransport({ targets: { registry: node.services['registry']! } })
  return { node, token, registry: createRegistryClient(transport, { token }), transport }
}

beforeAll(async () => {
  if (missing !== undefined) return
  root = await mkdtemp(join(tmpdir(), 'ron-etcd-node-'))
  etcd = await startEtcdCluster({ size: 1 })
  const logKeyFile = join(root, 'registry-log.key')
  logKey = noteSigner(ORIGIN, await loadOrCreateLogKey(logKeyFile)).verifierKey
  signer = generateSignerKey('ops')
  // One after the other: the first creates the log in etcd, the second joins it.
  nodes.push(await open(1, logKeyFile))
  nodes.push(await open(2, logKeyFile))
}, 60_000)
afterAll(async () => {
  for (const n of nodes) {
    await n.transport.close()
    await n.node.close()
  }
  await etcd?.close()
  if (root !== undefined) await rm(root, { recursive: true, force: true })
})

function approve(p: { baseVersion: number; payloadB3: string }): { approvals: ReturnType<typeof signApproval>[] } {
  return { approvals: [signApproval(signer, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })] }
}

/** A commit on `n`, proposed again on the new HEAD while the other node wins the race. */
async function commit(n: N, label: string, extra: Record<string, unknown> = {}): Promise<{ version: number; hash: string }> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const p = await n.registry.propose({ schemaVersion: 1, items: [{ kind: 'policy', name: label, rules: { attempt, ...extra } }] })
    try {
      const r = await n.registry.commit(p.proposalId, approve(p))
      return { version: r.version, hash: r.hash }
    } catch (e) {
      if ((e as { code?: string }).code !== 'ChainMismatch') throw e
    }
  }
  throw new Error(`no commit of ${label} after 100 attempts`)
}

async function head(n: N): Promise<number> {
  return ((await (await fetch(`${n.node.services['registry']!}/registry/head`)).json()) as { version: number }).version
}

interface EtcdStatus {
  reachable: boolean
  prefix: string
  error?: string
  signer?: { holder?: string; self: boolean }
}

async function etcdStatus(n: N): Promise<EtcdStatus> {
  return ((await (await fetch(`${n.node.admin}/status`)).json()) as { etcd: EtcdStatus }).etcd
}

/** The sum of `name` over the series whose labels include `labels`, in a node's admin `/metrics`. */
async function metric(n: N, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${n.node.admin}/metrics`)).text()
  const lines = text.split('\n').filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(labels))
  return lines.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0)
}

function post(url: string, token: string, body: unknown, method = 'POST'): Promise<Response> {
  return fetch(url, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

describe.skipIf(missing !== undefined)('two in-process nodes on etcd', () => {
  it('make one registry log: concurrent commits, proposals shared, stale commits refused, large entries', async () => {
    const [a, b] = nodes as [N, N]
    const start = await head(a)
    const acked = (await Promise.all([a, b].map(async (n, i) => {
      const out = []
      for (let k = 0; k < 4; k++) out.push(await commit(n, `n${i}-${k}`))
      return out
    }))).flat()
    expect(acked.map((x) => x.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 8 }, (_, i) => start + i + 1))
    await expect.poll(async () => [await head(a), await head(b)], { timeout: 5000 }).toEqual([start + 8, start + 8])
    // Every acknowledged version reads back the acknowledged entry on both nodes.
    for (const n of [a, b]) {
      for (const x of acked) expect(((await (await fetch(`${n.node.services['registry']!}/registry/${x.version}`)).json()) as { hash: string }).hash).toBe(x.hash)
    }

    // A proposal made on node a is known to node b (etcd holds it): b commits it.
    const shared = await a.registry.propose({ schemaVersion: 1, items: [{ kind: 'policy', name: 'shared', rules: {} }] })
    const viaB = await b.registry.commit(shared.proposalId, approve(shared))
    expect(viaB.version).toBe(start + 9)
    // A proposal on the old base: someone committed in between, so it loses (nothing appended).
    const stale = await a.registry.propose({ schemaVersion: 1, items: [{ kind: 'policy', name: 'stale', rules: {} }] })
    await commit(b, 'in-between')
    const lost = await a.registry.commit(stale.proposalId, approve(stale)).catch((e: unknown) => e)
    expect((lost as { code?: string }).code).toBe('ChainMismatch')
    await expect.poll(async () => [await head(a), await head(b)], { timeout: 5000 }).toEqual([start + 10, start + 10])

    // An entry over etcd's value budget (its payload kept under its own key) reads back whole on the other node.
    const big = randomBytes(48 * 1024).toString('base64')
    const large = await commit(a, 'large', { blob: big })
    await expect.poll(() => head(b), { timeout: 5000 }).toBe(large.version)
    const read = (await (await fetch(`${b.node.services['registry']!}/registry/${large.version}`)).json()) as { hash: string; payload: { items: Array<{ rules: { blob?: string } }> } }
    expect(read.hash).toBe(large.hash)
    expect(read.payload.items[0]!.rules.blob).toBe(big)

    expect((await metric(a, 'etcd_requests_total', 'op="append",result="ok"')) + (await metric(b, 'etcd_requests_total', 'op="append",result="ok"'))).toBeGreaterThanOrEqual(10)
    expect(await metric(b, 'etcd_watch_events_total', 'area="registry"')).toBeGreaterThan(0)
  }, 60_000)

  it('revokes a token on every node: issued and revoked on one, refused on the other', async () => {
    const [a, b] = nodes as [N, N]
    const issued = await post(`${a.node.services['passport']!}/v1/passport/issue`, a.token, { sub: 'alice', aud: ['registry'], scope: ['registry:propose'], ttlSec: 600 })
    expect(issued.status, await issued.clone().text()).toBe(200)
    const alice = (await issued.json()) as { token: string; jti: string }
    const proposeOnB = (): Promise<Response> => post(`${b.node.services['registry']!}/registry/proposals`, alice.token, { payload: { schemaVersion: 1, items: [{ kind: 'policy', name: 'alice', rules: {} }] } })
    // b verifies a's tokens: a's key set is in etcd.
    await expect.poll(async () => (await proposeOnB()).status, { timeout: 5000 }).toBe(202)
    const revoked = await post(`${a.node.services['passport']!}/v1/passport/revoke`, a.token, { jti: alice.jti })
    expect(revoked.status, await revoked.clone().text()).toBe(202)
    await expect.poll(async () => (await proposeOnB()).status, { timeout: 5000 }).toBe(401)
    const refused = await proposeOnB()
    expect(((await refused.json()) as { error: { details: { reason: string } } }).error.details.reason).toBe('revoked')
    expect(await metric(b, 'etcd_watch_events_total', 'area="passport"')).toBeGreaterThan(0)
  })

  it('binds names on etcd: bound on one node, resolved on the other, a second create conflicts, a delete is seen everywhere', async () => {
    const [a, b] = nodes as [N, N]
    const manifest = JSON.stringify({ content: `b3:${randomBytes(32).toString('hex')}`, size: 5, type: 'text/plain' })
    const stored = await Promise.all([a, b].map(async (n) => {
      const put = await fetch(`${n.node.services['storage']!}/o`, { method: 'PUT', headers: { authorization: `Bearer ${n.token}` }, body: manifest })
      expect(put.status).toBe(201)
      return ((await put.json()) as { address: string }).address
    }))
    const manifestAddress = stored[0]!
    expect(stored[1]).toBe(manifestAddress)
    const bound = await post(`${a.node.services['index']!}/names/docs.inproc`, a.token, { manifestAddress, expectedPrevious: null }, 'PUT')
    expect(bound.status, await bound.clone().text()).toBe(200)
    await expect.poll(async () => (await fetch(`${b.node.services['index']!}/resolve/docs.inproc`)).status, { timeout: 5000 }).toBe(200)
    const resolved = (await (await fetch(`${b.node.services['index']!}/resolve/docs.inproc`)).json()) as { manifestAddress: string }
    expect(resolved.manifestAddress).toBe(manifestAddress)
    // Compare-and-set through etcd: b cannot create it again.
    const again = await post(`${b.node.services['index']!}/names/docs.inproc`, b.token, { manifestAddress, expectedPrevious: null }, 'PUT')
    expect(again.status).toBe(409)
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('Conflict')
    // Deleted on b: a no longer resolves it.
    const del = await fetch(`${b.node.services['index']!}/names/docs.inproc`, { method: 'DELETE', headers: { authorization: `Bearer ${b.token}` } })
    expect(del.status, await del.clone().text()).toBeLessThan(300)
    await expect.poll(async () => (await fetch(`${a.node.services['index']!}/resolve/docs.inproc`)).status, { timeout: 5000 }).toBe(404)
    expect(await metric(a, 'etcd_watch_events_total', 'area="names"')).toBeGreaterThan(0)
  })

  it('answers 503 etcd_unavailable for writes while etcd is down, serves reads, and resumes when it is back', async () => {
    const [a] = nodes as [N, N]
    const e = etcd!
    const before = await head(a)
    expect((await etcdStatus(a)).reachable).toBe(true)
    await e.stop(0)
    const proposal = await post(`${a.node.services['registry']!}/registry/proposals`, a.token, { payload: { schemaVersion: 1, items: [{ kind: 'policy', name: 'down', rules: {} }] } })
    expect(proposal.status).toBe(503)
    expect(proposal.headers.get('retry-after')).not.toBeNull()
    const err = ((await proposal.json()) as { error: { code: string; details: { reason: string } } }).error
    expect(err.code).toBe('Unavailable')
    expect(err.details.reason).toBe('etcd_unavailable')
    // Reads of what the node holds go on.
    expect(await head(a)).toBe(before)
    // The probe sees it; /status and etcd_up say so.
    await expect.poll(async () => (await etcdStatus(a)).reachable, { timeout: 5000 }).toBe(false)
    expect((await etcdStatus(a)).error).toBeDefined()
    expect(await metric(a, 'etcd_up')).toBe(0)
    expect(await metric(a, 'etcd_requests_total', 'result="error"')).toBeGreaterThan(0)
    await e.start(0)
    await e.healthy()
    await expect.poll(async () => (await etcdStatus(a)).reachable, { timeout: 10_000 }).toBe(true)
    const resumed = await commit(a, 'back')
    expect(resumed.version).toBeGreaterThan(before)
    expect(await metric(a, 'etcd_up')).toBe(1)
  }, 60_000)

  it('has one checkpoint signer; closing it hands the lease to the other at once', async () => {
    const [a, b] = nodes as [N, N]
    await expect.poll(async () => [(await etcdStatus(a)).signer?.self, (await etcdStatus(b)).signer?.self].filter(Boolean).length, { timeout: 10_000 }).toBe(1)
    const holderId = (await etcdStatus(a)).signer?.holder
    expect([a.node.nodeId, b.node.nodeId]).toContain(holderId)
    const holder = holderId === a.node.nodeId ? a : b
    const other = holder === a ? b : a
    expect(await metric(holder, 'etcd_signer_lease_held')).toBe(1)
    expect(await metric(other, 'etcd_signer_lease_held')).toBe(0)
    // The holder publishes checkpoints; both nodes serve one that verifies with the log key.
    await commit(other, 'checkpointed')
    const size = await head(other)
    const checkpoint = async (n: N): Promise<number> => {
      const res = await fetch(`${n.node.services['registry']!}/registry/checkpoint`)
      return res.ok ? verifyCheckpoint(await res.text(), logKey).treeSize : 0
    }
    await expect.poll(() => checkpoint(other), { timeout: 10_000 }).toBeGreaterThanOrEqual(size)
    // Closed (not killed), the holder revokes its lease: the other takes it well within the TTL.
    const closedAt = performance.now()
    await holder.transport.close()
    await holder.node.close()
    nodes.splice(nodes.indexOf(holder), 1)
    await expect.poll(async () => (await etcdStatus(other)).signer?.self, { timeout: LEASE_TTL_SEC * 1000 + 3000 }).toBe(true)
    expect(performance.now() - closedAt).toBeLessThan(LEASE_TTL_SEC * 1000 + 2000)
    expect(await metric(other, 'etcd_signer_lease_acquired_total')).toBeGreaterThanOrEqual(1)
    // The new holder signs checkpoints of what is committed after the hand-over.
    const after = await commit(other, 'after-handover')
    await expect.poll(() => checkpoint(other), { timeout: 10_000 }).toBeGreaterThanOrEqual(after.version)
  }, 60_000)
})
