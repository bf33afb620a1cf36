/**
 * The filesystem backend (the default): sharded object files carrying their chunk table as a
 * trailer (format 2), temp file + fsync + rename + directory fsync for every put, a bounded cache
 * of hot small objects, and format migration on open.
 *
 * @module
 */

import { randomUUID } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import { mkdir, open, readdir, rename, rm, statfs, writeFile } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { ClosedError, IntegrityFailedError, abortReason, linkSignals, parseAddress } from '@ron/core'
import type { Address } from '@ron/core'
import { ChunkTableBuilder, DEFAULT_CHUNK_SIZE, FOOTER_BYTES, checkChunkSize, encodeTrailer } from './integrity.js'
import { registerInternals } from './internals.js'
import type { ChunkTable } from './integrity.js'
import { attempt, expectAddress, pump } from './ingest.js'
import { ensureShards, fsyncDir, hasCode, ioReason, mapIoError, objectPaths, recover } from './fs-layout.js'
import type { ObjectPaths, RecoveryReport } from './fs-layout.js'
import { GatherWriter, PipelinedWriter, WriteBufferPool, readAt } from './fs-io.js'
import type { PutWriter } from './fs-io.js'
import { prepareFormat } from './fs-format.js'
import type { MigrationReport } from './fs-format.js'
import { SmallObjectCache, objectSizeOf, openObject } from './fs-object.js'
import type { OpenedObject } from './fs-object.js'
import { BlockCache, HandleCache } from './fs-handles.js'
import { hashPool } from './hash-pool.js'
import type { HashedBlock } from './hash-pool.js'
import type { SharedHandle } from './fs-handles.js'
import { READ_BLOCK_BYTES, readVerified, verifyChunks } from './verified-read.js'
import type {
  BlobReader,
  BlobStat,
  BlobStore,
  ByteRange,
  FsStoreOptions,
  ProbeResult,
  PutOptions,
  PutResult,
  VerifyResult,
} from './types.js'

const HEX64 = /^[0-9a-f]{64}$/
const HEX2 = /^[0-9a-f]{2}$/

/**
 * Opens (creating if needed) a filesystem {@link BlobStore} rooted at `opts.dir`: migrates a
 * format-1 directory (see `fs-format.ts`), then runs crash recovery (leftovers of interrupted puts
 * in `tmp/` are removed; objects need no scan).
 *
 * A put writes `tmp/<uuid>.data`, hashing the blocks it writes (one pass yields the address and the chunk table),
 * appends the table, fsyncs the file, calls `beforeCommit`, renames it into `objects/ab/` and
 * fsyncs that directory before resolving: the durability of a bare temp-file-fsync-rename write,
 * nothing more. A put of an object that already exists still renames its freshly verified copy
 * over the old one (`created: false`), so re-uploading the right bytes heals a copy that rotted on
 * disk. Puts and deletes of the same address are serialised in this process (a short per-address
 * critical section around the rename), so concurrent puts of the same content both succeed and
 * exactly one reports `created: true`. Two processes must not share a directory.
 *
 * @throws `MalformedError` when `chunkSize` is out of bounds, or the directory holds a storage
 *   format this code cannot read.
 * @example
 * ```ts
 * const store = await createFsStore({ dir: '/var/lib/ron/storage' })
 * const { address, created } = await store.put(fs.createReadStream('photo.jpg'))
 * await store.close()
 * ```
 */
export async function createFsStore(opts: FsStoreOptions): Promise<BlobStore & AsyncDisposable> {
  const chunkSize = checkChunkSize(opts.chunkSize ?? DEFAULT_CHUNK_SIZE)
  const doFsync = opts.fsync ?? true
  const minFreeBytes = opts.minFreeBytes ?? 16 * 1024 * 1024
  const objectsDir = join(opts.dir, 'objects')
  const tmpDir = join(opts.dir, 'tmp')
  await mkdir(objectsDir, { recursive: true })
  await mkdir(tmpDir, { recursive: true })
  const recovered = await recover(tmpDir)
  const migrated = await prepareFormat(opts.dir, objectsDir, tmpDir, doFsync)
  await ensureShards(objectsDir, doFsync)
  const recovery: RecoveryReport & { migrated?: MigrationReport } = migrated === undefined ? recovered : { ...recovered, migrated }
  const cache = new SmallObjectCache(opts.cacheBytes ?? 8 * 1024 * 1024)
  // Open handles of hot large objects (and their tables): at most 64 descriptors, 4 MiB of tables.
  const handles = new HandleCache(opts.openHandles ?? 64, 4 * 1024 * 1024)
  // Verified blocks shared by concurrent readers of one object (held only while they read it).
  const blocks = new BlockCache(opts.blockCacheBytes ?? 32 * 1024 * 1024)
  const active = new Map<Address, number>()
  // Write buffers reused across puts: 16 idle at most (4 MiB), enough for eight puts at a time;
  // dropped after 10 s without a put.
  const writeBuffers = new WriteBufferPool(16)
  const pool = (opts.hashWorkers ?? availableParallelism() >= 4) ? hashPool() : undefined

  const closing = new AbortController()
  // Every put in flight listens on it once (bounded by the service's writer slots): not a leak.
  setMaxListeners(0, closing.signal)
  let closed = false
  let closePromise: Promise<void> | undefined
  const inflight = new Set<Promise<unknown>>()
  const readers = new Set<() => Promise<void>>()
  const locks = new Map<string, Promise<void>>()
  let lastWriteProblem: string | undefined

  const checkOpen = (): void => {
    if (closed) throw new ClosedError('fs store is closed')
  }
  const pathsOf = (address: Address): ObjectPaths => objectPaths(objectsDir, address)
  const syncDir = async (path: string): Promise<void> => {
    if (doFsync) await fsyncDir(path)
  }
  const track = <T>(p: Promise<T>): Promise<T> => {
    const settled = p.then(
      () => undefined,
      () => undefined,
    )
    inflight.add(settled)
    void settled.then(() => inflight.delete(settled))
    return p
  }

  /** Runs `fn` after every earlier holder of `key` is done (a per-address critical section). */
  async function withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = locks.get(key) ?? Promise.resolve()
    let release!: () => void
    const mine = new Promise<void>((r) => (release = r))
    const tail = prev.then(() => mine)
    locks.set(key, tail)
    await prev
    try {
      return await fn()
    } finally {
      release()
      if (locks.get(key) === tail) locks.delete(key)
    }
  }

  /** Whether a usable copy (valid trailer for `address`, same size) is stored at `path`. */
  async function usableCopy(path: string, address: Address, size: number): Promise<boolean> {
    const o = await openObject(path, address, false, () => undefined).catch(() => undefined)
    if (o === undefined) return false
    await o.fh.close().catch(() => undefined)
    return 'table' in o.opened && o.opened.table.size === size
  }

  /** Puts a shard directory back if someone removed it (they exist from the start). */
  async function restoreShard(dir: string): Promise<void> {
    if ((await mkdir(dir, { recursive: true })) !== undefined) await syncDir(dirname(dir))
  }

  /**
   * Moves a durable, verified temp file into place, always, also over an existing copy: the
   * existing copy may be corrupt on disk (a bit flip the table cannot tell apart from a good copy
   * without a full scrub), and a re-upload of the right bytes must heal it. Content addressing makes
   * the overwrite safe (same bytes), and readers holding the old file keep reading the old inode.
   * Returns `created`: false when a copy with a usable table of the right size was already there
   * (whether or not its bytes had rotted), true otherwise or when `replace` was asked for.
   */
  async function commit(table: ChunkTable, tmpData: string, replace: boolean): Promise<boolean> {
    const p = pathsOf(table.address)
    return withLock(table.address, async () => {
      checkOpen()
      const existed = await usableCopy(p.data, table.address, table.size)
      try {
        await rename(tmpData, p.data)
      } catch (e) {
        if (!hasCode(e, 'ENOENT')) throw e
        await restoreShard(p.dir)
        await rename(tmpData, p.data)
      }
      cache.delete(table.address)
      handles.delete(table.address)
      blocks.deleteAddress(table.address)
      await syncDir(p.dir)
      return replace || !existed
    })
  }

  /** Unlinks an object. */
  async function removeObject(address: Address, p: ObjectPaths): Promise<boolean> {
    cache.delete(address)
    handles.delete(address)
    blocks.deleteAddress(address)
    try {
      await rm(p.data)
    } catch (e) {
      if (!hasCode(e, 'ENOENT')) throw e
      return false
    }
    await syncDir(p.dir)
    return true
  }

  async function put(source: AsyncIterable<Uint8Array>, o: PutOptions): Promise<PutResult> {
    // Linked by hand and released below: AbortSignal.any costs more than the rest of a small put's bookkeeping.
    const link = linkSignals(closing.signal, o.signal)
    const signal = link.signal
    if (signal.aborted) {
      link.dispose()
      throw abortReason(signal)
    }
    const tmpData = join(tmpDir, `${randomUUID()}.data`)
    let fh: FileHandle | undefined
    let writer: PutWriter | undefined
    let committed = false
    try {
      fh = await open(tmpData, 'wx', 0o644)
      // A source that may reuse its buffers is copied into the writer's own buffers, and the
      // writer hashes the blocks it gathers (the bytes it writes). Pieces handed over (a request
      // body) are hashed as they arrive and written as they are: no copy.
      // Handed-over pieces stay as they are, so the builder may hold those of the first chunk
      // (a one-chunk object is then hashed once); bounded by the pieces the gather writer holds
      // before its first write anyway.
      const owned = o.ownedPieces === true
      const builder = new ChunkTableBuilder(chunkSize, owned && chunkSize <= PipelinedWriter.CAPACITY)
      const hash = (block: Uint8Array): void => builder.update(block)
      const w: PutWriter = owned ? new GatherWriter(fh, hash) : new PipelinedWriter(fh, writeBuffers, hash)
      writer = w
      await pump(source, { maxBytes: o.maxBytes, signal }, (piece) => w.write(piece))
      w.seal()
      const table = expectAddress(builder.finish(), o.expect)
      await w.write(encodeTrailer(table))
      await w.flush()
      if (o.beforeCommit !== undefined) await o.beforeCommit(table.address, table.size)
      if (signal.aborted) throw abortReason(signal)
      // fdatasync: the bytes and the size that finds them; the rename is made durable below.
      if (doFsync) await fh.datasync()
      await fh.close()
      fh = undefined
      if (signal.aborted) throw abortReason(signal)
      const created = await commit(table, tmpData, o.replace === true)
      committed = true
      lastWriteProblem = undefined
      return { address: table.address, size: table.size, created }
    } catch (e) {
      const reason = ioReason(e)
      if (reason !== undefined) lastWriteProblem = reason
      throw mapIoError(e)
    } finally {
      link.dispose()
      if (fh) {
        await writer?.settle()
        await fh.close().catch(() => undefined)
      }
      writer?.release()
      // After the commit the temporary name is gone (renamed): no lstat + unlink for nothing.
      if (!committed) await rm(tmpData, { force: true }).catch(() => undefined)
    }
  }

  function unusable(address: Address, problem: string): IntegrityFailedError {
    return new IntegrityFailedError(`integrity data of ${address} is unusable (${problem})`, { details: { address, reason: problem } })
  }

  /** A reader over an object's bytes held in memory (a small object read whole). */
  function memoryReader(address: Address, o: OpenedObject, whole: Uint8Array): BlobReader {
    const t = o.table
    let readerClosed = false
    const close = (): Promise<void> => {
      readerClosed = true
      return Promise.resolve()
    }
    const checkReader = (): void => {
      if (readerClosed) throw new ClosedError('blob reader is closed')
      checkOpen()
    }
    const readChunk = (i: number, len: number): Promise<Uint8Array> => {
      const start = i * t.chunkSize
      return Promise.resolve(whole.slice(start, Math.min(start + len, whole.length)))
    }
    return {
      address,
      size: t.size,
      chunkSize: t.chunkSize,
      read: (range?: ByteRange, sig?: AbortSignal): AsyncIterable<Uint8Array> => readVerified(t, range, sig, readChunk, checkReader),
      close,
    }
  }

  async function openReader(address: Address): Promise<BlobReader | undefined> {
    const p = pathsOf(address)
    const hit = cache.lookup(address, p.data)
    if (hit !== undefined) return memoryReader(address, hit, hit.whole!)
    const shared = handles.acquire(address, p.data)
    if (shared !== undefined) return fileReader(address, shared)
    const found = await openObject(p.data, address, true, checkOpen, cache)
    if (found === undefined) return undefined
    const { fh: handle, opened } = found
    if (!('table' in opened)) {
      await handle.close()
      throw unusable(address, opened.problem)
    }
    const t = opened.table
    if (opened.whole !== undefined) {
      await handle.close()
      if (t.verifyRun(0, opened.whole) === t.count) cache.add(address, opened)
      return memoryReader(address, opened, opened.whole)
    }
    if (closed) {
      // The store closed while this open was under way: do not leave the handle in the cache.
      await handle.close()
      checkOpen()
    }
    return fileReader(address, handles.adopt(address, handle, t, opened.identity))
  }

  /** A reader over an object's file through a (possibly shared) open handle. */
  function fileReader(address: Address, shared: SharedHandle): BlobReader {
    const t = shared.table
    const handle = shared.fh
    let readerClosed = false
    let closeP: Promise<void> | undefined
    const checkReader = (): void => {
      if (readerClosed) throw new ClosedError('blob reader is closed')
      checkOpen()
    }
    const readChunk = (i: number, len: number): Promise<Uint8Array> => readAt(handle, i * t.chunkSize, len, checkReader)
    active.set(address, (active.get(address) ?? 0) + 1)
    // Only whole-object blocks are shared: a short range never asks for them.
    let memo: ReturnType<BlockCache['memo']> | null = null
    const memoFor = (range: ByteRange | undefined): ReturnType<BlockCache['memo']> => {
      if (range !== undefined && range.end - range.start + 1 < READ_BLOCK_BYTES) return undefined
      return memo === null ? (memo = blocks.memo(address, shared.identity, () => (active.get(address) ?? 0) >= 2)) : memo
    }
    // Large blocks are read and hashed by a worker on this handle's descriptor; the handle is
    // released only after those reads settle (so the descriptor cannot be closed under them).
    const offloaded = new Set<Promise<void>>()
    const readHashed = (i: number, len: number): Promise<HashedBlock> | undefined => {
      if (pool === undefined || !pool.accepts(len)) return undefined
      checkReader()
      const p = pool.read(handle.fd, i * t.chunkSize, len, t.chunkSize)
      const settled: Promise<void> = p.then(
        () => void offloaded.delete(settled),
        () => void offloaded.delete(settled),
      )
      offloaded.add(settled)
      return p.catch((e: unknown) => {
        checkReader() // a reader closed under us reports Closed, not EBADF
        throw e
      })
    }
    const close = (): Promise<void> => {
      if (!closeP) {
        readerClosed = true
        readers.delete(close)
        const n = (active.get(address) ?? 1) - 1
        if (n > 0) active.set(address, n)
        else {
          // The last reader of the object: nobody is left to share its blocks with.
          active.delete(address)
          blocks.deleteAddress(address)
        }
        closeP = Promise.all([...offloaded]).then(() => handles.release(shared))
      }
      return closeP
    }
    readers.add(close)
    return {
      address,
      size: t.size,
      chunkSize: t.chunkSize,
      read(range?: ByteRange, sig?: AbortSignal): AsyncIterable<Uint8Array> {
        return readVerified(t, range, sig, readChunk, checkReader, readHashed, memoFor(range))
      },
      close,
    }
  }

  async function verify(address: Address, signal?: AbortSignal): Promise<VerifyResult> {
    const found = await openObject(pathsOf(address).data, address, false, checkOpen)
    if (found === undefined) return { ok: false, size: 0, badChunks: [], reason: 'missing' }
    const { fh, opened } = found
    try {
      if (!('table' in opened)) return { ok: false, size: opened.fileSize, badChunks: [], reason: 'table_corrupt' }
      const t = opened.table
      return await verifyChunks(t, (i, len) => readAt(fh, i * t.chunkSize, len, checkOpen), signal)
    } finally {
      await fh.close()
    }
  }

  async function statObject(address: Address): Promise<BlobStat | undefined> {
    let fh: FileHandle
    try {
      fh = await open(pathsOf(address).data, 'r')
    } catch (e) {
      if (hasCode(e, 'ENOENT')) return undefined
      throw e
    }
    try {
      const size = await objectSizeOf(fh)
      // An object whose trailer is unusable still exists (corrupt, for repair): report its file size.
      return { size: size ?? (await fh.stat()).size }
    } finally {
      await fh.close()
    }
  }

  async function* list(signal?: AbortSignal): AsyncGenerator<Address> {
    checkOpen()
    for (const a of (await readdirOrEmpty(objectsDir)).filter((n) => HEX2.test(n)).sort()) {
      const names = await readdirOrEmpty(join(objectsDir, a))
      for (const name of names) {
        if (signal?.aborted) throw abortReason(signal)
        checkOpen()
        if (HEX64.test(name)) yield `b3:${name}`
      }
    }
  }

  async function probe(): Promise<ProbeResult> {
    if (closed) return { writable: false, reason: 'closed' }
    let freeBytes: number | undefined
    try {
      const s = await statfs(opts.dir)
      freeBytes = Number(s.bavail) * Number(s.bsize)
    } catch {
      freeBytes = undefined
    }
    const free = freeBytes === undefined ? {} : { freeBytes }
    if (freeBytes !== undefined && freeBytes < minFreeBytes) return { writable: false, reason: 'disk_full', ...free }
    // A tiny real write: catches read-only remounts and failing disks that statfs does not show.
    const probePath = join(tmpDir, `.probe-${randomUUID()}`)
    try {
      await writeFile(probePath, 'p')
      lastWriteProblem = undefined
      return { writable: true, ...free }
    } catch (e) {
      const reason = ioReason(e) ?? lastWriteProblem ?? 'io_error'
      return { writable: false, reason, ...free }
    } finally {
      await rm(probePath, { force: true }).catch(() => undefined)
    }
  }

  const store: BlobStore & AsyncDisposable = {
    kind: 'fs',
    chunkSize,
    get closed() {
      return closed
    },
    put(source: AsyncIterable<Uint8Array>, o: PutOptions = {}): Promise<PutResult> {
      return attempt(() => {
        checkOpen()
        return track(put(source, o))
      })
    },
    open(address: Address): Promise<BlobReader | undefined> {
      return attempt(() => {
        checkOpen()
        return track(openReader(parseAddress(address, 'address')))
      })
    },
    stat(address: Address): Promise<BlobStat | undefined> {
      return attempt(() => {
        checkOpen()
        return track(statObject(parseAddress(address, 'address')))
      })
    },
    delete(address: Address): Promise<boolean> {
      return attempt(() => {
        checkOpen()
        const p = pathsOf(address)
        return track(withLock(address, () => removeObject(address, p)))
      })
    },
    list(signal?: AbortSignal): AsyncIterable<Address> {
      return list(signal)
    },
    verify(address: Address, signal?: AbortSignal): Promise<VerifyResult> {
      return attempt(() => {
        checkOpen()
        return track(verify(parseAddress(address, 'address'), signal))
      })
    },
    probe,
    close(): Promise<void> {
      closePromise ??= (async () => {
        closed = true
        closing.abort(new ClosedError('fs store is closed'))
        await Promise.all([...inflight])
        await Promise.all([...readers].map((c) => c()))
        cache.clear()
        blocks.clear()
        writeBuffers.clear()
        await handles.clear()
      })()
      return closePromise
    },
    [Symbol.asyncDispose](): Promise<void> {
      return store.close()
    },
  }
  // Test reach-ins go through `@ron/storage/testing`, not through the store object.
  const flipAt = async (address: Address, offset: number, mask: number, region: 'bytes' | 'table'): Promise<boolean> => {
    // The cache would notice the rewrite through the file's identity only where the kernel's file
    // timestamps are finer than the time since the cached read (coarse, jiffy-based timestamps
    // on many kernels): forget the object so the next read goes to disk on every kernel.
    cache.delete(address)
    handles.delete(address)
    blocks.deleteAddress(address)
    let fh: FileHandle
    try {
      fh = await open(pathsOf(address).data, 'r+')
    } catch (e) {
      if (hasCode(e, 'ENOENT')) return false
      throw e
    }
    try {
      // The regions come from the footer alone, so a table can be flipped back after it was broken.
      const size = await objectSizeOf(fh)
      if (size === undefined) return false
      const fileSize = (await fh.stat()).size
      const [start, end] = region === 'bytes' ? [0, size] : [size, fileSize - FOOTER_BYTES]
      if (offset < 0 || start + offset >= end) return false
      const b = Buffer.alloc(1)
      await fh.read(b, 0, 1, start + offset)
      b[0] = b[0]! ^ mask
      await fh.write(b, 0, 1, start + offset)
      return true
    } finally {
      await fh.close()
    }
  }
  registerInternals(store, {
    corruptBytes: (address, offset, mask) => flipAt(address, offset, mask, 'bytes'),
    corruptTable: (address, offset, mask) => flipAt(address, offset, mask, 'table'),
    objectPath: (address) => pathsOf(address).data,
    recovery,
    cache,
    handles,
    blocks,
    writeBuffers,
  })
  return store
}

async function readdirOrEmpty(path: string): Promise<string[]> {
  try {
    return await readdir(path)
  } catch (e) {
    if (hasCode(e, 'ENOENT', 'ENOTDIR')) return []
    throw e
  }
}
