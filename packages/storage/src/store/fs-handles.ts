/**
 * A bounded cache of open file handles of large objects (with their tables), so a hot object's
 * read — a Range GET above all — costs one `stat` and its data `pread`s instead of `open` +
 * `fstat` + tail `pread` + `close` on the thread pool.
 *
 * Nothing here weakens verification: every byte read through a cached handle is still read from
 * the file and checked against the table before it is served, so a bit flipped in place (same
 * inode) is found by the next read exactly as through a fresh handle. A handle is reused only
 * while the path still names the file it was opened on (same identity: inode, size, mtime,
 * ctime, checked with a synchronous `stat`); a replaced, rewritten or deleted file sends the next
 * read back to `open`. Handles of readers still in use are closed when their last reader closes.
 *
 * @module
 */

import { statSync } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import type { Address } from '@ron/core'
import type { ChunkTable } from './integrity.js'
import type { FileIdentity } from './fs-object.js'

/** One open object file. @internal */
export interface SharedHandle {
  readonly fh: FileHandle
  readonly table: ChunkTable
  readonly identity: FileIdentity
  /** Readers using it. */
  refs: number
  /** Left the cache: closed when `refs` drops to 0. */
  retired: boolean
}

function sameIdentity(a: FileIdentity, b: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
}

/**
 * Least-recently-used open handles, at most `maxHandles` of them and at most `maxTableBytes` of
 * table hashes (a handle in use by a reader stays open past eviction until that reader closes).
 * @internal
 */
export class HandleCache {
  readonly #maxHandles: number
  readonly #maxTableBytes: number
  readonly #entries = new Map<Address, SharedHandle>()
  #tableBytes = 0

  constructor(maxHandles: number, maxTableBytes: number) {
    this.#maxHandles = maxHandles
    this.#maxTableBytes = maxTableBytes
  }

  /** Cached handles (open, not retired). */
  get size(): number {
    return this.#entries.size
  }

  /**
   * A handle on `address` if `path` still names the file it was opened on, with one more reader
   * counted (the caller must {@link HandleCache.release} it).
   */
  acquire(address: Address, path: string): SharedHandle | undefined {
    const e = this.#entries.get(address)
    if (e === undefined) return undefined
    let st
    try {
      st = statSync(path, { bigint: true, throwIfNoEntry: false })
    } catch {
      st = undefined
    }
    if (st === undefined || !sameIdentity(e.identity, st)) {
      this.delete(address)
      return undefined
    }
    // Most recently used goes last.
    this.#entries.delete(address)
    this.#entries.set(address, e)
    e.refs++
    return e
  }

  /**
   * Makes `fh` (just opened by a reader, counted as one ref) shareable. When the cache is off or the
   * table alone would take more than a quarter of the budget, the handle is returned retired (closed
   * by its reader's release).
   */
  adopt(address: Address, fh: FileHandle, table: ChunkTable, identity: FileIdentity): SharedHandle {
    const e: SharedHandle = { fh, table, identity, refs: 1, retired: false }
    const cost = table.count * 32
    if (this.#maxHandles <= 0 || cost > this.#maxTableBytes / 4) {
      e.retired = true
      return e
    }
    this.delete(address)
    this.#entries.set(address, e)
    this.#tableBytes += cost
    for (const [k] of this.#entries) {
      if (this.#entries.size <= this.#maxHandles && this.#tableBytes <= this.#maxTableBytes) break
      this.delete(k)
    }
    return e
  }

  /** One reader is done with `e`; closes it when it left the cache and nobody uses it. */
  release(e: SharedHandle): Promise<void> {
    e.refs--
    return e.retired && e.refs === 0 ? e.fh.close().catch(() => undefined) : Promise.resolve()
  }

  /** Forgets `address` (its handle closes once its readers are done). */
  delete(address: Address): void {
    const e = this.#entries.get(address)
    if (e === undefined) return
    this.#entries.delete(address)
    this.#tableBytes -= e.table.count * 32
    e.retired = true
    if (e.refs === 0) void e.fh.close().catch(() => undefined)
  }

  /** Forgets everything (handles in use close with their last reader). */
  clear(): Promise<void> {
    const idle: Promise<void>[] = []
    for (const [k, e] of [...this.#entries]) {
      this.#entries.delete(k)
      e.retired = true
      if (e.refs === 0) idle.push(e.fh.close().catch(() => undefined))
    }
    this.#tableBytes = 0
    return Promise.all(idle).then(() => undefined)
  }
}

interface BlockEntry {
  block: Promise<Uint8Array | undefined>
  bytes: number
}

/**
 * Recently verified blocks of large objects, least recently used out first, bounded in bytes: when
 * several clients stream the same hot object at about the same pace, each block is read and hashed
 * once and its verified bytes are shared (a block read by two readers at once is read once). Blocks
 * are remembered only while two or more readers of the object are open, and forgotten when its
 * last reader closes, so the memory is held only while it is being shared. A
 * block is keyed by its object's file identity, so a rewritten or replaced file is read afresh; a
 * block that fails verification is never kept. Blocks in memory were verified when read from disk:
 * bit rot on disk afterwards can make a remembered block stale, never wrong (content addressing).
 * @internal
 */
export class BlockCache {
  readonly #max: number
  readonly #entries = new Map<string, BlockEntry>()
  #bytes = 0

  constructor(maxBytes: number) {
    this.#max = maxBytes
  }

  /** Bytes of blocks held (or being read). */
  get bytes(): number {
    return this.#bytes
  }

  /**
   * The blocks of `address` as stored in the file of this `identity`; new blocks are remembered
   * only while `shared()` says other readers of the object are active.
   */
  memo(
    address: Address,
    identity: FileIdentity,
    shared: () => boolean,
  ): { get(first: number): Promise<Uint8Array | undefined> | undefined; set(first: number, block: Promise<Uint8Array | undefined>, bytes: number): void } | undefined {
    if (this.#max <= 0) return undefined
    const tag = `${address}:${identity.ino}:${identity.size}:${identity.mtimeNs}:${identity.ctimeNs}:`
    return {
      get: (first) => {
        const key = tag + String(first)
        const e = this.#entries.get(key)
        if (e === undefined) return undefined
        this.#entries.delete(key)
        this.#entries.set(key, e)
        return e.block
      },
      set: (first, block, bytes) => {
        if (bytes > this.#max / 4 || !shared()) return
        const key = tag + String(first)
        this.#remove(key)
        const e: BlockEntry = { block, bytes }
        this.#entries.set(key, e)
        this.#bytes += bytes
        for (const [k] of this.#entries) {
          if (this.#bytes <= this.#max) break
          this.#remove(k)
        }
        void block.then((b) => {
          if (b === undefined && this.#entries.get(key) === e) this.#remove(key)
        })
      },
    }
  }

  /** Forgets every block of `address`. */
  deleteAddress(address: Address): void {
    const prefix = `${address}:`
    for (const k of [...this.#entries.keys()]) if (k.startsWith(prefix)) this.#remove(k)
  }

  clear(): void {
    this.#entries.clear()
    this.#bytes = 0
  }

  #remove(key: string): void {
    const e = this.#entries.get(key)
    if (e === undefined) return
    this.#entries.delete(key)
    this.#bytes -= e.bytes
  }
}
