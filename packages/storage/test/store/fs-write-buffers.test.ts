/**
 * Write buffers reused across puts (fewer fresh ArrayBuffers per upload): a reused buffer never
 * lets an earlier upload's bytes into a later object, a buffer a write may still use is never
 * handed out again, the pool is bounded, and the store drops it on close.
 */
import { mkdtemp, open, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blake3, toAddress } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { GatherWriter, PipelinedWriter, WriteBufferPool, writevAll } from '../../src/store/fs-io.js'
import type { FileHandle } from 'node:fs/promises'
import { createFsStore } from '../../src/store/index.js'
import { internalsOf } from '../../src/store/internals.js'
import { bytes, chunked, readAll } from './helpers.js'

const CAP = PipelinedWriter.CAPACITY

describe('write buffer pool', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-fs-wbuf-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  /** Writes `data` in 10 000-byte pieces through a writer on `pool` into `name`; returns the writer. */
  async function writeFileThrough(pool: WriteBufferPool, name: string, data: Uint8Array): Promise<PipelinedWriter> {
    const fh = await open(join(dir, name), 'wx')
    const w = new PipelinedWriter(fh, pool)
    try {
      for (let off = 0; off < data.length; off += 10_000) await w.write(data.subarray(off, off + 10_000))
      await w.flush()
    } finally {
      await fh.close()
    }
    return w
  }

  it('hands both buffers back on release and the next writer reuses them, with no stale bytes', async () => {
    const pool = new WriteBufferPool(4)
    const first = bytes(3 * CAP + 12_345, 1)
    ;(await writeFileThrough(pool, 'a', first)).release()
    expect(pool.idle).toBe(2)
    const taken = [pool.take(), pool.take()]
    pool.give(taken[0]!)
    pool.give(taken[1]!)

    // Shorter than one buffer: what is left in the reused buffer from `first` must not be written.
    const second = bytes(CAP / 2 + 7, 2)
    const w = await writeFileThrough(pool, 'b', second)
    expect(pool.idle).toBe(1) // one buffer in use by the unreleased writer
    w.release()
    expect(pool.idle).toBe(2)
    const reused = [pool.take(), pool.take()]
    expect(reused.every((b) => taken.includes(b))).toBe(true)

    expect(Buffer.from(await readFile(join(dir, 'a'))).equals(Buffer.from(first))).toBe(true)
    expect(Buffer.from(await readFile(join(dir, 'b'))).equals(Buffer.from(second))).toBe(true)
  })

  it('does not pool a buffer while a write may still be using it, and takes no pieces after release', async () => {
    const pool = new WriteBufferPool(4)
    const fh = await open(join(dir, 'c'), 'wx')
    const w = new PipelinedWriter(fh, pool)
    // Exactly one buffer's worth: the write of the first buffer starts and is in flight.
    const pending = w.write(bytes(CAP, 3))
    await pending
    w.release()
    expect(pool.idle).toBe(0)
    expect(() => w.write(bytes(10, 4))).toThrow()
    await w.settle()
    await fh.close()
  })

  it('keeps at most its bound of idle buffers', () => {
    const pool = new WriteBufferPool(2)
    for (let i = 0; i < 5; i++) pool.give(Buffer.allocUnsafe(CAP))
    expect(pool.idle).toBe(2)
    pool.clear()
    expect(pool.idle).toBe(0)
    expect(pool.take().length).toBe(CAP) // empty pool: a fresh buffer
  })

  it('drops its idle buffers once unused for idleMs, not while puts keep using it, and leaves no timer after clear', async () => {
    const clock = new VirtualClock()
    const pool = new WriteBufferPool(4, { clock, idleMs: 1000 })
    const held = [pool.take(), pool.take(), pool.take()]
    for (const b of held) pool.give(b)
    expect(pool.idle).toBe(3)
    expect(clock.pending).toBe(1) // one timer, however many buffers came back

    // Still in use: a put at 600 ms pushes the release to 1600 ms.
    await clock.advance(600)
    pool.give(pool.take())
    await clock.advance(600)
    expect(pool.idle).toBe(3)
    await clock.advance(399)
    expect(pool.idle).toBe(3)
    await clock.advance(1)
    expect(pool.idle).toBe(0)
    expect(clock.pending).toBe(0) // nothing idle, nothing armed

    // After the quiet period a put allocates afresh; clear() cancels the armed timer.
    const fresh = pool.take()
    expect(held.includes(fresh)).toBe(false)
    pool.give(fresh)
    expect(clock.pending).toBe(1)
    pool.clear()
    expect(pool.idle).toBe(0)
    expect(clock.pending).toBe(0)
    // A buffer handed back after close (a late writer) is not kept and arms nothing.
    pool.give(pool.take())
    expect(pool.idle).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('does not arm a timer for a buffer it does not keep', async () => {
    const clock = new VirtualClock()
    const pool = new WriteBufferPool(0, { clock, idleMs: 1000 })
    pool.give(pool.take())
    expect(pool.idle).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('reuses the buffers across a store’s puts, sequential and concurrent, every object intact, and drops them on close', async () => {
    const store = await createFsStore({ dir, chunkSize: 64 * 1024 })
    const idle = (): number => internalsOf(store)!.writeBuffers!.idle
    const sizes = [3 * CAP + 5, 100, CAP - 1, 2 * CAP, 10_000, CAP + 1]
    const stored: [string, Uint8Array][] = []
    for (const [i, size] of sizes.entries()) {
      const data = bytes(size, 10 + i)
      stored.push([(await store.put(chunked(data, 7777))).address, data])
    }
    expect(idle()).toBe(2)
    const batch = Array.from({ length: 12 }, (_, i) => bytes(CAP + 1000 * i, 50 + i))
    const results = await Promise.all(batch.map((data) => store.put(chunked(data, 65_536))))
    results.forEach((r, i) => stored.push([r.address, batch[i]!]))
    expect(idle()).toBeGreaterThan(2)
    expect(idle()).toBeLessThanOrEqual(16)
    for (const [address, data] of stored) {
      expect(Buffer.from(await readAll(store, address as never)).equals(Buffer.from(data))).toBe(true)
    }
    await store.close()
    expect(idle()).toBe(0)
  })

  it('shows onBlock every byte once, in order, from its own buffers, and nothing taken after seal', async () => {
    const fh = await open(join(dir, 'd'), 'wx')
    const seen: Buffer[] = []
    const w = new PipelinedWriter(fh, new WriteBufferPool(4), (block) => {
      // A copy: the block is the writer's buffer, reused once written.
      seen.push(Buffer.from(block))
    })
    const data = bytes(2 * CAP + 33_333, 5)
    try {
      for (let off = 0; off < data.length; off += 10_000) await w.write(data.subarray(off, off + 10_000))
      expect(seen.map((b) => b.length)).toEqual([CAP, CAP]) // whole buffers, shown as they fill
      w.seal()
      await w.write(bytes(500, 6)) // the "trailer": written, not shown
      await w.flush()
    } finally {
      await fh.close()
    }
    expect(Buffer.concat(seen).equals(Buffer.from(data))).toBe(true)
    expect((await readFile(join(dir, 'd'))).length).toBe(data.length + 500)
  })

  it('stores and addresses the bytes as they were when taken, though the source reuses its buffer', async () => {
    const store = await createFsStore({ dir, chunkSize: 64 * 1024 })
    const parts = [bytes(CAP - 100, 20), bytes(150_000, 21), bytes(CAP + 7, 22), bytes(64 * 1024, 23)]
    const reused = Buffer.alloc(Math.max(...parts.map((p) => p.length)))
    // Every piece is yielded from the same buffer, which is overwritten (garbage first) once the
    // store has taken it: an implementation that kept a reference (writev of the caller's buffer)
    // or hashed later would store or address other bytes.
    async function* source(): AsyncGenerator<Uint8Array> {
      for (const p of parts) {
        reused.set(p)
        yield reused.subarray(0, p.length)
        reused.fill(0xee)
      }
    }
    const whole = Buffer.concat(parts)
    const { address, size } = await store.put(source())
    expect(size).toBe(whole.length)
    expect(address).toBe(toAddress(blake3(whole)))
    expect(Buffer.from(await readAll(store, address)).equals(whole)).toBe(true)
    await store.close()
  })

  it('gather writer: shows every piece once as it is taken (not after seal), writes them in order without copying, and takes no buffer from the pool', async () => {
    const fh = await open(join(dir, 'g'), 'wx')
    const seen: Uint8Array[] = []
    const w = new GatherWriter(fh, (piece) => seen.push(piece))
    const data = bytes(3 * CAP + 54_321, 7)
    const pieces: Uint8Array[] = []
    try {
      for (let off = 0; off < data.length; off += 70_000) {
        const p = data.slice(off, off + 70_000)
        pieces.push(p)
        await w.write(p)
      }
      w.seal()
      await w.write(bytes(300, 8)) // the "trailer": written, not shown
      await w.flush()
    } finally {
      w.release()
      await fh.close()
    }
    // The very pieces taken, shown as they came (no block of the writer's own).
    expect(seen.length).toBe(pieces.length)
    expect(seen.every((p, i) => p === pieces[i])).toBe(true)
    const file = await readFile(join(dir, 'g'))
    expect(file.length).toBe(data.length + 300)
    expect(file.subarray(0, data.length).equals(Buffer.from(data))).toBe(true)
    expect(file.subarray(data.length).equals(Buffer.from(bytes(300, 8)))).toBe(true)
  })

  it('gather writer: a failed write fails the next write or flush with its error, and nothing after it is written', async () => {
    const fh = await open(join(dir, 'h'), 'wx')
    const w = new GatherWriter(fh)
    await fh.close() // every write now fails with EBADF
    // A whole block starts a write (which fails in the background); the writer then refuses.
    await w.write(bytes(CAP, 1))
    const e = (await w.flush().then(
      () => undefined,
      (x: unknown) => x,
    )) as NodeJS.ErrnoException
    expect(e.code).toBe('EBADF')
    expect(() => w.write(bytes(10, 2))).toThrow(e)
    w.release()
    expect(() => w.write(bytes(10, 3))).toThrow()
  })

  it('writevAll writes every byte in order across short writes', async () => {
    // A FileHandle that takes at most 1000 bytes per call (the kernel may write short).
    const out: number[] = []
    const calls: number[] = []
    const fake = {
      writev: (bufs: Uint8Array[]) => {
        calls.push(bufs.length)
        let budget = 1000
        let n = 0
        for (const b of bufs) {
          const take = Math.min(budget, b.length)
          for (let i = 0; i < take; i++) out.push(b[i]!)
          budget -= take
          n += take
          if (budget === 0) break
        }
        return Promise.resolve({ bytesWritten: n, buffers: bufs })
      },
      write: (b: Uint8Array, off: number, len: number) => {
        const take = Math.min(1000, len)
        for (let i = 0; i < take; i++) out.push(b[off + i]!)
        return Promise.resolve({ bytesWritten: take, buffer: b })
      },
    } as unknown as FileHandle
    const pieces = [bytes(700, 1), bytes(1500, 2), bytes(1, 3), bytes(2600, 4)]
    await writevAll(fake, pieces)
    expect(Buffer.from(out).equals(Buffer.concat(pieces))).toBe(true)
    expect(calls.length).toBeGreaterThan(1) // it did resume after short writes
  })

  it('a put of handed-over pieces keeps no write buffer, and the bytes stored are the pieces', async () => {
    const store = await createFsStore({ dir, chunkSize: 64 * 1024 })
    const data = bytes(5 * CAP + 99, 40)
    const { address } = await store.put(chunked(data, 65_536), { ownedPieces: true })
    expect(address).toBe(toAddress(blake3(data)))
    expect(internalsOf(store)!.writeBuffers!.idle).toBe(0)
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    await store.close()
  })

  it('gather writer: writes after MAX_PIECES tiny pieces, never holding more (a client trickling 1-byte segments)', async () => {
    const iovs: number[] = []
    let written = 0
    const fake = {
      writev: (bufs: Uint8Array[]) => {
        iovs.push(bufs.length)
        const n = bufs.reduce((a, b) => a + b.length, 0)
        written += n
        return Promise.resolve({ bytesWritten: n, buffers: bufs })
      },
      write: (b: Uint8Array, off: number, len: number) => {
        iovs.push(1)
        written += len
        return Promise.resolve({ bytesWritten: len, buffer: b })
      },
    } as unknown as FileHandle
    const w = new GatherWriter(fake)
    const max = GatherWriter.MAX_PIECES
    for (let i = 0; i < 3 * max + 5; i++) await w.write(bytes(1, i))
    // Three full batches were handed off (and written) while pieces were still arriving.
    expect(iovs.slice(0, 3)).toEqual([max, max, max])
    await w.flush()
    w.release()
    expect(written).toBe(3 * max + 5)
    expect(Math.max(...iovs)).toBeLessThanOrEqual(max)
  })
})
