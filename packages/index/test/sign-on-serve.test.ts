/**
 * The home signs a name's record when it serves it, not when it writes it (DESIGN.md "Name records
 * are signed when served"): the store keeps the record's fields, and Ed25519 being deterministic,
 * the record served is byte for byte the one a signature at the write would have given. Whole
 * index services on one MemoryTransport: the home `b` on LMDB (so it restarts), the peer `a`
 * asking it.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, staticNodeDirectory } from '@ron/core'
import type { NodeDirectory } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexClient, createIndexService, createMemoryNameStore, openLmdbNameStore, signNameRecord, verifyNameRecord } from '../src/index.js'
import type { IndexService, NameResolution, NameStore, SignedNameRecord } from '../src/index.js'
import { RecordSigner } from '../src/name-record.js'
import { PEER_HEADER } from '../src/peer-client.js'
import { FakeStorage, manifestFor, testNode, type TestNode } from './helpers.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'ron-index-sign-'))
  closers.push(() => rm(d, { recursive: true, force: true }))
  return d
}

/** A home `b` (LMDB in `dir`) and a peer `a` that asks it, both knowing both keys. */
async function pair(dir: string, home: TestNode = testNode()) {
  const transport = new MemoryTransport()
  closers.push(() => transport.close())
  const issuer = createTestIssuer()
  const storage = new FakeStorage()
  transport.mount('storage', storage)
  const peer = testNode()
  const nodes = staticNodeDirectory([peer.known, home.known])
  const startHome = async (identity = home): Promise<IndexService> => {
    const b = await createIndexService({ dataDir: dir, nodes: staticNodeDirectory([identity.known, peer.known]) }, transport, { auth: { keys: issuer.keys }, identity: identity.identity })
    transport.mount('idx-b', b)
    return b
  }
  let b = await startHome()
  closers.push(() => b.close())
  const a = await createIndexService({ amnesia: true, peers: { targets: ['idx-b'], alpha: 1, beta: 0 } }, transport, { identity: peer.identity, nodes })
  closers.push(() => a.close())
  const writer = createIndexClient(transport, { target: 'idx-b', token: issuer.mint({ scope: 'index:write', aud: 'index' }) })
  return {
    home,
    nodes,
    storage,
    writer,
    /** `a`'s answer, asked of the home (never of `a`'s cache). */
    resolve: (name: string) => a.resolve(name, { fresh: true }) as Promise<NameResolution>,
    /** What the home answers a peer for `name` (a 404's tombstone as `record`). */
    homeAnswer: async (name: string): Promise<{ status: number; record: SignedNameRecord }> => {
      const res = await transport.request('idx-b', { method: 'GET', path: `/resolve/${name}`, headers: { [PEER_HEADER]: '1' } })
      const json = await res.json<{ record?: SignedNameRecord; error?: { details: { record: SignedNameRecord } } }>()
      return { status: res.status, record: json.record ?? json.error!.details.record }
    },
    restartHome: async (identity?: TestNode): Promise<void> => {
      await b.close()
      b = await startHome(identity)
    },
    closeHome: () => b.close(),
  }
}

/** The record `home` signs for these fields now: what the served record must equal, byte for byte. */
function expected(home: TestNode, r: SignedNameRecord): string {
  return JSON.stringify(signNameRecord(home.identity, { name: r.name, manifestAddress: r.manifestAddress, seq: r.seq, node: home.identity.id, signedAt: r.signedAt }))
}

function verifies(r: unknown, name: string, nodes: NodeDirectory): SignedNameRecord {
  const v = verifyNameRecord(r, name, nodes)
  expect(v.ok).toBe(true)
  return (v as { record: SignedNameRecord }).record
}

async function keptRecord(dir: string, name: string): Promise<unknown> {
  const store = await openLmdbNameStore({ dir })
  try {
    return store.get(name)?.record ?? store.tombstone(name)
  } finally {
    await store.close()
  }
}

describe('name records signed when served', () => {
  it('a peer gets a verifying record after a write, a second write, a restart and a delete; the store keeps the served signature', async () => {
    const dir = await tmp()
    const p = await pair(dir)
    const m1 = p.storage.put(JSON.stringify(manifestFor('v1')))
    const m2 = p.storage.put(JSON.stringify(manifestFor('v2')))

    await expect(p.writer.setName('site.lazy', m1)).resolves.toMatchObject({ seq: 1 })
    const r1 = await p.resolve('site.lazy')
    expect(r1).toMatchObject({ source: 'peer', manifestAddress: m1, record: { seq: 1, node: p.home.identity.id, manifestAddress: m1 } })
    verifies(r1.record, 'site.lazy', p.nodes)
    expect(JSON.stringify(r1.record)).toBe(expected(p.home, r1.record!))

    await expect(p.writer.setName('site.lazy', m2)).resolves.toMatchObject({ seq: 2 })
    const r2 = await p.resolve('site.lazy')
    expect(r2).toMatchObject({ source: 'peer', manifestAddress: m2, record: { seq: 2, manifestAddress: m2 } })
    verifies(r2.record, 'site.lazy', p.nodes)
    expect(r2.record!.sig).not.toBe(r1.record!.sig)

    // After a restart the record is signed again from what was kept: the very same bytes.
    await p.restartHome()
    const r3 = await p.resolve('site.lazy')
    expect(JSON.stringify(r3.record)).toBe(JSON.stringify(r2.record))

    await expect(p.writer.deleteName('site.lazy')).resolves.toMatchObject({ seq: 3 })
    await expect(p.resolve('site.lazy')).rejects.toMatchObject({ code: 'NotFound' })
    const t = await p.homeAnswer('site.lazy')
    expect(t.status).toBe(404)
    expect(verifies(t.record, 'site.lazy', p.nodes)).toMatchObject({ seq: 3, manifestAddress: null, node: p.home.identity.id })
    expect(JSON.stringify(t.record)).toBe(expected(p.home, t.record))
    // A restart serves the same tombstone, byte for byte.
    await p.restartHome()
    const t2 = await p.homeAnswer('site.lazy')
    expect(JSON.stringify(t2.record)).toBe(JSON.stringify(t.record))

    // What the store keeps: the served record, its signature written back on the first serve.
    await p.closeHome()
    expect(await keptRecord(dir, 'site.lazy')).toEqual(t.record)
  })

  it('a restart under another identity serves the kept names under the new key only, never as the old node', async () => {
    const dir = await tmp()
    const oldHome = testNode()
    const p = await pair(dir, oldHome)
    const m = p.storage.put(JSON.stringify(manifestFor('moved')))
    await p.writer.setName('site.moved', m)
    await p.writer.setName('gone.moved', m)
    await p.writer.deleteName('gone.moved')
    const newHome = testNode()
    await p.restartHome(newHome)
    const r = await p.homeAnswer('site.moved')
    expect(r.status).toBe(200)
    expect(r.record).toMatchObject({ node: newHome.identity.id, seq: 1 })
    verifies(r.record, 'site.moved', staticNodeDirectory([newHome.known]))
    expect(verifyNameRecord(r.record, 'site.moved', staticNodeDirectory([{ ...oldHome.known, id: newHome.identity.id }])).ok).toBe(false)
    const t = await p.homeAnswer('gone.moved')
    expect(t).toMatchObject({ status: 404, record: { node: newHome.identity.id, seq: 2, manifestAddress: null } })
    verifies(t.record, 'gone.moved', staticNodeDirectory([newHome.known]))
  })

  it('with a store the cluster shares, writes keep the signed record: another node serves the tombstone as its writer signed it', async () => {
    const transport = new MemoryTransport()
    closers.push(() => transport.close())
    const issuer = createTestIssuer()
    const storage = new FakeStorage()
    transport.mount('storage', storage)
    const memory = createMemoryNameStore()
    // Both nodes read and write one store, as on etcd.
    const shared = (): NameStore => Object.create(memory, { shared: { value: true }, close: { value: () => Promise.resolve() } }) as NameStore
    const n1 = testNode()
    const n2 = testNode()
    const nodes = staticNodeDirectory([n1.known, n2.known])
    const one = await createIndexService({}, transport, { auth: { keys: issuer.keys }, identity: n1.identity, nodes, nameStore: shared() })
    closers.push(() => one.close())
    const two = await createIndexService({}, transport, { auth: { keys: issuer.keys }, identity: n2.identity, nodes: staticNodeDirectory([n2.known, n1.known]), nameStore: shared() })
    closers.push(() => two.close())
    transport.mount('idx-1', one)
    transport.mount('idx-2', two)
    const m = storage.put(JSON.stringify(manifestFor('shared')))
    const writer = createIndexClient(transport, { target: 'idx-1', token: issuer.mint({ scope: 'index:write', aud: 'index' }) })
    await writer.setName('site.shared', m)
    expect(memory.get('site.shared')?.record).toMatchObject({ node: n1.identity.id, sig: expect.stringMatching(/^[A-Za-z0-9_-]{86}$/) })
    await writer.deleteName('site.shared')
    const res = await transport.request('idx-2', { method: 'GET', path: '/resolve/site.shared', headers: { [PEER_HEADER]: '1' } })
    expect(res.status).toBe(404)
    const record = (await res.json<{ error: { details: { record: SignedNameRecord } } }>()).error.details.record
    expect(record).toMatchObject({ node: n1.identity.id, seq: 2, manifestAddress: null })
    verifies(record, 'site.shared', nodes)
  })
})

describe('RecordSigner', () => {
  const fields = (seq: number) => ['site.kept', `b3:${'1'.repeat(64)}`, seq, 1_000 + seq] as const

  it('keeps at most max records, signs a kept one once, signs again after its name changes or it was dropped', () => {
    const me = testNode()
    const s = new RecordSigner(me.identity, 3)
    const first = s.record(...fields(1))
    expect(s.record(...fields(1))).toBe(first)
    expect(s.signatures).toBe(1)
    for (let i = 0; i < 5; i++) s.record(`n${i}.kept`, null, 1, 1)
    expect(s.size).toBe(3)
    expect(s.signatures).toBe(6)
    // Dropped (oldest first): signed again, the same bytes.
    const again = s.record(...fields(1))
    expect(s.signatures).toBe(7)
    expect(again).toEqual(first)
    // A new seq of the name: a new signature, replacing the kept one.
    const next = s.record(...fields(2))
    expect(next.sig).not.toBe(first.sig)
    expect(s.size).toBe(3)
    // The most recently served stays: n4 was served after n3, n3 goes first.
    s.record('n4.kept', null, 1, 1)
    s.record('x.kept', null, 1, 1)
    const before = s.signatures
    s.record('n4.kept', null, 1, 1)
    expect(s.signatures).toBe(before)
    s.forget('n4.kept')
    s.record('n4.kept', null, 1, 1)
    expect(s.signatures).toBe(before + 1)
  })

  it('serves a kept signed record as kept, and signs an unsigned one only as its own node', () => {
    const me = testNode()
    const other = testNode()
    const s = new RecordSigner(me.identity)
    const theirs = signNameRecord(other.identity, { name: 'site.theirs', manifestAddress: null, seq: 4, node: other.identity.id, signedAt: 9 })
    expect(s.served(theirs)).toBe(theirs)
    expect(s.signatures).toBe(0)
    const { sig: _sig, ...unsigned } = theirs
    const mine = s.served(unsigned)
    expect(mine).toMatchObject({ node: me.identity.id, seq: 4, signedAt: 9 })
    expect(verifyNameRecord(mine, 'site.theirs', staticNodeDirectory([me.known])).ok).toBe(true)
  })
})
