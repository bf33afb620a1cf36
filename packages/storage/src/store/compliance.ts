/**
 * The shared BlobStore compliance suite: every backend runs exactly these tests (the way libp2p
 * runs one suite against every transport). A custom backend can run it too, from
 * `@ron/storage/testing`, inside a vitest file:
 *
 * ```ts
 * import { blobStoreCompliance } from '@ron/storage/testing'
 * blobStoreCompliance('my backend', async ({ chunkSize }) => {
 *   const store = await createMyStore({ chunkSize })
 *   return { store, corruptData: …, corruptTable: …, cleanup: async () => {} }
 * })
 * ```
 *
 * @module
 */
import { CanceledError, addressOf, isRonError } from '@ron/core'
import { abortListenerCount } from '@ron/core/testing'
import type { Address } from '@ron/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { BlobStore } from './types.js'
import { READ_BLOCK_BYTES } from './verified-read.js'
import { bytes, chunked, collect, concat, listAll, once, readUntilError, rejection, rng } from './compliance-helpers.js'

/** What a backend under test provides. */
export interface StoreHarness {
  store: BlobStore
  /** Flips a bit in byte `offset` of the object's stored bytes. */
  corruptData(address: Address, offset: number): Promise<void>
  /** Flips a bit in byte `offset` of the object's stored chunk table. */
  corruptTable(address: Address, offset: number): Promise<void>
  /** Releases everything (temp dirs). The suite closes the store itself first. */
  cleanup(): Promise<void>
}

/** A backend factory; `chunkSize` undefined means the backend default. */
export type MakeStore = (opts: { chunkSize?: number }) => Promise<StoreHarness>

function expectCode(e: unknown, code: string): void {
  expect(isRonError(e), String(e)).toBe(true)
  expect((e as { code: string }).code).toBe(code)
}

/** Registers the compliance suite for one backend. */
export function blobStoreCompliance(name: string, make: MakeStore): void {
  describe(`BlobStore compliance: ${name}`, () => {
    let h: StoreHarness
    let store: BlobStore
    const CS = 1024 // small chunks keep multi-chunk cases fast; one group below uses the default

    beforeEach(async () => {
      h = await make({ chunkSize: CS })
      store = h.store
    })
    afterEach(async () => {
      await store.close()
      await h.cleanup()
    })

    it('uses a 64 KiB chunk size by default and round-trips 0, 1, chunk-1, chunk, chunk+1 bytes and several MiB', async () => {
      const d = await make({})
      try {
        expect(d.store.chunkSize).toBe(65536)
        const cs = d.store.chunkSize
        for (const [i, n] of [0, 1, cs - 1, cs, cs + 1, 5 * 1024 * 1024 + 3].entries()) {
          const data = bytes(n, i + 1)
          const res = await d.store.put(chunked(data, 100 + i, 3 * cs))
          expect(res).toEqual({ address: addressOf(data), size: n, created: true })
          expect(await d.store.stat(res.address)).toEqual({ size: n })
          const r = await d.store.open(res.address)
          expect(r).toBeDefined()
          expect(r!.size).toBe(n)
          const got = await collect(r!.read())
          await r!.close()
          expect(got.data.length).toBe(n)
          expect(Buffer.from(got.data).equals(Buffer.from(data))).toBe(true)
          // Verified streaming yields whole chunks, at most one read block at a time.
          for (const [k, p] of got.pieces.entries()) {
            expect(p).toBeLessThanOrEqual(READ_BLOCK_BYTES)
            if (k < got.pieces.length - 1) expect(p % cs).toBe(0)
          }
        }
      } finally {
        await d.store.close()
        await d.cleanup()
      }
    })

    it('hashes the same address whatever the chunking of the input', async () => {
      const data = bytes(10 * CS + 123, 9)
      const want = addressOf(data)
      for (const seed of [1, 2, 3]) {
        const res = await store.put(chunked(data, seed, seed === 1 ? 1 : 5 * CS))
        expect(res.address).toBe(want)
        expect(res.created).toBe(true) // deleted after each round
        const r = await store.open(want)
        expect(Buffer.from((await collect(r!.read())).data).equals(Buffer.from(data))).toBe(true)
        await r!.close()
        await store.delete(want)
      }
    })

    it('stores pieces handed over (ownedPieces) intact whatever their sizes, and addresses them the same', async () => {
      // Pieces of one byte, of a few chunks, and of several write blocks (256 KiB) at a time; and
      // objects of less than one chunk and of exactly one (their address is their chunk's hash).
      const data = bytes(700 * 1024 + 5, 31)
      const cases = [[1, 5 * CS + 7, 1], [2, data.length, 3 * CS], [3, data.length, 600 * 1024], [4, CS - 24, 7], [5, CS, CS], [6, CS + 1, CS]] as const
      for (const [seed, size, maxPiece] of cases) {
        const expected = data.subarray(0, size)
        const res = await store.put(chunked(expected, seed, maxPiece), { ownedPieces: true })
        expect(res).toEqual({ address: addressOf(expected), size, created: true })
        const r = await store.open(res.address)
        expect(Buffer.from((await collect(r!.read())).data).equals(Buffer.from(expected))).toBe(true)
        await r!.close()
        expect(await store.verify(res.address)).toEqual({ ok: true, size, badChunks: [] })
        await store.delete(res.address)
      }
      // The limits hold the same: maxBytes stops the put and keeps nothing; expect is checked.
      expectCode(await rejection(store.put(chunked(data, 4, 50_000), { ownedPieces: true, maxBytes: 300 * 1024 })), 'OverLimit')
      expectCode(await rejection(store.put(chunked(data, 5, 50_000), { ownedPieces: true, expect: addressOf(bytes(10, 1)) })), 'IntegrityFailed')
      expect(await listAll(store.list())).toEqual([])
    })

    it('put is idempotent: an existing object resolves created false', async () => {
      const data = bytes(3000, 4)
      expect((await store.put(once(data))).created).toBe(true)
      expect((await store.put(once(data))).created).toBe(false)
      expect(await listAll(store.list())).toEqual([addressOf(data)])
    })

    it('heals a corrupt copy when the right bytes are put again, reporting created false', async () => {
      const data = bytes(4 * CS + 7, 21)
      const { address } = await store.put(once(data))
      await h.corruptData(address, CS + 5)
      expect(await store.verify(address)).toMatchObject({ ok: false, badChunks: [1] })
      expect(await store.put(chunked(data, 4, CS))).toEqual({ address, size: data.length, created: false })
      expect(await store.verify(address)).toEqual({ ok: true, size: data.length, badChunks: [] })
      const r = (await store.open(address))!
      expect(Buffer.from((await collect(r.read())).data).equals(Buffer.from(data))).toBe(true)
      await r.close()
    })

    it('heals a corrupt chunk table when the right bytes are put again, reporting created true', async () => {
      const data = bytes(2 * CS, 22)
      const { address } = await store.put(once(data))
      await h.corruptTable(address, 30)
      expectCode(await rejection(store.open(address)), 'IntegrityFailed')
      expect((await store.put(once(data))).created).toBe(true) // no usable copy was there
      expect(await store.verify(address)).toEqual({ ok: true, size: data.length, badChunks: [] })
    })

    it('calls beforeCommit once with the address and size before the object becomes visible', async () => {
      const data = bytes(3 * CS + 3, 23)
      const seen: Array<[string, number, unknown]> = []
      const res = await store.put(chunked(data, 5, CS), {
        beforeCommit: async (address, size) => {
          seen.push([address, size, await store.stat(address)])
        },
      })
      expect(res).toEqual({ address: addressOf(data), size: data.length, created: true })
      expect(seen).toEqual([[addressOf(data), data.length, undefined]])
    })

    it('keeps nothing when beforeCommit throws, and never calls it for a failed put', async () => {
      const data = bytes(2 * CS, 24)
      const boom = new Error('refused')
      expect(await rejection(store.put(once(data), { beforeCommit: () => Promise.reject(boom) }))).toBe(boom)
      expect(await store.stat(addressOf(data))).toBeUndefined()
      expect(await listAll(store.list())).toEqual([])
      let called = 0
      const wrong = addressOf(bytes(1, 1))
      expectCode(await rejection(store.put(once(data), { expect: wrong, beforeCommit: () => void called++ })), 'IntegrityFailed')
      expectCode(await rejection(store.put(once(data), { maxBytes: CS, beforeCommit: () => void called++ })), 'OverLimit')
      expect(called).toBe(0)
    })

    it('keeps nothing when the put is cancelled while beforeCommit runs (e.g. waiting behind a delete)', async () => {
      const data = bytes(2 * CS + 1, 25)
      const ac = new AbortController()
      const e = await rejection(
        store.put(once(data), {
          signal: ac.signal,
          beforeCommit: () => {
            ac.abort(new CanceledError('client went away'))
            return Promise.resolve()
          },
        }),
      )
      expectCode(e, 'Canceled')
      expect(await store.stat(addressOf(data))).toBeUndefined()
      expect(await listAll(store.list())).toEqual([])
    })

    it("a put detaches from the caller's signal when it ends, whether it succeeded or failed", async () => {
      const ac = new AbortController()
      for (let i = 0; i < 5; i++) await store.put(once(bytes(1000 + i, 40 + i)), { signal: ac.signal })
      expectCode(await rejection(store.put(once(bytes(2 * CS, 50)), { signal: ac.signal, maxBytes: CS })), 'OverLimit')
      expect(abortListenerCount(ac.signal)).toBe(0)
    })

    it('replace writes a new copy over an existing object', async () => {
      const data = bytes(3000, 4)
      await store.put(once(data))
      const res = await store.put(once(data), { replace: true })
      expect(res.created).toBe(true)
      expect((await store.verify(res.address)).ok).toBe(true)
    })

    it('reads exactly the requested bytes of ranges across chunk boundaries', async () => {
      const size = 4 * CS + 100
      const data = bytes(size, 5)
      const { address } = await store.put(chunked(data, 3, 2 * CS))
      const r = (await store.open(address))!
      const r0 = rng(42)
      const cases: Array<[number, number]> = [
        [0, 0],
        [size - 1, size - 1],
        [0, size - 1],
        [CS - 1, CS],
        [CS, CS],
        [CS - 1, 2 * CS],
        [CS + 1, 3 * CS - 1],
        [4 * CS, size - 1],
        [1, size - 2],
      ]
      for (let k = 0; k < 40; k++) {
        const a = r0(0, size - 1)
        cases.push([a, r0(a, size - 1)])
      }
      for (const [start, end] of cases) {
        const got = await collect(r.read({ start, end }))
        expect(Buffer.from(got.data).equals(Buffer.from(data.subarray(start, end + 1))), `${start}-${end}`).toBe(true)
      }
      for (const bad of [
        { start: size, end: size },
        { start: 0, end: size },
        { start: 5, end: 4 },
        { start: -1, end: 3 },
      ]) {
        expectCode((await readUntilError(r.read(bad))).error, 'RangeNotSatisfiable')
      }
      await r.close()
    })

    it('reads ranges spanning several read blocks exactly, and stops at a corrupt chunk in a later block', async () => {
      const size = 3 * READ_BLOCK_BYTES + 5 * CS + 7
      const data = bytes(size, 6)
      const { address } = await store.put(chunked(data, 4, 70_000))
      const r = (await store.open(address))!
      const r0 = rng(43)
      const B = READ_BLOCK_BYTES
      const cases: Array<[number, number]> = [
        [0, size - 1],
        [B - 1, B],
        [B - CS - 3, 2 * B + CS + 3],
        [2 * B, 3 * B - 1],
        [3 * B + 1, size - 1],
      ]
      for (let k = 0; k < 12; k++) {
        const a = r0(0, size - 1)
        cases.push([a, r0(a, size - 1)])
      }
      for (const [start, end] of cases) {
        const got = await collect(r.read({ start, end }))
        expect(Buffer.from(got.data).equals(Buffer.from(data.subarray(start, end + 1))), `${start}-${end}`).toBe(true)
      }
      const badChunk = Math.floor((2 * B + 3 * CS) / CS)
      await h.corruptData(address, 2 * B + 3 * CS + 11)
      const whole = await readUntilError(r.read())
      expectCode(whole.error, 'IntegrityFailed')
      expect((whole.error as { details: unknown }).details).toEqual({ address, chunk: badChunk })
      // Every verified byte before the bad chunk was served, and nothing of it.
      expect(whole.data.length).toBe(badChunk * CS)
      expect(Buffer.from(whole.data).equals(Buffer.from(data.subarray(0, badChunk * CS)))).toBe(true)
      const tail = await collect(r.read({ start: (badChunk + 1) * CS, end: size - 1 }))
      expect(Buffer.from(tail.data).equals(Buffer.from(data.subarray((badChunk + 1) * CS)))).toBe(true)
      await r.close()
      expect(await store.verify(address)).toEqual({ ok: false, size, badChunks: [badChunk] })
    })

    it('serves concurrent reads of one reader independently', async () => {
      const data = bytes(6 * CS, 6)
      const { address } = await store.put(once(data))
      const r = (await store.open(address))!
      const [a, b] = await Promise.all([collect(r.read()), collect(r.read({ start: 10, end: 5 * CS }))])
      expect(Buffer.from(a.data).equals(Buffer.from(data))).toBe(true)
      expect(Buffer.from(b.data).equals(Buffer.from(data.subarray(10, 5 * CS + 1)))).toBe(true)
      await r.close()
    })

    it('keeps an object whose expected address matches', async () => {
      const data = bytes(2 * CS, 8)
      const res = await store.put(chunked(data), { expect: addressOf(data) })
      expect(res.created).toBe(true)
    })

    it('rejects an expect-address mismatch with IntegrityFailed and keeps nothing', async () => {
      const data = bytes(2 * CS, 8)
      const other = addressOf(bytes(10, 1))
      const e = await rejection(store.put(chunked(data), { expect: other }))
      expectCode(e, 'IntegrityFailed')
      expect((e as { details: unknown }).details).toEqual({ expected: other, actual: addressOf(data) })
      expect(await store.stat(addressOf(data))).toBeUndefined()
      expect(await store.open(addressOf(data))).toBeUndefined()
      expect(await listAll(store.list())).toEqual([])
    })

    it('rejects content over maxBytes with OverLimit and keeps nothing, but accepts exactly maxBytes', async () => {
      const data = bytes(5 * CS, 2)
      let pulled = 0
      async function* counting(): AsyncGenerator<Uint8Array> {
        for await (const p of chunked(data, 1, 500)) {
          pulled += p.length
          yield p
        }
      }
      const e = await rejection(store.put(counting(), { maxBytes: 2 * CS }))
      expectCode(e, 'OverLimit')
      expect((e as { details: unknown }).details).toEqual({ limit: 2 * CS })
      expect(pulled).toBeLessThan(2 * CS + 500) // stopped as soon as the limit was crossed
      expect(await listAll(store.list())).toEqual([])
      expect((await store.put(once(data), { maxBytes: data.length })).size).toBe(data.length)
    })

    it('cancels a put whose signal aborts mid-stream and keeps nothing', async () => {
      const ac = new AbortController()
      let released = false
      async function* stalls(): AsyncGenerator<Uint8Array> {
        try {
          yield bytes(CS, 1)
          ac.abort()
          yield bytes(CS, 2)
          await new Promise(() => undefined) // a client that stops sending
        } finally {
          released = true
        }
      }
      const e = await rejection(store.put(stalls(), { signal: ac.signal }))
      expectCode(e, 'Canceled')
      expect(released).toBe(true)
      expect(await listAll(store.list())).toEqual([])
    })

    it('cancels a put stalled on a silent source when the signal aborts', async () => {
      const ac = new AbortController()
      async function* silent(): AsyncGenerator<Uint8Array> {
        yield bytes(CS, 1)
        await new Promise(() => undefined)
      }
      const p = store.put(silent(), { signal: ac.signal })
      await Promise.resolve()
      ac.abort()
      expectCode(await rejection(p), 'Canceled')
      expectCode(await rejection(store.put(once(bytes(1)), { signal: ac.signal })), 'Canceled')
      expect(await listAll(store.list())).toEqual([])
    })

    it('lets concurrent puts of the same content all succeed with exactly one created', async () => {
      const data = bytes(7 * CS + 5, 11)
      const results = await Promise.all([1, 2, 3, 4, 5].map((s) => store.put(chunked(data, s, 2 * CS))))
      expect(new Set(results.map((r) => r.address))).toEqual(new Set([addressOf(data)]))
      expect(results.filter((r) => r.created)).toHaveLength(1)
      expect((await store.verify(addressOf(data))).ok).toBe(true)
    })

    it('deletes an object and reports whether it existed', async () => {
      const { address } = await store.put(once(bytes(100)))
      expect(await store.delete(address)).toBe(true)
      expect(await store.delete(address)).toBe(false)
      expect(await store.stat(address)).toBeUndefined()
      expect(await store.open(address)).toBeUndefined()
      expect((await store.verify(address)).ok).toBe(false)
      expect((await store.put(once(bytes(100)))).created).toBe(true)
    })

    it('lists every stored address and stops when the signal aborts', async () => {
      const addrs: Address[] = []
      for (let i = 0; i < 5; i++) addrs.push((await store.put(once(bytes(10 + i, i)))).address)
      expect(await listAll(store.list())).toEqual([...addrs].sort())
      const ac = new AbortController()
      const seen: Address[] = []
      const e = await rejection(
        (async () => {
          for await (const a of store.list(ac.signal)) {
            seen.push(a)
            ac.abort()
          }
        })(),
      )
      expectCode(e, 'Canceled')
      expect(seen).toHaveLength(1)
    })

    it('verify reports ok for an intact object and ok false for a missing one', async () => {
      const data = bytes(3 * CS + 1, 3)
      const { address } = await store.put(once(data))
      expect(await store.verify(address)).toEqual({ ok: true, size: data.length, badChunks: [] })
      const missing = addressOf(bytes(5, 99))
      expect(await store.verify(missing)).toMatchObject({ ok: false, badChunks: [] })
    })

    it('stops a read at a corrupt chunk with IntegrityFailed, yielding none of its bytes', async () => {
      const data = bytes(4 * CS, 12)
      const { address } = await store.put(once(data))
      await h.corruptData(address, 2 * CS + 17)
      const r = (await store.open(address))!
      const { data: got, error } = await readUntilError(r.read())
      expectCode(error, 'IntegrityFailed')
      expect((error as { details: unknown }).details).toEqual({ address, chunk: 2 })
      expect(got.length).toBeLessThanOrEqual(2 * CS) // nothing of chunk 2
      expect(Buffer.from(got).equals(Buffer.from(data.subarray(0, got.length)))).toBe(true)
      // A range inside the corrupt chunk fails before yielding anything; one beyond it is served.
      const inside = await readUntilError(r.read({ start: 2 * CS + 100, end: 2 * CS + 200 }))
      expectCode(inside.error, 'IntegrityFailed')
      expect(inside.data.length).toBe(0)
      const after = await collect(r.read({ start: 3 * CS, end: 4 * CS - 1 }))
      expect(Buffer.from(after.data).equals(Buffer.from(data.subarray(3 * CS)))).toBe(true)
      await r.close()
      expect(await store.verify(address)).toEqual({ ok: false, size: data.length, badChunks: [2] })
    })

    it('fails closed on a corrupt chunk table: open throws IntegrityFailed and verify is not ok', async () => {
      const data = bytes(2 * CS, 13)
      const { address } = await store.put(once(data))
      for (const offset of [0, 9, 30, 60, 56 + 32 + 3]) {
        await h.corruptTable(address, offset)
        const e = await rejection(store.open(address))
        expectCode(e, 'IntegrityFailed')
        expect((e as { details: { address: string } }).details.address).toBe(address)
        expect((await store.verify(address)).ok).toBe(false)
        await h.corruptTable(address, offset) // flip back
        expect((await store.verify(address)).ok).toBe(true)
      }
    })

    it('stops a read when its signal aborts between blocks', async () => {
      const data = bytes(2 * READ_BLOCK_BYTES + 5 * CS, 14)
      const { address } = await store.put(once(data))
      const r = (await store.open(address))!
      const ac = new AbortController()
      let n = 0
      const e = await rejection(
        (async () => {
          for await (const p of r.read(undefined, ac.signal)) {
            n += p.length
            ac.abort()
          }
        })(),
      )
      expectCode(e, 'Canceled')
      expect(n).toBe(READ_BLOCK_BYTES)
      await r.close()
    })

    it('lets a consumer stop early and close the reader', async () => {
      const data = bytes(4 * CS, 15)
      const { address } = await store.put(once(data))
      const r = (await store.open(address))!
      for await (const p of r.read()) {
        expect(p.length).toBe(4 * CS)
        break
      }
      await r.close()
      await r.close()
      expectCode((await readUntilError(r.read())).error, 'Closed')
    })

    it('rejects calls after close with Closed, and close is idempotent', async () => {
      const { address } = await store.put(once(bytes(10)))
      const r = (await store.open(address))!
      await store.close()
      await store.close()
      expectCode(await rejection(store.put(once(bytes(1)))), 'Closed')
      expectCode(await rejection(store.open(address)), 'Closed')
      expectCode(await rejection(store.stat(address)), 'Closed')
      expectCode(await rejection(store.delete(address)), 'Closed')
      expectCode(await rejection(store.verify(address)), 'Closed')
      expectCode(await rejection(listAll(store.list())), 'Closed')
      expectCode((await readUntilError(r.read())).error, 'Closed')
      expect(await store.probe()).toMatchObject({ writable: false, reason: 'closed' })
    })

    it('rejects malformed addresses with Malformed, never touching anything outside the store', async () => {
      for (const bad of ['b3:../../etc/passwd', 'b3:' + 'A'.repeat(64), 'nope', `b3:${'0'.repeat(63)}`]) {
        const a = bad as Address
        const calls: Array<() => Promise<unknown>> = [() => store.open(a), () => store.stat(a), () => store.delete(a), () => store.verify(a)]
        for (const call of calls) {
          expectCode(await rejection(call()), 'Malformed') // a rejection, never a synchronous throw
        }
      }
    })

    it('probe reports a fresh store writable', async () => {
      expect(await store.probe()).toMatchObject({ writable: true })
    })

    it('rejects a source that yields something other than bytes with Malformed', async () => {
      async function* bad(): AsyncGenerator<Uint8Array> {
        yield concat([bytes(3)])
        await Promise.resolve()
        yield 'text' as unknown as Uint8Array
      }
      expectCode(await rejection(store.put(bad())), 'Malformed')
      expect(await listAll(store.list())).toEqual([])
    })
  })
}
