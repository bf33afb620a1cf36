/**
 * The fs store's cache of hot small objects: used while the file is unchanged, dropped as soon as
 * it changes (bit flip, delete, re-put), bounded in bytes, and never a way to serve a wrong byte.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isRonError } from '@ron/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsStore } from '../../src/store/index.js'
import { corruptStoredBytes, corruptStoredTable, objectPath, smallObjectCache } from '../../src/store/testing.js'
import { bytes, collect, flipByte, once, readUntilError, rejection } from './helpers.js'

describe('fs store small-object cache', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-fs-cache-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  const readAll = async (store: Awaited<ReturnType<typeof createFsStore>>, address: `b3:${string}`): Promise<Uint8Array> => {
    const r = (await store.open(address))!
    try {
      return (await collect(r.read())).data
    } finally {
      await r.close()
    }
  }

  it('caches a small object after a verified read and serves it from memory while the file is unchanged', async () => {
    const store = await createFsStore({ dir })
    const data = bytes(4096, 1)
    const { address } = await store.put(once(data))
    expect(smallObjectCache(store).size).toBe(0) // puts do not fill the cache
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    expect(smallObjectCache(store).size).toBe(1)
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    const r = (await store.open(address))!
    expect(Buffer.from((await collect(r.read({ start: 10, end: 99 }))).data).equals(Buffer.from(data.subarray(10, 100)))).toBe(true)
    await r.close()
    await store.close()
  })

  it('goes back to disk when the file changes, so a bit flip after caching is still detected', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(4096, 2)
    const { address } = await store.put(once(data))
    await readAll(store, address)
    expect(smallObjectCache(store).size).toBe(1)
    await flipByte(objectPath(store, address), 2048 + 5)
    const r = (await store.open(address))!
    const { data: got, error } = await readUntilError(r.read())
    await r.close()
    expect(isRonError(error, 'IntegrityFailed')).toBe(true)
    expect((error as { details: unknown }).details).toEqual({ address, chunk: 2 })
    expect(Buffer.from(got).equals(Buffer.from(data.subarray(0, got.length)))).toBe(true)
    expect(smallObjectCache(store).size).toBe(0) // a corrupt object is never cached
    // Healing by a re-put: the next read verifies the new file and caches it again.
    await store.put(once(data))
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    expect(smallObjectCache(store).size).toBe(1)
    await store.close()
  })

  it('forgets an object corrupted through the testing hooks at once, whatever the file timestamps say', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(4096, 4)
    const { address } = await store.put(once(data))
    await readAll(store, address)
    expect(smallObjectCache(store).size).toBe(1)
    expect(await corruptStoredBytes(store, address, 1024 + 1)).toBe(true)
    // Not left to the file's mtime/ctime, which may not move on a kernel with coarse timestamps.
    expect(smallObjectCache(store).size).toBe(0)
    const r = (await store.open(address))!
    const { error } = await readUntilError(r.read())
    await r.close()
    expect((error as { details: unknown }).details).toEqual({ address, chunk: 1 })
    await store.close()
  })

  it('flipByte changes the file identity the cache checks (mtime), not only its bytes', async () => {
    const store = await createFsStore({ dir })
    const { address } = await store.put(once(bytes(100, 5)))
    const path = objectPath(store, address)
    const before = await stat(path, { bigint: true })
    await flipByte(path, 7)
    const after = await stat(path, { bigint: true })
    expect(after.mtimeNs).not.toBe(before.mtimeNs)
    await store.close()
  })

  it('forgets a deleted object at once', async () => {
    const store = await createFsStore({ dir })
    const { address } = await store.put(once(bytes(100, 3)))
    await readAll(store, address)
    expect(await store.delete(address)).toBe(true)
    expect(smallObjectCache(store).size).toBe(0)
    expect(await store.open(address)).toBeUndefined()
    await store.close()
  })

  it('stays within its byte budget, evicting the least recently used, and can be turned off', async () => {
    const budget = 64 * 1024
    const store = await createFsStore({ dir, cacheBytes: budget })
    const addresses: Array<`b3:${string}`> = []
    for (let i = 0; i < 12; i++) addresses.push((await store.put(once(bytes(8000, 10 + i)))).address)
    for (const a of addresses) {
      await readAll(store, a)
      expect(smallObjectCache(store).bytes).toBeLessThanOrEqual(budget)
    }
    expect(smallObjectCache(store).size).toBeGreaterThan(0)
    expect(smallObjectCache(store).size).toBeLessThan(12)
    // Of an object bigger than the cacheable size only the table is kept, never the bytes.
    const big = await store.put(once(bytes(200 * 1024, 40)))
    await readAll(store, big.address)
    expect(smallObjectCache(store).bytes).toBeLessThanOrEqual(budget)
    await readAll(store, addresses[11]!) // most recent small object, still cached
    const before = smallObjectCache(store).bytes
    await readAll(store, big.address)
    expect(smallObjectCache(store).bytes).toBe(before)
    await store.close()

    const off = await createFsStore({ dir, cacheBytes: 0 })
    await readAll(off, addresses[0]!)
    expect(smallObjectCache(off).size).toBe(0)
    await off.close()
  })

  it('keeps the table of a large object (not its bytes), and drops it when the file changes', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(300 * 1024, 7)
    const { address } = await store.put(once(data))
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    const held = smallObjectCache(store)
    expect(held.size).toBe(1)
    expect(held.bytes).toBeLessThan(300 * 32 + 1024) // the table (32 B per chunk), not the bytes
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    // A corrupt table on disk is seen at the next open: the file changed, the cached table is dropped.
    expect(await corruptStoredTable(store, address, 70)).toBe(true)
    const e = await rejection(store.open(address))
    expect(isRonError(e, 'IntegrityFailed')).toBe(true)
    expect(smallObjectCache(store).size).toBe(0)
    // And a bit flip in the bytes is still caught chunk by chunk with a cached table.
    expect(await corruptStoredTable(store, address, 70)).toBe(true)
    await readAll(store, address)
    expect(await corruptStoredBytes(store, address, 200 * 1024 + 3)).toBe(true)
    const r = (await store.open(address))!
    const { data: got, error } = await readUntilError(r.read())
    await r.close()
    expect((error as { details: unknown }).details).toEqual({ address, chunk: 200 })
    expect(Buffer.from(got).equals(Buffer.from(data.subarray(0, 200 * 1024)))).toBe(true)
    await store.close()
  })

  it('a delete racing an open either finds nothing or serves the whole object from the handle it opened', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    for (const size of [3000, 300 * 1024]) {
      const data = bytes(size, size)
      const { address } = await store.put(once(data))
      const [reader, deleted] = await Promise.all([store.open(address), store.delete(address)])
      expect(deleted).toBe(true)
      if (reader !== undefined) {
        expect(Buffer.from((await collect(reader.read())).data).equals(Buffer.from(data))).toBe(true)
        await reader.close()
      }
      expect(await store.open(address)).toBeUndefined()
      expect(await store.verify(address)).toEqual({ ok: false, size: 0, badChunks: [], reason: 'missing' })
    }
    await store.close()
  })
})
