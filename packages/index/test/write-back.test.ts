/**
 * A record is signed at most once per write (DESIGN.md "Name records are signed when served"):
 * what the home signs on serve for a record its store keeps unsigned is written back, so later
 * serves (after the signer's memory dropped it, after a restart) read it signed. The write-back
 * lands only while the name still holds the same fields, never delays or fails the read, and is
 * awaited (or dropped) by `close()`. Whole index services on a MemoryTransport, LMDB underneath;
 * the store's `keepSigned` wrapped where a test must hold or fail a write-back.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MemoryTransport, staticNodeDirectory, toDiskFault } from '@ron/core'
import type { Address, NodeIdentity } from '@ron/core'
import { createTestIssuer, deferred } from '@ron/core/testing'
import { createIndexClient, createIndexService, createMemoryNameStore, openLmdbNameStore, signNameRecord, verifyNameRecord, NAME_RECORD_DOMAIN } from '../src/index.js'
import type { IndexService, NameList, NameStore, SignedNameRecord } from '../src/index.js'
import { PEER_HEADER } from '../src/peer-client.js'
import { SignatureWriteBack, WRITE_BACK_PENDING_MAX, type WriteBackResult } from '../src/write-back.js'
import { FakeStorage, manifestFor, testNode } from './helpers.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'ron-index-writeback-'))
  closers.push(() => rm(d, { recursive: true, force: true }))
  return d
}

/** A node identity whose signatures are counted per name. */
function countedNode() {
  const node = testNode()
  const perName = new Map<string, number>()
  const dec = new TextDecoder()
  const identity: NodeIdentity = {
    id: node.identity.id,
    publicKey: node.identity.publicKey,
    sign: (data) => {
      const name = (JSON.parse(dec.decode(data).slice(NAME_RECORD_DOMAIN.length)) as { name: string }).name
      perName.set(name, (perName.get(name) ?? 0) + 1)
      return node.identity.sign(data)
    },
  }
  return { node, identity, perName, total: () => [...perName.values()].reduce((a, b) => a + b, 0) }
}

/** `keepSigned` of `real`, held by `gate` (when given) and failed by `fail` (when set), each call recorded. */
function wrapped(real: NameStore) {
  const calls: Array<{ records: readonly SignedNameRecord[]; result: Promise<number> }> = []
  const ctl = { gate: undefined as Promise<void> | undefined, fail: undefined as Error | undefined, storeOpenAtLanding: [] as boolean[] }
  const keepSigned = (records: readonly SignedNameRecord[]): Promise<number> => {
    const result = (async () => {
      if (ctl.gate !== undefined) await ctl.gate
      ctl.storeOpenAtLanding.push(real.closed !== true)
      if (ctl.fail !== undefined) throw ctl.fail
      return real.keepSigned!(records)
    })()
    calls.push({ records, result })
    return result
  }
  const store = Object.create(real, { keepSigned: { value: keepSigned } }) as NameStore
  return { store, calls, ctl }
}

async function home(dir: string, identity: NodeIdentity, nameStore?: NameStore) {
  const transport = new MemoryTransport()
  closers.push(() => transport.close())
  const issuer = createTestIssuer()
  const storage = new FakeStorage()
  transport.mount('storage', storage)
  const service: IndexService = await createIndexService({ dataDir: dir }, transport, { auth: { keys: issuer.keys }, identity, ...(nameStore === undefined ? {} : { nameStore }) })
  closers.push(() => service.close())
  transport.mount('idx', service)
  const writer = createIndexClient(transport, { target: 'idx', token: issuer.mint({ scope: 'index:write', aud: 'index' }) })
  return {
    service,
    writer,
    storage,
    /** An anonymous `GET /names` page. */
    list: async (query = 'limit=1000'): Promise<NameList> => {
      const res = await transport.request('idx', { method: 'GET', path: `/names?${query}` })
      expect(res.status).toBe(200)
      return res.json<NameList>()
    },
    /** What the home answers a peer for `name` (a 404's tombstone as `record`). */
    peerAnswer: async (name: string): Promise<{ status: number; record: SignedNameRecord }> => {
      const res = await transport.request('idx', { method: 'GET', path: `/resolve/${name}`, headers: { [PEER_HEADER]: '1' } })
      const json = await res.json<{ record?: SignedNameRecord; error?: { details: { record: SignedNameRecord } } }>()
      return { status: res.status, record: json.record ?? json.error!.details.record }
    },
    readyz: async (): Promise<unknown> => (await transport.request('idx', { method: 'GET', path: '/readyz' })).json(),
  }
}

/** `index_record_writebacks_total{result}` of `service`. */
async function writeBacks(service: IndexService, result: string): Promise<number> {
  const line = (await service.metricsText()).split('\n').find((l) => l.startsWith('index_record_writebacks_total') && l.includes(`result="${result}"`))
  return Number(line?.split(' ').pop())
}

async function bind(h: Awaited<ReturnType<typeof home>>, names: string[]): Promise<void> {
  const m = h.storage.put(JSON.stringify(manifestFor('wb')))
  for (const n of names) await h.writer.setName(n, m)
}

async function stored(dir: string): Promise<Map<string, unknown>> {
  const store = await openLmdbNameStore({ dir })
  try {
    const out = new Map<string, unknown>()
    for (const [name, b] of store.list('', undefined, 10_000)) out.set(name, b.record)
    return out
  } finally {
    await store.close()
  }
}

const fifty = Array.from({ length: 50 }, (_, i) => `n${String(i).padStart(2, '0')}.wb`)

describe('signatures made on serve are written back', () => {
  it('listing 50 never-served names twice and again after a restart signs each exactly once', async () => {
    const dir = await tmp()
    const me = countedNode()
    const dirOf = staticNodeDirectory([me.node.known])
    const h = await home(dir, me.identity)
    await bind(h, fifty)
    expect(me.total()).toBe(0)
    const first = await h.list()
    expect(first.names.map((r) => r.name)).toEqual(fifty)
    for (const r of first.names) expect(verifyNameRecord(r, r.name, dirOf).ok).toBe(true)
    expect(me.total()).toBe(50)
    const second = await h.list()
    expect(second).toEqual(first)
    await vi.waitFor(async () => expect(await writeBacks(h.service, 'landed')).toBe(50), { interval: 5 })
    await h.service.close()
    // Every record is kept signed: exactly what was served.
    const kept = await stored(dir)
    for (const r of first.names) expect(kept.get(r.name)).toEqual(r)

    const again = await home(dir, me.identity)
    expect(JSON.stringify(await again.list())).toBe(JSON.stringify(first))
    expect(me.total()).toBe(50)
    for (const n of fifty) expect(me.perName.get(n)).toBe(1)
  })

  it('a write landing between the signature and its write-back wins: its seq stays, the stale sig is not stored', async () => {
    const dir = await tmp()
    const me = countedNode()
    const w = wrapped(await openLmdbNameStore({ dir }))
    const h = await home(dir, me.identity, w.store)
    await bind(h, ['site.race'])
    const gate = deferred()
    w.ctl.gate = gate.promise
    const page = await h.list()
    expect(page.names[0]).toMatchObject({ name: 'site.race', seq: 1 })
    expect(w.calls).toHaveLength(1)
    // The write-back is held; a write of the name lands meanwhile (the same manifest again: only
    // the seq and signedAt tell the records apart).
    const m2 = page.names[0]!.manifestAddress!
    await expect(h.writer.setName('site.race', m2)).resolves.toMatchObject({ seq: 2 })
    gate.resolve()
    await expect(w.calls[0]!.result).resolves.toBe(0)
    await vi.waitFor(async () => expect(await writeBacks(h.service, 'stale')).toBe(1), { interval: 5 })
    expect(await writeBacks(h.service, 'landed')).toBe(0)
    const b = w.store.get('site.race')!
    expect(b.manifestAddress).toBe(m2)
    expect(b.record).toMatchObject({ seq: 2, manifestAddress: m2 })
    expect(b.record!.sig).toBeUndefined()
    // Served now: seq 2, verifying, and that one is written back.
    const next = await h.list()
    expect(next.names[0]).toMatchObject({ seq: 2, manifestAddress: m2 })
    expect(verifyNameRecord(next.names[0], 'site.race', staticNodeDirectory([me.node.known])).ok).toBe(true)
    await expect(w.calls[1]!.result).resolves.toBe(1)
    expect(w.store.get('site.race')!.record).toEqual(next.names[0])
  })

  it('a deleted name’s tombstone is written back signed once and served from the store after a restart', async () => {
    const dir = await tmp()
    const me = countedNode()
    const h = await home(dir, me.identity)
    await bind(h, ['gone.wb'])
    await h.writer.deleteName('gone.wb')
    expect(me.total()).toBe(0)
    const t = await h.peerAnswer('gone.wb')
    expect(t).toMatchObject({ status: 404, record: { name: 'gone.wb', seq: 2, manifestAddress: null } })
    expect(verifyNameRecord(t.record, 'gone.wb', staticNodeDirectory([me.node.known])).ok).toBe(true)
    await h.service.close()
    const store = await openLmdbNameStore({ dir })
    expect(store.tombstone('gone.wb')).toEqual(t.record)
    await store.close()
    const again = await home(dir, me.identity)
    expect(await again.peerAnswer('gone.wb')).toEqual(t)
    expect(me.perName.get('gone.wb')).toBe(1)
  })

  it('a failing write-back still answers verifying records, loses nothing stored, leaves writes ready, and the next serve retries it', async () => {
    const dir = await tmp()
    const me = countedNode()
    const w = wrapped(await openLmdbNameStore({ dir }))
    const h = await home(dir, me.identity, w.store)
    await bind(h, ['a.fault', 'b.fault'])
    const before = [...w.store.list('', undefined, 10)]
    w.ctl.fail = toDiskFault(Object.assign(new Error('no space left'), { code: 'ENOSPC' }), 'index') as Error
    const page = await h.list()
    for (const r of page.names) expect(verifyNameRecord(r, r.name, staticNodeDirectory([me.node.known])).ok).toBe(true)
    await expect(w.calls[0]!.result).rejects.toMatchObject({ code: 'NotReady' })
    await vi.waitFor(async () => expect(await writeBacks(h.service, 'failed')).toBe(2), { interval: 5 })
    expect(w.store.list('', undefined, 10)).toEqual(before)
    expect(await h.readyz()).toMatchObject({ writeReady: true })
    // The disk takes writes again: the next serve (the signer's memory, no signature) writes back.
    w.ctl.fail = undefined
    expect(await h.list()).toEqual(page)
    await expect(w.calls[1]!.result).resolves.toBe(2)
    expect(me.total()).toBe(2)
    for (const r of page.names) expect(w.store.get(r.name)!.record).toEqual(r)
  })

  it('close() awaits the write-back in flight and drops those still waiting; nothing runs after', async () => {
    const dir = await tmp()
    const me = countedNode()
    const w = wrapped(await openLmdbNameStore({ dir }))
    const h = await home(dir, me.identity, w.store)
    await bind(h, ['a.close', 'b.close'])
    const gate = deferred()
    w.ctl.gate = gate.promise
    await h.list('prefix=a')
    // One write-back in flight (held); the second page's waits behind it.
    await h.list('prefix=b')
    expect(w.calls).toHaveLength(1)
    const closing = h.service.close()
    gate.resolve()
    await closing
    expect(w.calls).toHaveLength(1)
    // It landed while the store was still open.
    expect(w.ctl.storeOpenAtLanding).toEqual([true])
    await expect(w.calls[0]!.result).resolves.toBe(1)
    const kept = await stored(dir)
    expect(kept.get('a.close')).toHaveProperty('sig')
    expect(kept.get('b.close')).not.toHaveProperty('sig')
  })
})

describe('NameStore.keepSigned', () => {
  const stores: Array<[string, () => Promise<NameStore>]> = [
    ['memory', () => Promise.resolve(createMemoryNameStore())],
    ['lmdb', async () => openLmdbNameStore({ dir: await tmp() })],
  ]
  const me = testNode()
  const addr = (c: string): Address => `b3:${c.repeat(64)}`
  const fields = (name: string, manifestAddress: Address | null, seq: number, signedAt: number) => ({ name, manifestAddress, seq, node: me.identity.id, signedAt })
  const bindTo = (s: NameStore, name: string, manifestAddress: Address, seq: number) =>
    s.put(name, undefined, () => ({ manifestAddress, kind: 'dir', updatedAt: seq, record: fields(name, manifestAddress, seq, seq) }))

  for (const [kind, open] of stores) {
    it(`${kind}: lands on the same fields only; a write queued before or after it wins`, async () => {
      const s = await open()
      closers.push(() => s.close())
      await bindTo(s, 'x.ks', addr('1'), 1)
      const sig1 = signNameRecord(me.identity, fields('x.ks', addr('1'), 1, 1))
      // A write queued before the write-back: it sees seq 2 and drops the stale record.
      const w2 = bindTo(s, 'x.ks', addr('2'), 2)
      const kept = s.keepSigned!([sig1])
      await w2
      await expect(kept).resolves.toBe(0)
      expect(s.get('x.ks')!.record).toEqual(fields('x.ks', addr('2'), 2, 2))
      // A write-back queued before a write: it lands, and the write replaces it whole.
      const sig2 = signNameRecord(me.identity, fields('x.ks', addr('2'), 2, 2))
      const kept2 = s.keepSigned!([sig2])
      const w3 = bindTo(s, 'x.ks', addr('3'), 3)
      await Promise.all([kept2, w3])
      expect(s.get('x.ks')!.record).toEqual(fields('x.ks', addr('3'), 3, 3))
      // A record already signed, or of another node, is left as it is.
      const sig3 = signNameRecord(me.identity, fields('x.ks', addr('3'), 3, 3))
      await expect(s.keepSigned!([sig3])).resolves.toBe(1)
      await expect(s.keepSigned!([sig3])).resolves.toBe(0)
      const other = testNode()
      await s.delete('x.ks', undefined, () => ({ ...fields('x.ks', null, 4, 4), node: other.identity.id }))
      await expect(s.keepSigned!([signNameRecord(me.identity, fields('x.ks', null, 4, 4))])).resolves.toBe(0)
      expect(s.tombstone('x.ks')).not.toHaveProperty('sig')
    })
  }
})

describe('SignatureWriteBack', () => {
  it('keeps one transaction in flight and at most WRITE_BACK_PENDING_MAX waiting; more are dropped and counted', async () => {
    const me = testNode()
    const gate = deferred()
    const batches: number[] = []
    const counts = new Map<WriteBackResult, number>()
    const wb = new SignatureWriteBack({
      store: {
        keepSigned: async (records) => {
          batches.push(records.length)
          await gate.promise
          return records.length
        },
      },
      paused: () => false,
      failed: () => undefined,
      counted: (result, n) => void counts.set(result, (counts.get(result) ?? 0) + n),
    })
    const rec = (i: number) => signNameRecord(me.identity, { name: `p${i}.wb`, manifestAddress: null, seq: 1, node: me.identity.id, signedAt: 1 })
    wb.keep(rec(0))
    await Promise.resolve()
    expect(batches).toEqual([1])
    for (let i = 1; i <= WRITE_BACK_PENDING_MAX + 5; i++) wb.keep(rec(i))
    expect(wb.pending).toBe(WRITE_BACK_PENDING_MAX)
    expect(counts.get('dropped')).toBe(5)
    expect(batches).toEqual([1])
    gate.resolve()
    await wb.idle()
    // The waiting ones went in batches of at most one listing page.
    expect(batches).toEqual([1, ...Array.from({ length: WRITE_BACK_PENDING_MAX / 1000 }, () => 1000)])
    expect(counts.get('landed')).toBe(WRITE_BACK_PENDING_MAX + 1)
    await wb.close()
    wb.keep(rec(0))
    expect(wb.pending).toBe(0)
  })
})
