/**
 * The filesystem backend (the default): sharded object directories, chunk-table sidecars, temp
 * file + fsync + rename + directory fsync for every put, and crash recovery on open.
 *
 * @module
 */

import { randomUUID } from 'node:crypto'
import { mkdir, open, readFile, readdir, rename, rm, stat, statfs, writeFile } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ClosedError, IntegrityFailedError, abortReason, parseAddress } from '@ron/core'
import type { Address } from '@ron/core'
import { DEFAULT_CHUNK_SIZE, checkChunkSize, decodeTable } from './integrity.js'
import type { ChunkTable } from './integrity.js'
import { attempt, ingest } from './ingest.js'
import { fsyncDir, hasCode, ioReason, mapIoError, objectPaths, recover, TABLE_SUFFIX } from './fs-layout.js'
import type { ObjectPaths, RecoveryReport } from './fs-layout.js'
import { CoalescingWriter, readAt } from './fs-io.js'
import { readVerified, verifyChunks } from './verified-read.js'
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

/** Extra surface of the filesystem backend, for hosts, tools and tests. Not part of {@link BlobStore}. */
export interface FsStoreTesting {
  /** The root directory. */
  readonly dir: string
  /** What crash recovery did when this store opened. */
  readonly recovery: RecoveryReport
  /** Where an object's bytes and chunk table live (for fault injection in tests). */
  pathsOf(address: Address): ObjectPaths
  /** Same as `close()`, for `await using store = await createFsStore(...)`. */
  [Symbol.asyncDispose](): Promise<void>
}

const HEX64 = /^[0-9a-f]{64}$/
const HEX2 = /^[0-9a-f]{2}$/

/**
 * Opens (creating if needed) a filesystem {@link BlobStore} rooted at `opts.dir`, after running
 * crash recovery: leftovers of interrupted puts in `tmp/` are removed, as are objects whose chunk
 * table is missing or invalid (torn puts); valid objects are never touched.
 *
 * A put writes `tmp/<uuid>.data` while hashing, fsyncs it, writes and fsyncs the table, renames
 * the table and then the data into `objects/ab/cd/`, and fsyncs that directory before resolving.
 * A put of an object that already exists still renames its freshly verified copy over the old one
 * (`created: false`), so re-uploading the right bytes heals a copy that rotted on disk.
 * Puts and deletes of the same address are serialised in this process (a short per-address
 * critical section around the renames), so concurrent puts of the same content both succeed and
 * exactly one reports `created: true`. Two processes must not share a directory.
 *
 * @throws `MalformedError` when `chunkSize` is out of bounds.
 * @example
 * ```ts
 * const store = await createFsStore({ dir: '/var/lib/ron/storage' })
 * const { address, created } = await store.put(fs.createReadStream('photo.jpg'))
 * await store.close()
 * ```
 */
export async function createFsStore(opts: FsStoreOptions): Promise<BlobStore & FsStoreTesting> {
  const chunkSize = checkChunkSize(opts.chunkSize ?? DEFAULT_CHUNK_SIZE)
  const doFsync = opts.fsync ?? true
  const minFreeBytes = opts.minFreeBytes ?? 16 * 1024 * 1024
  const objectsDir = join(opts.dir, 'objects')
  const tmpDir = join(opts.dir, 'tmp')
  await mkdir(objectsDir, { recursive: true })
  await mkdir(tmpDir, { recursive: true })
  const recovery = await recover(objectsDir, tmpDir)

  const closing = new AbortController()
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
  const sync = async (fh: FileHandle): Promise<void> => {
    if (doFsync) await fh.sync()
  }
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

  /** Loads the table of an object, or the reason it cannot be used. */
  async function loadTable(address: Address, p: ObjectPaths): Promise<ChunkTable | 'table_missing' | 'table_corrupt' | 'table_mismatch'> {
    let bytes: Uint8Array
    try {
      bytes = await readFile(p.table)
    } catch (e) {
      if (hasCode(e, 'ENOENT')) return 'table_missing'
      throw e
    }
    return decodeTable(bytes, { address })
  }

  async function mkdirShard(dir: string): Promise<void> {
    const first = await mkdir(dir, { recursive: true })
    if (first !== undefined) {
      // New directories must themselves be durable entries of their parents.
      for (let d = dirname(dir); d.length >= objectsDir.length; d = dirname(d)) {
        await syncDir(d)
        if (d === objectsDir) break
      }
    }
  }

  async function writeTempTable(table: ChunkTable, tmpTable: string): Promise<void> {
    const fh = await open(tmpTable, 'wx', 0o644)
    try {
      await fh.writeFile(table.encode())
      await sync(fh)
    } finally {
      await fh.close()
    }
  }

  /**
   * Moves a durable, verified temp pair into place, always, also over an existing copy: the
   * existing copy may be corrupt on disk (a bit flip the table cannot tell apart from a good copy
   * without a full scrub), and a re-upload of the right bytes must heal it. Content addressing makes
   * the overwrite safe (same bytes), and readers holding the old file keep reading the old inode.
   * Returns `created`: false when a copy with a usable table of the right size was already there
   * (whether or not its bytes had rotted), true otherwise or when `replace` was asked for.
   */
  async function commit(table: ChunkTable, tmpData: string, tmpTable: string, replace: boolean): Promise<boolean> {
    const p = pathsOf(table.address)
    return withLock(table.address, async () => {
      checkOpen()
      const existing = await loadTable(table.address, p).catch(() => undefined)
      const existed = typeof existing === 'object' && (await statOrUndefined(p.data))?.size === existing.size
      await mkdirShard(p.dir)
      // Table first: an object never becomes visible without its integrity data.
      await rename(tmpTable, p.table)
      await rename(tmpData, p.data)
      await syncDir(p.dir)
      return replace || !existed
    })
  }

  /** Unlinks an object (data first, so it stops being visible at once) and its table. */
  async function removeObject(p: ObjectPaths): Promise<boolean> {
    let existed = true
    try {
      await rm(p.data)
    } catch (e) {
      if (!hasCode(e, 'ENOENT')) throw e
      existed = false
    }
    await rm(p.table, { force: true })
    if (existed) await syncDir(p.dir)
    return existed
  }

  async function statOrUndefined(path: string): Promise<{ size: number } | undefined> {
    try {
      return await stat(path)
    } catch (e) {
      if (hasCode(e, 'ENOENT')) return undefined
      throw e
    }
  }

  async function put(source: AsyncIterable<Uint8Array>, o: PutOptions): Promise<PutResult> {
    const signal = o.signal ? AbortSignal.any([o.signal, closing.signal]) : closing.signal
    if (signal.aborted) throw abortReason(signal)
    const id = randomUUID()
    const tmpData = join(tmpDir, `${id}.data`)
    const tmpTable = join(tmpDir, `${id}${TABLE_SUFFIX}`)
    let fh: FileHandle | undefined
    try {
      fh = await open(tmpData, 'wx', 0o644)
      const out = fh
      const writer = new CoalescingWriter(out)
      const table = await ingest(source, { chunkSize, expect: o.expect, maxBytes: o.maxBytes, signal }, (piece) =>
        writer.write(piece),
      )
      await writer.flush()
      // Both files must be durable before either is renamed into place; fsync them concurrently.
      await Promise.all([sync(out), writeTempTable(table, tmpTable)])
      await out.close()
      fh = undefined
      if (signal.aborted) throw abortReason(signal)
      const created = await commit(table, tmpData, tmpTable, o.replace === true)
      lastWriteProblem = undefined
      return { address: table.address, size: table.size, created }
    } catch (e) {
      const reason = ioReason(e)
      if (reason !== undefined) lastWriteProblem = reason
      throw mapIoError(e)
    } finally {
      if (fh) await fh.close().catch(() => undefined)
      await rm(tmpData, { force: true }).catch(() => undefined)
      await rm(tmpTable, { force: true }).catch(() => undefined)
    }
  }

  async function openReader(address: Address): Promise<BlobReader | undefined> {
    const p = pathsOf(address)
    let fh: FileHandle
    try {
      fh = await open(p.data, 'r')
    } catch (e) {
      if (hasCode(e, 'ENOENT')) return undefined
      throw e
    }
    let table: Awaited<ReturnType<typeof loadTable>>
    try {
      table = await loadTable(address, p)
    } catch (e) {
      await fh.close()
      throw e
    }
    if (typeof table === 'string') {
      await fh.close()
      // A delete between our open of the data and the table read is "gone", not corruption.
      if (table === 'table_missing' && (await statOrUndefined(p.data)) === undefined) return undefined
      throw new IntegrityFailedError(`integrity data of ${address} is unusable (${table})`, { details: { address, reason: table } })
    }
    const t = table
    const handle = fh
    let readerClosed = false
    let closeP: Promise<void> | undefined
    const close = (): Promise<void> => {
      if (!closeP) {
        readerClosed = true
        readers.delete(close)
        closeP = handle.close().catch(() => undefined)
      }
      return closeP
    }
    readers.add(close)
    const checkReader = (): void => {
      if (readerClosed) throw new ClosedError('blob reader is closed')
      checkOpen()
    }
    const readChunk = (i: number, len: number): Promise<Uint8Array> => readAt(handle, i * t.chunkSize, len, checkReader)
    return {
      address,
      size: t.size,
      chunkSize: t.chunkSize,
      read(range?: ByteRange, sig?: AbortSignal): AsyncIterable<Uint8Array> {
        return readVerified(t, range, sig, readChunk, checkReader)
      },
      close,
    }
  }

  async function verify(address: Address, signal?: AbortSignal): Promise<VerifyResult> {
    const p = pathsOf(address)
    let fh: FileHandle
    try {
      fh = await open(p.data, 'r')
    } catch (e) {
      if (hasCode(e, 'ENOENT')) return { ok: false, size: 0, badChunks: [], reason: 'missing' }
      throw e
    }
    try {
      const table = await loadTable(address, p)
      if (typeof table === 'string') {
        // Same race as in openReader: deleted after we opened the data file.
        if (table === 'table_missing' && (await statOrUndefined(p.data)) === undefined) {
          return { ok: false, size: 0, badChunks: [], reason: 'missing' }
        }
        const st = await fh.stat()
        return { ok: false, size: st.size, badChunks: [], reason: table === 'table_missing' ? table : 'table_corrupt' }
      }
      return await verifyChunks(table, (i, len) => readAt(fh, i * table.chunkSize, len, checkOpen), signal)
    } finally {
      await fh.close()
    }
  }

  async function* list(signal?: AbortSignal): AsyncGenerator<Address> {
    checkOpen()
    for (const a of (await readdirOrEmpty(objectsDir)).filter((n) => HEX2.test(n)).sort()) {
      for (const b of (await readdirOrEmpty(join(objectsDir, a))).filter((n) => HEX2.test(n)).sort()) {
        const names = await readdirOrEmpty(join(objectsDir, a, b))
        for (const name of names) {
          if (signal?.aborted) throw abortReason(signal)
          checkOpen()
          if (HEX64.test(name)) yield `b3:${name}`
        }
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

  const store: BlobStore & FsStoreTesting = {
    kind: 'fs',
    chunkSize,
    dir: opts.dir,
    recovery,
    pathsOf,
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
    async stat(address: Address): Promise<BlobStat | undefined> {
      checkOpen()
      const st = await statOrUndefined(pathsOf(address).data)
      return st === undefined ? undefined : { size: st.size }
    },
    delete(address: Address): Promise<boolean> {
      return attempt(() => {
        checkOpen()
        const p = pathsOf(address)
        return track(withLock(address, () => removeObject(p)))
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
      })()
      return closePromise
    },
    [Symbol.asyncDispose](): Promise<void> {
      return store.close()
    },
  }
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
