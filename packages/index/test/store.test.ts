import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { open } from 'lmdb'
import { afterEach, describe, expect, it } from 'vitest'
import { ConflictError, isRonError } from '@ron/core'
import type { Address } from '@ron/core'
import { createIndexService, createMemoryNameStore, openLmdbNameStore, verifyNameRecord } from '../src/index.js'
import type { NameStore } from '../src/index.js'
import { addr, directory, manifestFor, setup, signed, testNode, tomb, type Env } from './helpers.js'

const dirs: string[] = []
let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'ron-index-'))
  dirs.push(d)
  return d
}

const rec = (a: Address) => ({ manifestAddress: a, manifest: manifestFor(a), updatedAt: 1 })

type Op = { expected: 'any' | 'none' | number }

/**
 * Concurrent writers, each writing its own address with a random expectation: the successful
 * writes must form one chain (each success saw exactly the previous success's binding), the final
 * binding is the end of the chain, and every failure is a Conflict naming a binding other than the
 * one it expected.
 */
async function casProperty(open: () => Promise<NameStore>): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.record({ expected: fc.oneof(fc.constant('any' as const), fc.constant('none' as const), fc.nat(12)) }), { minLength: 1, maxLength: 12 }), async (ops: Op[]) => {
      const store = await open()
      try {
        const addrs = ops.map((_, i) => addr(`w${i}`))
        const results = await Promise.allSettled(
          ops.map((op, i) => {
            const expected = op.expected === 'any' ? undefined : op.expected === 'none' ? null : addr(`w${op.expected}`)
            return store.put('n.x', expected, () => rec(addrs[i]!))
          }),
        )
        const byPrevious = new Map<Address | null, Address>()
        let successes = 0
        results.forEach((r, i) => {
          if (r.status === 'fulfilled') {
            successes++
            expect(byPrevious.has(r.value.previous)).toBe(false)
            byPrevious.set(r.value.previous, addrs[i]!)
          } else {
            expect(r.reason).toBeInstanceOf(ConflictError)
            const d = (r.reason as ConflictError).details
            expect(d.actual).not.toBe(d.expected)
          }
        })
        let cur: Address | null = null
        let seen = 0
        while (byPrevious.has(cur)) {
          cur = byPrevious.get(cur)!
          seen++
        }
        expect(seen).toBe(successes)
        expect(store.get('n.x')?.manifestAddress ?? null).toBe(cur)
      } finally {
        await store.close()
      }
    }),
    { numRuns: 40, seed: 42 },
  )
}

describe('name stores', () => {
  it('memory: CAS under concurrent writers is linearizable (property)', async () => {
    await casProperty(() => Promise.resolve(createMemoryNameStore()))
  })

  it('LMDB: CAS under concurrent writers is linearizable (property)', async () => {
    let n = 0
    const base = await tmp()
    await casProperty(() => openLmdbNameStore({ dir: join(base, `db${n++}`) }))
  })

  it('LMDB: a write read ahead with stateForWrite sees a write that came between', async () => {
    const s = await openLmdbNameStore({ dir: await tmp() })
    await s.put('a.b', null, () => rec(addr(1)))
    const ahead = s.stateForWrite!('a.b')
    expect(ahead.binding?.manifestAddress).toBe(addr(1))
    // Same bytes in the transaction: the read-ahead value is what the write sees.
    const seen: unknown[] = []
    await s.put('a.b', addr(1), (st) => (seen.push(st.binding), rec(addr(2))))
    expect(seen[0]).toBe(ahead.binding)
    // Another write between the read ahead and the write: the transaction sees it, not the read.
    s.stateForWrite!('a.b')
    await s.put('a.b', addr(2), () => rec(addr(3)))
    await s.put('a.b', undefined, (st) => (seen.push(st.binding), rec(addr(4))))
    expect((seen[1] as { manifestAddress: string }).manifestAddress).toBe(addr(3))
    await expect(s.put('a.b', addr(2), () => rec(addr(5)))).rejects.toMatchObject({ code: 'Conflict' })
    expect(s.get('a.b')?.manifestAddress).toBe(addr(4))
    await s.close()
  })

  it('LMDB: bindings survive a reopen; deletes too', async () => {
    const dir = await tmp()
    let s = await openLmdbNameStore({ dir })
    await s.put('a.b', null, () => rec(addr(1)))
    await s.put('c.d', undefined, () => rec(addr(2)))
    await s.delete('c.d', addr(2), () => tomb('c.d'))
    await s.close()
    await s.close() // idempotent
    s = await openLmdbNameStore({ dir })
    expect(s.get('a.b')).toMatchObject({ manifestAddress: addr(1), manifest: manifestFor(addr(1)) })
    expect(s.get('c.d')).toBeUndefined()
    expect(s.count()).toBe(1)
    await s.close()
  })

  it('both stores: a name has a binding or a tombstone, never both; a write sees the tombstone it binds over, and removes it', async () => {
    const dir = await tmp()
    for (const open of [() => Promise.resolve(createMemoryNameStore()), () => openLmdbNameStore({ dir })]) {
      let s = await open()
      await s.put('t.b', null, () => rec(addr(1)))
      expect(s.stateForWrite?.('t.b') ?? { binding: s.get('t.b'), tombstone: s.tombstone('t.b') }).toMatchObject({ binding: { manifestAddress: addr(1) }, tombstone: undefined })
      await s.delete('t.b', undefined, () => tomb('t.b', 2))
      expect(s.get('t.b')).toBeUndefined()
      expect(s.stateForWrite?.('t.b') ?? { binding: s.get('t.b'), tombstone: s.tombstone('t.b') }).toMatchObject({ binding: undefined, tombstone: { seq: 2 } })
      const seen: unknown[] = []
      await s.put('t.b', null, (st) => (seen.push(st.tombstone), rec(addr(3))))
      expect(seen).toEqual([tomb('t.b', 2)])
      expect(s.tombstone('t.b')).toBeUndefined()
      // A write over a binding sees no tombstone.
      await s.put('t.b', undefined, (st) => (seen.push(st.tombstone), rec(addr(4))))
      expect(seen[1]).toBeUndefined()
      if (s.durable) {
        await s.close()
        s = await open()
        expect(s.tombstone('t.b')).toBeUndefined()
        expect(s.get('t.b')?.manifestAddress).toBe(addr(4))
      }
      await s.close()
    }
  })

  it('LMDB: bindings earlier versions wrote as msgpack records still read and verify; new ones are plain maps', async () => {
    const dir = await tmp()
    const me = testNode()
    const before = { ...rec(addr(1)), manifestText: JSON.stringify(manifestFor(addr(1))), record: signed(me, 'old.name', addr(1)) }
    // What earlier versions wrote: lmdb's default msgpack, records with their field lists inline.
    const earlier = open<unknown, string>({ path: dir, name: 'names', compression: false, encoding: 'msgpack' })
    const isRecord = (b: Buffer | undefined): boolean => b !== undefined && b[0] === 0xd4 && b[1] === 0x72
    await earlier.put('old.name', before)
    expect(isRecord(earlier.getBinary('old.name'))).toBe(true)
    await earlier.close()
    let s = await openLmdbNameStore({ dir })
    expect(s.get('old.name')).toEqual(before)
    expect(verifyNameRecord(s.get('old.name')?.record, 'old.name', directory(me))).toMatchObject({ ok: true })
    await s.put('new.name', null, () => ({ ...rec(addr(2)), record: signed(me, 'new.name', addr(2)) }))
    await s.put('old.name', addr(1), ({ binding }) => ({ ...binding!, updatedAt: 2, record: signed(me, 'old.name', addr(1), 2) }))
    await s.close()
    const raw = open<Buffer, string>({ path: dir, name: 'names', compression: false, encoding: 'binary' })
    // A msgpack map (map16: 0xde), no inline record definition.
    for (const name of ['new.name', 'old.name']) expect([raw.getBinary(name)?.[0], isRecord(raw.getBinary(name))]).toEqual([0xde, false])
    await raw.close()
    s = await openLmdbNameStore({ dir })
    expect(s.get('old.name')).toEqual({ ...before, updatedAt: 2, record: signed(me, 'old.name', addr(1), 2) })
    expect(verifyNameRecord(s.get('new.name')?.record, 'new.name', directory(me))).toMatchObject({ ok: true, record: { seq: 1 } })
    await s.close()
  })

  it('LMDB: a write decides on the stored bytes, not on the binding it kept from its last write', async () => {
    const dir = await tmp()
    const me = testNode()
    const s = await openLmdbNameStore({ dir })
    try {
      await s.put('x.name', null, () => ({ ...rec(addr(1)), record: signed(me, 'x.name', addr(1), 1) }))
      expect(s.stateForWrite?.('x.name').binding?.manifestAddress).toBe(addr(1))
      // Another handle on the same directory rewrites the binding behind the store's back.
      const other = open<unknown, string>({ path: dir, name: 'names', compression: false, encoding: 'msgpack', encoder: { useRecords: false } })
      await other.put('x.name', { ...rec(addr(2)), record: signed(me, 'x.name', addr(2), 5) })
      expect(s.stateForWrite?.('x.name').binding).toMatchObject({ manifestAddress: addr(2), record: { seq: 5 } })
      await expect(s.put('x.name', addr(1), () => ({ ...rec(addr(3)) }))).rejects.toBeInstanceOf(ConflictError)
      let seen: number | undefined
      await s.put('x.name', addr(2), ({ binding }) => {
        seen = binding?.record?.seq
        return { ...rec(addr(3)), record: signed(me, 'x.name', addr(3), 6) }
      })
      expect(seen).toBe(5)
      // What the store wrote itself is what it reads back, kept or decoded.
      expect(s.stateForWrite?.('x.name').binding).toEqual(s.get('x.name'))
      expect(other.get('x.name')).toMatchObject({ manifestAddress: addr(3), record: { seq: 6 } })
    } finally {
      await s.close()
    }
  })

  it('a durable index keeps its names across a restart', async () => {
    const dir = await tmp()
    env = await setup({ amnesia: false, dataDir: dir })
    expect(env.index.durable).toBe(true)
    const m = await env.put(manifestFor(7))
    await env.client.setName('keep.me', m)
    await env.index.close()
    const again = await createIndexService({ dataDir: dir, storage: 'storage' }, env.transport)
    try {
      await expect(again.resolve('keep.me')).resolves.toMatchObject({ manifestAddress: m, source: 'local' })
    } finally {
      await again.close()
    }
  })

  it('amnesia mode writes nothing to disk, even with a data directory configured', async () => {
    const base = await tmp()
    const dir = join(base, 'index-data')
    env = await setup({ amnesia: true, dataDir: dir })
    expect(env.index.durable).toBe(false)
    const m = await env.put(manifestFor(8))
    await env.client.setName('gone.soon', m)
    await env.announcer('n1').announce({ address: addr(8), node: 'n1', endpoint: 'http://n1', ttlSec: 60 })
    await expect(env.anon.resolve('gone.soon')).resolves.toMatchObject({ manifestAddress: m })
    await env.index.close()
    await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await readdir(base)).toEqual([])
  })

  it('both stores: close() is idempotent and every later call fails with Closed', async () => {
    const stores = [createMemoryNameStore(), await openLmdbNameStore({ dir: await tmp() })]
    for (const s of stores) {
      await s.put('a.b', null, () => rec(addr(1)))
      await s.close()
      await s.close()
      expect(() => s.get('a.b')).toThrow(expect.objectContaining({ code: 'Closed' }))
      expect(() => s.count()).toThrow(expect.objectContaining({ code: 'Closed' }))
      await expect(s.put('a.b', undefined, () => rec(addr(2)))).rejects.toMatchObject({ code: 'Closed' })
      await expect(s.delete('a.b', undefined, () => tomb('a.b'))).rejects.toMatchObject({ code: 'Closed' })
    }
  })

  it('concurrent create-only writes over HTTP: exactly one wins', async () => {
    env = await setup()
    const ms = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => env!.put(manifestFor(i))))
    const out = await Promise.allSettled(ms.map((m) => env!.client.setName('race.x', m, { expectedPrevious: null })))
    expect(out.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    expect(out.filter((r) => r.status === 'rejected' && isRonError(r.reason, 'Conflict'))).toHaveLength(5)
  })
})
