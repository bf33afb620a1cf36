/**
 * Reading an object file of the filesystem backend (format 2: bytes, table trailer, footer), and
 * the bounded cache of hot small objects and of the tables of hot large ones.
 *
 * Opening costs `open` + `fstat` + one `pread` of the file's tail (the footer and, for tables up
 * to a few KiB, the whole table; small objects are read whole in that same `pread`). A cached
 * small object costs one `stat`; a large object whose table is cached costs `open` + `fstat`
 * (then only its data is read). An entry is used only while the file's identity (inode, size,
 * mtime, ctime) is unchanged, so anything that rewrites the file (a bit-flip test, a heal, a
 * delete and re-put) sends the next read back to disk. Cached bytes were verified when read and
 * are verified again on every read, so the cache can serve stale-but-correct bytes of an object
 * that rotted on disk since, never wrong ones.
 *
 * @module
 */

import { statSync } from 'node:fs'
import { open } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import type { Address } from '@ron/core'
import { FOOTER_BYTES, decodeFooter, decodeTable } from './integrity.js'
import type { ChunkTable, TableProblem } from './integrity.js'
import { hasCode } from './fs-layout.js'
import { readAt } from './fs-io.js'

/** Objects up to this size are read whole by the `pread` that reads their table. */
export const SMALL_OBJECT_BYTES = 64 * 1024
/** How much of a large file's tail is read to find the footer and (usually) the table. */
const TAIL_BYTES = 8 * 1024

/** A file's identity: changes when the file is rewritten or replaced. */
export interface FileIdentity {
  ino: bigint
  size: bigint
  mtimeNs: bigint
  ctimeNs: bigint
}

function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
}

/** An opened object file. */
export interface OpenedObject {
  table: ChunkTable
  identity: FileIdentity
  /** The object's bytes (unverified) when it is small enough to have been read whole. */
  whole: Uint8Array | undefined
}

/** The table could not be used: `problem` says why; `fileSize` is the file's size. */
export interface UnusableObject {
  problem: TableProblem
  fileSize: number
}

/**
 * Reads the footer and table of the open file `fh` (and the whole object when small).
 * `readWhole: false` never reads more than the tail.
 */
export async function readObject(
  fh: FileHandle,
  address: Address,
  readWhole: boolean,
  checkOpen: () => void,
  cache?: SmallObjectCache,
): Promise<OpenedObject | UnusableObject> {
  const st = await fh.stat({ bigint: true })
  const identity: FileIdentity = { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs }
  const fileSize = Number(st.size)
  const known = cache?.tableFor(address, identity)
  if (known !== undefined && !(readWhole && fileSize <= SMALL_OBJECT_BYTES + TAIL_BYTES)) return { table: known, identity, whole: undefined }
  if (fileSize < FOOTER_BYTES) return { problem: 'table_corrupt', fileSize }
  const small = readWhole && fileSize <= SMALL_OBJECT_BYTES + TAIL_BYTES
  const tailLen = small ? fileSize : Math.min(fileSize, TAIL_BYTES)
  const tail = await readAt(fh, fileSize - tailLen, tailLen, checkOpen)
  if (tail.length !== tailLen) return { problem: 'table_corrupt', fileSize } // shrank under us
  const tlen = decodeFooter(tail.subarray(tailLen - FOOTER_BYTES), fileSize)
  if (typeof tlen === 'string') return { problem: tlen, fileSize }
  const objectSize = fileSize - FOOTER_BYTES - tlen
  const tableBytes =
    tlen + FOOTER_BYTES <= tailLen
      ? tail.subarray(tailLen - FOOTER_BYTES - tlen, tailLen - FOOTER_BYTES)
      : await readAt(fh, objectSize, tlen, checkOpen)
  if (tableBytes.length !== tlen) return { problem: 'table_corrupt', fileSize }
  const table = decodeTable(tableBytes, { address, size: objectSize })
  if (typeof table === 'string') return { problem: table, fileSize }
  if (!small) cache?.addTable(address, table, identity)
  return { table, identity, whole: small ? tail.subarray(0, objectSize) : undefined }
}

/** Opens `path` and reads its table; `undefined` when there is no such file. */
export async function openObject(
  path: string,
  address: Address,
  readWhole: boolean,
  checkOpen: () => void,
  cache?: SmallObjectCache,
): Promise<{ fh: FileHandle; opened: OpenedObject | UnusableObject } | undefined> {
  let fh: FileHandle
  try {
    fh = await open(path, 'r')
  } catch (e) {
    if (hasCode(e, 'ENOENT')) return undefined
    throw e
  }
  try {
    return { fh, opened: await readObject(fh, address, readWhole, checkOpen, cache) }
  } catch (e) {
    await fh.close()
    throw e
  }
}

/** Size of the object stored in file `fh` (from its footer), or `undefined` when unusable. */
export async function objectSizeOf(fh: FileHandle): Promise<number | undefined> {
  const { size: fileSize } = await fh.stat()
  if (fileSize < FOOTER_BYTES) return undefined
  const footer = await readAt(fh, fileSize - FOOTER_BYTES, FOOTER_BYTES, () => undefined)
  const tlen = decodeFooter(footer, fileSize)
  return typeof tlen === 'string' ? undefined : fileSize - FOOTER_BYTES - tlen
}

interface CacheEntry {
  identity: FileIdentity
  table: ChunkTable
  /** The verified bytes of a small object; undefined for a large object (table only). */
  whole: Uint8Array | undefined
  cost: number
}

/** Per-entry bookkeeping charged on top of the bytes (map entry, table, identity). */
const ENTRY_OVERHEAD = 256

/**
 * A least-recently-used cache, bounded in bytes, of small objects (their verified bytes and
 * tables) and of the tables of large objects.
 * @internal
 */
export class SmallObjectCache {
  readonly #max: number
  readonly #entries = new Map<Address, CacheEntry>()
  #bytes = 0

  constructor(maxBytes: number) {
    this.#max = maxBytes
  }

  /** Bytes held (object bytes, table hashes, bookkeeping). */
  get bytes(): number {
    return this.#bytes
  }

  /** Number of cached objects. */
  get size(): number {
    return this.#entries.size
  }

  /**
   * The entry for `address` if the file at `path` is still the one it was read from. The check is
   * a synchronous `stat` (a few µs for an inode that was just read: it is in the kernel's caches),
   * cheaper than a round trip through libuv's thread pool; any error is a miss.
   */
  lookup(address: Address, path: string): OpenedObject | undefined {
    const e = this.#entries.get(address)
    if (e === undefined || e.whole === undefined) return undefined
    let st
    try {
      st = statSync(path, { bigint: true, throwIfNoEntry: false })
    } catch {
      st = undefined
    }
    if (st === undefined || !sameIdentity(e.identity, { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs })) {
      this.delete(address)
      return undefined
    }
    // Most recently used goes last.
    this.#entries.delete(address)
    this.#entries.set(address, e)
    return { table: e.table, identity: e.identity, whole: e.whole }
  }

  /** The cached table of `address` if it was read from a file of this `identity` (any entry). */
  tableFor(address: Address, identity: FileIdentity): ChunkTable | undefined {
    const e = this.#entries.get(address)
    if (e === undefined) return undefined
    if (!sameIdentity(e.identity, identity)) {
      this.delete(address)
      return undefined
    }
    this.#entries.delete(address)
    this.#entries.set(address, e)
    return e.table
  }

  /** Remembers a small object whose every chunk just verified. */
  add(address: Address, o: OpenedObject): void {
    if (o.whole === undefined) return
    // A copy: the read buffer may be larger than the object (it held the trailer too).
    this.#put(address, { identity: o.identity, table: o.table, whole: o.whole.slice(), cost: o.whole.byteLength + o.table.count * 32 + ENTRY_OVERHEAD })
  }

  /** Remembers the (checksum-verified) table of a large object. */
  addTable(address: Address, table: ChunkTable, identity: FileIdentity): void {
    this.#put(address, { identity, table, whole: undefined, cost: table.count * 32 + ENTRY_OVERHEAD })
  }

  #put(address: Address, e: CacheEntry): void {
    if (this.#max <= 0 || e.cost > this.#max / 4) return
    this.delete(address)
    this.#entries.set(address, e)
    this.#bytes += e.cost
    for (const [k, v] of this.#entries) {
      if (this.#bytes <= this.#max) break
      this.#entries.delete(k)
      this.#bytes -= v.cost
    }
  }

  delete(address: Address): void {
    const e = this.#entries.get(address)
    if (e === undefined) return
    this.#entries.delete(address)
    this.#bytes -= e.cost
  }

  clear(): void {
    this.#entries.clear()
    this.#bytes = 0
  }
}
