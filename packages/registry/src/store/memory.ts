/**
 * An in-memory {@link LogStore} for tests and amnesia mode, with the same semantics as the segment
 * store (segments of `segmentEntries` entries, pruning by whole segments).
 *
 * @module
 */

import { ChainMismatchError, ClosedError } from '@ron/core'
import { genesisHash, type EncodedEntry, type Genesis, type Head, type LogEntry } from '../entry.js'
import { isNotable, noGenesis } from './notable.js'
import type { LogStore, OpenOptions, RecoveredLog, SegmentInfo, StoredCheckpoint } from './types.js'

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** Entries per segment (the unit of pruning). @default 1000 */
  segmentEntries?: number
}

interface Held {
  bytes: Uint8Array
  committedAt: number
}

class MemoryStore implements LogStore {
  readonly kind = 'memory'
  readonly #segmentEntries: number
  readonly #entries = new Map<number, Held>()
  readonly #leaves: Uint8Array[] = []
  readonly #checkpoints: StoredCheckpoint[] = []
  #genesis: Genesis | undefined
  #head: Head = { version: 0, hash: 'b3:' }
  #oldest = 1
  #closed = false

  constructor(o: MemoryStoreOptions) {
    this.#segmentEntries = o.segmentEntries ?? 1000
  }

  open(o: OpenOptions): Promise<RecoveredLog> {
    this.#check()
    if (this.#genesis === undefined) {
      if (o.genesis === undefined) throw noGenesis()
      this.#genesis = o.genesis
      this.#head = { version: 0, hash: genesisHash(o.genesis) }
    }
    return Promise.resolve({
      genesis: this.#genesis,
      head: { ...this.#head },
      leafHashes: [...this.#leaves],
      oldest: this.#oldest,
      checkpoints: [...this.#checkpoints],
      notable: [...this.#entries.values()].flatMap((h) => {
        const e = JSON.parse(Buffer.from(h.bytes).toString('utf8')) as LogEntry
        return isNotable(e, h.bytes.length) ? [e] : []
      }),
      recoveries: {},
    })
  }

  head(): Head {
    return { ...this.#head }
  }

  compareAndAppend(expected: Head, e: EncodedEntry, leafHash: Uint8Array): Promise<boolean> {
    this.#check()
    if (expected.version !== this.#head.version || expected.hash !== this.#head.hash) return Promise.resolve(false)
    if (e.entry.version !== expected.version + 1 || e.entry.prev !== expected.hash) {
      return Promise.reject(new ChainMismatchError('entry does not extend HEAD', { details: { version: e.entry.version } }))
    }
    this.#entries.set(e.entry.version, { bytes: e.bytes, committedAt: e.entry.committedAt })
    this.#leaves.push(leafHash)
    this.#head = { version: e.entry.version, hash: e.hash }
    return Promise.resolve(true)
  }

  read(version: number): Promise<Uint8Array | undefined> {
    return Promise.resolve(this.#entries.get(version)?.bytes)
  }

  oldest(): number {
    return this.#oldest
  }

  appendCheckpoint(cp: StoredCheckpoint): Promise<void> {
    this.#check()
    this.#checkpoints.push(cp)
    return Promise.resolve()
  }

  checkpoints(): readonly StoredCheckpoint[] {
    return this.#checkpoints
  }

  segments(): readonly SegmentInfo[] {
    const out: SegmentInfo[] = []
    for (let first = this.#oldest; first <= this.#head.version; first = segEnd(first, this.#segmentEntries) + 1) {
      const last = Math.min(segEnd(first, this.#segmentEntries), this.#head.version)
      let bytes = 0
      for (let v = first; v <= last; v++) bytes += this.#entries.get(v)?.bytes.length ?? 0
      out.push({ first, last, bytes, firstCommittedAt: this.#entries.get(first)?.committedAt ?? 0, lastCommittedAt: this.#entries.get(last)?.committedAt ?? 0 })
    }
    return out
  }

  sizeBytes(): number {
    let n = this.#leaves.length * 32
    for (const e of this.#entries.values()) n += e.bytes.length
    return n
  }

  prune(through: number): Promise<SegmentInfo[]> {
    this.#check()
    const segs = this.segments()
    const removed: SegmentInfo[] = []
    for (const s of segs.slice(0, -1)) {
      if (s.last > through) break
      for (let v = s.first; v <= s.last; v++) this.#entries.delete(v)
      this.#oldest = s.last + 1
      removed.push(s)
    }
    return Promise.resolve(removed)
  }

  probe(): Promise<void> {
    this.#check()
    return Promise.resolve()
  }

  /** True once `close()` was called (false on an object that only inherits from a store). */
  get closed(): boolean {
    return #closed in this && this.#closed
  }

  close(): Promise<void> {
    this.#closed = true
    return Promise.resolve()
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('log store is closed')
  }
}

/** Last version of the segment that starts at `first` (segments are aligned to `size`). */
function segEnd(first: number, size: number): number {
  return Math.ceil(first / size) * size
}

/** Creates an in-memory log store. */
export function createMemoryStore(options: MemoryStoreOptions = {}): LogStore {
  return new MemoryStore(options)
}

