import { mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { addressOf, createBlake3, isRonError, toAddress } from '@ron/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsStore } from '../../src/store/index.js'
import { mapIoError } from '../../src/store/fs-layout.js'
import { blobStoreCompliance } from '../../src/store/compliance.js'
import { corruptStoredBytes, corruptStoredTable, fsRecovery, objectPath } from '../../src/store/testing.js'
import { bytes, chunked, collect, flipByte, listAll, once, readUntilError, rejection } from './helpers.js'

/** Every file (not directory) below `dir`, relative. */
async function files(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name).slice(dir.length + 1))
  }
  return out.sort()
}

blobStoreCompliance('fs', async ({ chunkSize }) => {
  const dir = await mkdtemp(join(tmpdir(), 'ron-fs-store-'))
  const store = await createFsStore(chunkSize === undefined ? { dir } : { dir, chunkSize })
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

describe('fs store on disk', () => {
  let dir: string
  const CS = 1024
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-fs-disk-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('lays objects out in sharded directories, one file each with its table as a trailer, and leaves tmp/ empty', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const data = bytes(3 * CS)
    const { address } = await store.put(once(data))
    const hex = address.slice(3)
    expect(await files(dir)).toEqual(['FORMAT', join('objects', hex.slice(0, 2), hex)])
    expect((await readdir(join(dir, 'objects'))).length).toBe(256) // every shard exists from the start
    expect(await readFile(join(dir, 'FORMAT'), 'utf8')).toBe('ron-storage-fs 2\n')
    const file = await readFile(objectPath(store, address))
    expect(file.length).toBe(3 * CS + (56 + 3 * 32 + 32) + 16)
    expect(file.subarray(0, 3 * CS).equals(Buffer.from(data))).toBe(true)
    await store.close()
  })

  it('removes the partial temp file of an upload over maxBytes', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const e = await rejection(store.put(chunked(bytes(50 * CS), 3, 4000), { maxBytes: 10 * CS }))
    expect(isRonError(e, 'OverLimit')).toBe(true)
    expect(await files(dir)).toEqual(['FORMAT'])
    await store.close()
  })

  it('removes the temp file of an aborted or mismatching put', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const ac = new AbortController()
    async function* src(): AsyncGenerator<Uint8Array> {
      yield bytes(5 * CS)
      ac.abort()
      await new Promise(() => undefined)
    }
    expect(isRonError(await rejection(store.put(src(), { signal: ac.signal })), 'Canceled')).toBe(true)
    const wrong = addressOf(bytes(1, 1))
    expect(isRonError(await rejection(store.put(once(bytes(5 * CS)), { expect: wrong })), 'IntegrityFailed')).toBe(true)
    expect(await files(dir)).toEqual(['FORMAT'])
    await store.close()
  })

  it('aborts in-flight puts on close and leaves nothing behind', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    async function* stalls(): AsyncGenerator<Uint8Array> {
      yield bytes(CS)
      await new Promise(() => undefined)
    }
    const p = store.put(stalls())
    await new Promise((r) => setImmediate(r))
    await store.close()
    expect(isRonError(await rejection(p), 'Closed')).toBe(true)
    expect(await files(dir)).toEqual(['FORMAT'])
  })

  it('detects a bit flip on disk at the right chunk and never serves it', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const data = bytes(8 * CS + 10, 21)
    const { address } = await store.put(once(data))
    await flipByte(objectPath(store, address), 5 * CS + 1)
    const r = (await store.open(address))!
    const { data: got, error } = await readUntilError(r.read())
    expect(isRonError(error, 'IntegrityFailed')).toBe(true)
    expect((error as { details: unknown }).details).toEqual({ address, chunk: 5 })
    expect(got.length).toBeLessThanOrEqual(5 * CS)
    expect(Buffer.from(got).equals(Buffer.from(data.subarray(0, got.length)))).toBe(true)
    await r.close()
    expect(await store.verify(address)).toEqual({ ok: false, size: data.length, badChunks: [5] })
    await store.close()
  })

  it('fails closed on a truncated object file (torn write: its trailer is gone) and keeps it for repair', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const data = bytes(4 * CS, 22)
    const { address } = await store.put(once(data))
    await truncate(objectPath(store, address), 2 * CS + 5)
    const e = await rejection(store.open(address))
    expect(isRonError(e, 'IntegrityFailed')).toBe(true)
    expect((e as { details: unknown }).details).toEqual({ address, reason: 'table_corrupt' })
    expect(await store.verify(address)).toEqual({ ok: false, size: 2 * CS + 5, badChunks: [], reason: 'table_corrupt' })
    expect(await listAll(store.list())).toEqual([address])
    // A put of the same content repairs it.
    expect((await store.put(once(data))).created).toBe(true)
    expect((await store.verify(address)).ok).toBe(true)
    await store.close()
  })

  it('fails closed when the trailer belongs to another object, or is missing', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const a = await store.put(once(bytes(2 * CS, 1)))
    const b = await store.put(once(bytes(2 * CS, 2)))
    const pa = objectPath(store, a.address)
    const fileA = await readFile(pa)
    const fileB = await readFile(objectPath(store, b.address))
    await writeFile(pa, Buffer.concat([fileA.subarray(0, 2 * CS), fileB.subarray(2 * CS)])) // valid checksum, wrong object
    const e1 = await rejection(store.open(a.address))
    expect(isRonError(e1, 'IntegrityFailed')).toBe(true)
    expect((e1 as { details: unknown }).details).toEqual({ address: a.address, reason: 'table_mismatch' })
    expect(await store.verify(a.address)).toMatchObject({ ok: false, reason: 'table_corrupt' })
    await writeFile(pa, fileA.subarray(0, 2 * CS)) // bytes only, as if the trailer never landed
    const e2 = await rejection(store.open(a.address))
    expect((e2 as { details: unknown }).details).toEqual({ address: a.address, reason: 'table_corrupt' })
    // A put of the same content repairs the object instead of trusting the broken one.
    expect((await store.put(once(bytes(2 * CS, 1)))).created).toBe(true)
    expect((await store.verify(a.address)).ok).toBe(true)
    await store.close()
  })

  it('recovers on reopen by emptying tmp/ only: objects are never torn, so nothing else is scanned or removed', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const good = bytes(3 * CS + 7, 31)
    const { address } = await store.put(chunked(good))
    await store.close()
    // An interrupted put: a temp file in tmp/.
    await writeFile(join(dir, 'tmp', 'abc.data'), bytes(100))
    // Someone else's file is left alone.
    await writeFile(join(dir, 'objects', 'README'), 'not ours')
    const again = await createFsStore({ dir, chunkSize: CS })
    expect(fsRecovery(again)).toEqual({ tmpRemoved: 1 })
    expect(await listAll(again.list())).toEqual([address])
    const r = (await again.open(address))!
    expect(Buffer.from((await collect(r.read())).data).equals(Buffer.from(good))).toBe(true)
    await r.close()
    expect(await readFile(join(dir, 'objects', 'README'), 'utf8')).toBe('not ours')
    expect(await readdir(join(dir, 'tmp'))).toEqual([])
    await again.close()
  })

  it('keeps serving an opened object after a concurrent delete', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const data = bytes(3 * CS, 41)
    const { address } = await store.put(once(data))
    const r = (await store.open(address))!
    expect(await store.delete(address)).toBe(true)
    expect(Buffer.from((await collect(r.read())).data).equals(Buffer.from(data))).toBe(true)
    await r.close()
    expect(await files(dir)).toEqual(['FORMAT'])
    await store.close()
  })

  it('closes readers left open when the store closes', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const { address } = await store.put(once(bytes(3 * CS)))
    const r = (await store.open(address))!
    await store.close()
    expect(isRonError((await readUntilError(r.read())).error, 'Closed')).toBe(true)
    await r.close()
  })

  it('leaves no file descriptor open after reads that finish, stop early, fail or are closed by the store', async () => {
    const fdCount = async (): Promise<number> => (await readdir('/proc/self/fd')).length
    if (process.platform !== 'linux') return
    const store = await createFsStore({ dir, chunkSize: CS })
    // Larger than the small objects read whole (those hold no descriptor once opened).
    const data = bytes(100 * CS, 51)
    const { address } = await store.put(once(data))
    const bad = await store.put(once(bytes(90 * CS, 52)))
    await flipByte(objectPath(store, bad.address), CS + 3)
    const before = await fdCount()
    for (let k = 0; k < 20; k++) {
      const r = (await store.open(address))!
      await collect(r.read())
      for await (const _ of r.read({ start: 10, end: 5 * CS })) break
      await r.close()
      const b = (await store.open(bad.address))!
      expect(isRonError((await readUntilError(b.read())).error, 'IntegrityFailed')).toBe(true)
      await b.close()
      await store.verify(address)
    }
    expect(isRonError(await rejection(store.put(chunked(bytes(8 * CS)), { maxBytes: CS })), 'OverLimit')).toBe(true)
    const open1 = (await store.open(address))!
    const open2 = (await store.open(address))!
    expect(await fdCount()).toBe(before + 2)
    await store.close()
    expect(await fdCount()).toBe(before)
    await open1.close()
    await open2.close()
  })

  it('keeps a truncated object through recovery so repair can fix it', async () => {
    const store = await createFsStore({ dir, chunkSize: CS })
    const { address } = await store.put(once(bytes(4 * CS, 53)))
    await store.close()
    await truncate(objectPath(store, address), CS)
    const again = await createFsStore({ dir, chunkSize: CS })
    expect(await listAll(again.list())).toEqual([address])
    expect(await again.verify(address)).toEqual({ ok: false, size: CS, badChunks: [], reason: 'table_corrupt' })
    await again.close()
  })

  it('maps disk-full and I/O errors to NotReady with a reason', () => {
    const err = (code: string): Error => Object.assign(new Error(code), { code })
    for (const [code, reason] of [
      ['ENOSPC', 'disk_full'],
      ['EDQUOT', 'disk_full'],
      ['EIO', 'io_error'],
      ['EROFS', 'read_only'],
    ] as const) {
      const e = mapIoError(err(code))
      expect(isRonError(e, 'NotReady')).toBe(true)
      expect((e as { details: unknown }).details).toEqual({ reason })
    }
    const other = err('EMFILE')
    expect(mapIoError(other)).toBe(other)
  })

  it('probes free space and reports disk_full below the configured minimum', async () => {
    const ok = await createFsStore({ dir, chunkSize: CS })
    const p = await ok.probe()
    expect(p.writable).toBe(true)
    expect(p.freeBytes).toBeGreaterThan(0)
    await ok.close()
    const tight = await createFsStore({ dir, chunkSize: CS, minFreeBytes: Number.MAX_SAFE_INTEGER })
    expect(await tight.probe()).toMatchObject({ writable: false, reason: 'disk_full' })
    await tight.close()
    expect(await files(dir)).toEqual(['FORMAT'])
  })

  it('reports a read-only directory as not writable', async () => {
    if (process.getuid?.() === 0) return // root ignores permission bits; nothing to observe
    const store = await createFsStore({ dir, chunkSize: CS })
    const { chmod } = await import('node:fs/promises')
    await chmod(join(dir, 'tmp'), 0o500)
    try {
      expect((await store.probe()).writable).toBe(false)
    } finally {
      await chmod(join(dir, 'tmp'), 0o700)
      await store.close()
    }
  })

  it('streams a > 100 MiB object in and out with bounded memory', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const store = await createFsStore({ dir })
    const total = 105 * 1024 * 1024 + 12345
    const piece = 64 * 1024 + 7 // deliberately misaligned with the 64 KiB chunks
    const sent = createBlake3()
    let peak = 0
    gc()
    const base = process.memoryUsage()
    const baseline = base.heapUsed + base.arrayBuffers
    const sample = (): void => {
      gc()
      const m = process.memoryUsage()
      peak = Math.max(peak, m.heapUsed + m.arrayBuffers - baseline)
    }
    async function* generate(): AsyncGenerator<Uint8Array> {
      let off = 0
      let n = 0
      while (off < total) {
        const len = Math.min(piece, total - off)
        const b = Buffer.allocUnsafe(len)
        b.fill(n & 0xff)
        b.writeUInt32LE(n, 0)
        sent.update(b)
        yield b
        off += len
        if (++n % 256 === 0) sample()
        await Promise.resolve()
      }
    }
    const res = await store.put(generate())
    expect(res).toMatchObject({ size: total, created: true })
    expect(res.address).toBe(toAddress(sent.digest()))
    const r = (await store.open(res.address))!
    const got = createBlake3()
    let n = 0
    let size = 0
    for await (const c of r.read()) {
      got.update(c)
      size += c.length
      if (++n % 256 === 0) sample()
    }
    await r.close()
    expect(size).toBe(total)
    expect(toAddress(got.digest())).toBe(res.address)
    expect(peak).toBeLessThan(32 * 1024 * 1024)
    await store.close()
  })
})
