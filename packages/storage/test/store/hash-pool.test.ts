/**
 * Large reads hashed on worker threads (`hashWorkers: true`): the same verification as on the main
 * thread — the digests are of exactly the bytes served, a bit flip stops the stream before the bad
 * chunk, a short (truncated) block fails — and the descriptor outlives every offloaded read.
 */
import { mkdtemp, open, rm, truncate } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blake3, blake3Backend, isRonError } from '@ron/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { HashPool, OFFLOAD_MIN_BYTES } from '../../src/store/hash-pool.js'
import { blobStoreCompliance } from '../../src/store/compliance.js'
import { createFsStore } from '../../src/store/index.js'
import { ChunkTableBuilder } from '../../src/store/integrity.js'
import { corruptStoredBytes, corruptStoredTable, objectPath } from '../../src/store/testing.js'
import { bytes, flipByte, once, readAll, readUntilError } from './helpers.js'

const native = blake3Backend === 'native'

// The whole backend contract, with large reads hashed on worker threads (whatever the core count).
blobStoreCompliance('fs with hashWorkers', async ({ chunkSize }) => {
  const dir = await mkdtemp(join(tmpdir(), 'ron-fs-workers-'))
  const store = await createFsStore({ dir, hashWorkers: true, ...(chunkSize === undefined ? {} : { chunkSize }) })
  return {
    store,
    corruptData: async (address, offset) => {
      if (!(await corruptStoredBytes(store, address, offset))) throw new Error('no such object')
    },
    corruptTable: async (address, offset) => {
      if (!(await corruptStoredTable(store, address, offset))) throw new Error('no such object')
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  }
})


describe('hash pool', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-hash-pool-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('reads a block at a position and returns one BLAKE3 digest per chunk (the last may be short)', async () => {
    if (!native) return // without the native binding nothing is offloaded (accepts() is false)
    const pool = new HashPool(2)
    expect(pool.accepts(OFFLOAD_MIN_BYTES)).toBe(true)
    expect(pool.accepts(OFFLOAD_MIN_BYTES - 1)).toBe(false)
    const data = bytes(300_000, 4)
    const path = join(dir, 'f')
    const fh = await open(path, 'w+')
    await fh.write(data, 0, data.length, 0)
    try {
      const b = await pool.read(fh.fd, 1000, 299_500, 65536) // runs past the end: short read
      expect(Buffer.from(b.bytes).equals(Buffer.from(data.subarray(1000)))).toBe(true)
      const want = Math.ceil(299_000 / 65536)
      expect(b.digests.length).toBe(want * 32)
      for (let k = 0; k < want; k++) {
        const piece = data.subarray(1000 + k * 65536, Math.min(1000 + (k + 1) * 65536, data.length))
        expect(Buffer.from(b.digests.subarray(k * 32, k * 32 + 32)).equals(Buffer.from(blake3(piece)))).toBe(true)
      }
    } finally {
      await fh.close()
    }
    // A bad descriptor is the read's error, not a hang.
    await expect(pool.read(1 << 20, 0, OFFLOAD_MIN_BYTES, 65536)).rejects.toMatchObject({ code: 'EBADF' })
    expect(new HashPool(0).accepts(1 << 20)).toBe(false) // no threads: nothing offloaded
  })

  it('a table matches a hashed run only for chunks of the right length and digest', () => {
    const data = bytes(5000, 5)
    const b = new ChunkTableBuilder(1024)
    b.update(data)
    const t = b.finish()
    const digestsOf = (block: Uint8Array): Uint8Array => {
      const out = new Uint8Array(Math.ceil(block.length / 1024) * 32)
      for (let k = 0; k * 1024 < block.length; k++) out.set(blake3(block.subarray(k * 1024, (k + 1) * 1024)), k * 32)
      return out
    }
    expect(t.matchRun(0, data, digestsOf(data))).toBe(5)
    expect(t.matchRun(2, data.subarray(2048), digestsOf(data.subarray(2048)))).toBe(3)
    const cut = data.subarray(0, 4500) // the last chunk cut short
    expect(t.matchRun(0, cut, digestsOf(cut))).toBe(4)
    const bad = Buffer.from(data)
    bad[3000] = bad[3000]! ^ 1
    expect(t.matchRun(0, bad, digestsOf(bad))).toBe(2)
    expect(t.matchRun(0, data, digestsOf(data).subarray(0, 64))).toBe(2) // too few digests
  })

  it('fs store with hashWorkers: verified reads, ranges, and a bit flip stopped before the bad chunk', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024, hashWorkers: true })
    const data = bytes(700 * 1024 + 123, 6)
    const { address } = await store.put(once(data))
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    const range = { start: 3333, end: 650_000 }
    expect(Buffer.from(await readAll(store, address, range)).equals(Buffer.from(data.subarray(range.start, range.end + 1)))).toBe(true)
    await flipByte(objectPath(store, address), 400 * 1024 + 77)
    for (const rg of [undefined, range]) {
      const r = (await store.open(address))!
      const { data: got, error } = await readUntilError(r.read(rg))
      await r.close()
      expect(isRonError(error, 'IntegrityFailed')).toBe(true)
      expect((error as { details: unknown }).details).toEqual({ address, chunk: 400 })
      const from = rg?.start ?? 0
      expect(got.length).toBeLessThanOrEqual(400 * 1024 - from)
      expect(Buffer.from(got).equals(Buffer.from(data.subarray(from, from + got.length)))).toBe(true)
    }
    await store.close()
  })

  it('fs store with hashWorkers: a truncated file fails at the first missing chunk; close waits for offloaded reads', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024, hashWorkers: true, openHandles: 0, blockCacheBytes: 0 })
    const data = bytes(2 * 1024 * 1024, 7)
    const { address } = await store.put(once(data))
    // Several readers closed in the middle of their reads, then the store: no stray rejection, no hang.
    const readers = await Promise.all([1, 2, 3].map(() => store.open(address)))
    const its = readers.map((r) => r!.read()[Symbol.asyncIterator]())
    await Promise.all(its.map((it) => it.next())) // one block each, the next one read ahead
    await Promise.all(readers.map((r) => r!.close()))
    for (const it of its) await it.return?.()
    const r = (await store.open(address))!
    await truncate(objectPath(store, address), 1536 * 1024 + 10) // the open reader keeps its table
    const { data: got, error } = await readUntilError(r.read())
    await r.close()
    expect(isRonError(error, 'IntegrityFailed')).toBe(true)
    expect((error as { details: { chunk: number } }).details.chunk).toBe(1536)
    expect(Buffer.from(got).equals(Buffer.from(data.subarray(0, got.length)))).toBe(true)
    await store.close()
  })
})
