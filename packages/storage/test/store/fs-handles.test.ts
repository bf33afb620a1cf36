/**
 * The fs store's cache of open handles of large objects: reused while the path names the same file,
 * never a way around verification (a bit flip in place is caught through a cached handle), dropped
 * on delete, re-put and outside replacement, bounded, and closed with the store.
 */
import { copyFile, mkdtemp, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isRonError } from '@ron/core'
import type { Address } from '@ron/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsStore } from '../../src/store/index.js'
import { internalsOf } from '../../src/store/internals.js'
import { objectPath } from '../../src/store/testing.js'
import type { BlobStore } from '../../src/store/types.js'
import { bytes, collect, flipByte, once, readAll, readUntilError } from './helpers.js'

const openHandles = (store: BlobStore): number => internalsOf(store)!.handles!.size


describe('fs store open-handle cache', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-fs-handles-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('keeps the handle of a read large object and serves the next reads through it, verified', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(300 * 1024, 1)
    const { address } = await store.put(once(data))
    expect(openHandles(store)).toBe(0)
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    expect(openHandles(store)).toBe(1)
    // Two readers share it; a range through it.
    const [a, b] = [(await store.open(address))!, (await store.open(address))!]
    expect(Buffer.from((await collect(a.read({ start: 5000, end: 70_000 }))).data).equals(Buffer.from(data.subarray(5000, 70_001)))).toBe(true)
    await a.close()
    expect(Buffer.from((await collect(b.read())).data).equals(Buffer.from(data))).toBe(true)
    await b.close()
    expect(openHandles(store)).toBe(1)
    await store.close()
    expect(openHandles(store)).toBe(0)
  })

  it('a bit flipped in place after the handle was cached is caught by the next read (never served)', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(300 * 1024, 2)
    const { address } = await store.put(once(data))
    await readAll(store, address)
    expect(openHandles(store)).toBe(1)
    // Directly on the file, as rot or a stray writer would: same inode.
    await flipByte(objectPath(store, address), 100 * 1024 + 9)
    for (const range of [undefined, { start: 100 * 1024 - 10, end: 100 * 1024 + 10 }]) {
      const r = (await store.open(address))!
      const { data: got, error } = await readUntilError(r.read(range))
      await r.close()
      expect(isRonError(error, 'IntegrityFailed')).toBe(true)
      expect((error as { details: unknown }).details).toEqual({ address, chunk: 100 })
      const from = range?.start ?? 0
      expect(got.length).toBeLessThanOrEqual(100 * 1024 - from)
      expect(Buffer.from(got).equals(Buffer.from(data.subarray(from, from + got.length)))).toBe(true)
    }
    await store.close()
  })

  it('drops the handle when the file is replaced or removed behind its back, and on delete', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(200 * 1024, 3)
    const { address } = await store.put(once(data))
    await readAll(store, address)
    expect(openHandles(store)).toBe(1)
    // Replaced (a new inode) with a copy whose chunk 50 is flipped: the cached handle (old inode,
    // good bytes) must not be used; the read goes to the new file and catches the flip.
    const path = objectPath(store, address)
    const copy = join(dir, 'copy')
    await copyFile(path, copy)
    await flipByte(copy, 50 * 1024 + 1)
    await rename(copy, path)
    const r = (await store.open(address))!
    const { error } = await readUntilError(r.read())
    await r.close()
    expect((error as { details: unknown }).details).toEqual({ address, chunk: 50 })
    // Removed from outside: no stale handle keeps serving it.
    await rm(path)
    expect(await store.open(address)).toBeUndefined()
    expect(openHandles(store)).toBe(0)
    // Through the store: a re-put then a delete.
    await store.put(once(data))
    await readAll(store, address)
    expect(openHandles(store)).toBe(1)
    const held = (await store.open(address))!
    expect(await store.delete(address)).toBe(true)
    expect(openHandles(store)).toBe(0)
    // A reader that had it open still reads the whole (verified) object from its handle.
    expect(Buffer.from((await collect(held.read())).data).equals(Buffer.from(data))).toBe(true)
    await held.close()
    expect(await store.open(address)).toBeUndefined()
    await store.close()
  })

  it('holds at most openHandles handles, least recently used out first; 0 turns it off', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024, openHandles: 2 })
    const addrs: Address[] = []
    for (let i = 0; i < 3; i++) addrs.push((await store.put(once(bytes(100 * 1024, 10 + i)))).address)
    for (const a of addrs) await readAll(store, a)
    expect(openHandles(store)).toBe(2)
    for (const [i, a] of addrs.entries()) expect(Buffer.from(await readAll(store, a)).equals(Buffer.from(bytes(100 * 1024, 10 + i)))).toBe(true)
    expect(openHandles(store)).toBe(2)
    await store.close()
    const off = await createFsStore({ dir, chunkSize: 1024, openHandles: 0 })
    expect(Buffer.from(await readAll(off, addrs[0]!)).equals(Buffer.from(bytes(100 * 1024, 10)))).toBe(true)
    expect(openHandles(off)).toBe(0)
    await off.close()
  })
})

describe('fs store verified-block cache', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-fs-blocks-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })
  const held = (store: BlobStore): number => internalsOf(store)!.blocks!.bytes

  it('concurrent readers of one object share its verified blocks while they read; bounded; dropped with the last reader', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024, blockCacheBytes: 3 * 1024 * 1024 })
    const data = bytes(5 * 1024 * 1024 + 100, 21)
    const { address } = await store.put(once(data))
    // One reader alone keeps nothing.
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    expect(held(store)).toBe(0)
    const readers = await Promise.all([1, 2, 3, 4].map(async () => (await store.open(address))!))
    const all = await Promise.all(readers.map(async (r) => (await collect(r.read())).data))
    for (const got of all) expect(Buffer.from(got).equals(Buffer.from(data))).toBe(true)
    expect(held(store)).toBeGreaterThan(0)
    expect(held(store)).toBeLessThanOrEqual(3 * 1024 * 1024)
    // Ranges read through it too (only whole blocks are shared; a range's own blocks are read).
    const range = { start: 1024 * 1024 - 5, end: 3 * 1024 * 1024 + 5 }
    expect(Buffer.from((await collect(readers[0]!.read(range))).data).equals(Buffer.from(data.subarray(range.start, range.end + 1)))).toBe(true)
    for (const r of readers.slice(1)) await r.close()
    expect(held(store)).toBeGreaterThan(0) // one reader still open
    await readers[0]!.close()
    expect(held(store)).toBe(0)
    // A delete forgets them at once, even with readers open.
    const again = await Promise.all([1, 2].map(async () => (await store.open(address))!))
    await Promise.all(again.map((r) => collect(r.read())))
    expect(held(store)).toBeGreaterThan(0)
    expect(await store.delete(address)).toBe(true)
    expect(held(store)).toBe(0)
    for (const r of again) await r.close()
    await store.close()
  })

  it('never keeps a block that failed verification, and a rewritten file is read afresh', async () => {
    const store = await createFsStore({ dir, chunkSize: 1024 })
    const data = bytes(3 * 1024 * 1024, 22)
    const { address } = await store.put(once(data))
    await flipByte(objectPath(store, address), 1024 * 1024 + 3) // block 1, chunk 1024
    // Two readers at once (so blocks are shared): both stop at the bad chunk, before a byte of it.
    const two = await Promise.all([1, 2].map(async () => (await store.open(address))!))
    const outcomes = await Promise.all(two.map((r) => readUntilError(r.read())))
    for (const { data: got, error } of outcomes) {
      expect((error as { details: unknown }).details).toEqual({ address, chunk: 1024 })
      expect(got.length).toBeLessThanOrEqual(1024 * 1024)
      expect(Buffer.from(got).equals(Buffer.from(data.subarray(0, got.length)))).toBe(true)
    }
    for (const r of two) await r.close()
    // Healed by a re-put: the next read is whole (no failed block was remembered).
    await store.put(once(data))
    expect(Buffer.from(await readAll(store, address)).equals(Buffer.from(data))).toBe(true)
    // Good blocks were remembered; a flip now (the file's identity changes) is still found on disk.
    await flipByte(objectPath(store, address), 3)
    const r = (await store.open(address))!
    const { error } = await readUntilError(r.read())
    await r.close()
    expect((error as { details: unknown }).details).toEqual({ address, chunk: 0 })
    await store.close()
  })
})
