/**
 * The durable {@link LogStore}: append-only segment files in one directory.
 *
 * ```
 * genesis.json             the log's genesis record (written once, atomically)
 * seg-<first version>.log  records: u32 length | u32 crc32 | canonical entry JSON
 * leaves.bin               32-byte Merkle leaf hashes of every version, pruned ones included
 * checkpoints.jsonl        one signed checkpoint per line
 * ```
 *
 * A commit writes its record and fsyncs the segment before it is acknowledged. `leaves.bin` is
 * derived data: it is written without fsync and made durable before each checkpoint (nothing is
 * pruned that a durable checkpoint does not cover), and recovery rebuilds its tail from the
 * segments. Recovery verifies the tail segment's checksums and chain, truncates a torn last
 * record (never one that was acknowledged: an acknowledged record was fsynced whole), and refuses
 * to open when a record before the tail is corrupt.
 *
 * @module
 */

import { writeSync } from 'node:fs'
import { mkdir, open, readFile, readdir, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { ChainMismatchError, ClosedError, IntegrityFailedError, MalformedError, NotReadyError } from '@ron/core'
import { noGenesis } from './notable.js'
import { entryHash, genesisHash, type EncodedEntry, type Genesis, type Head, type LogEntry } from '../entry.js'
import { isNotable } from './notable.js'
import type { LogStore, OpenOptions, RecoveredLog, SegmentInfo, StoredCheckpoint } from './types.js'

/** Options of {@link createSegmentStore}. */
export interface SegmentStoreOptions {
  /** Directory of the log (created when missing). */
  dir: string
  /** A new segment starts after this many entries. @default 1000 */
  segmentEntries?: number
  /** ...or after this many bytes. @default 67108864 (64 MiB) */
  segmentBytes?: number
  /**
   * Open without writing anything: no genesis is created, a torn tail is reported but not
   * truncated (offline verification).
   * @default false
   */
  readOnly?: boolean
}

const HEADER = 8
const LEAF = 32
const GENESIS = 'genesis.json'
const LEAVES = 'leaves.bin'
const CHECKPOINTS = 'checkpoints.jsonl'
const PROBE = '.probe'
/** Read handles kept open (the recent segments serve most reads). */
const READERS = 4

interface Segment {
  info: SegmentInfo
  path: string
  /** Byte offset of each record, by version − first. */
  offsets: number[]
  lengths: number[]
}

function segName(first: number): string {
  return `seg-${String(first).padStart(20, '0')}.log`
}

function frame(bytes: Uint8Array): Buffer {
  const buf = Buffer.allocUnsafe(HEADER + bytes.length)
  buf.writeUInt32BE(bytes.length, 0)
  buf.writeUInt32BE(crc32(bytes), 4)
  buf.set(bytes, HEADER)
  return buf
}

/** Writes all of `buf` at the end of the (append-mode) file `fd`, synchronously. */
function writeAll(fd: number, buf: Uint8Array): void {
  let off = 0
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off)
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** A parsed record of a segment file. */
interface Record {
  offset: number
  bytes: Buffer
  entry: LogEntry
}

/** Scans a segment: records up to the first bad one, and where and why scanning stopped. */
function scan(buf: Buffer): { records: Record[]; stop: number; reason: 'end' | 'torn' | 'corrupt' } {
  const records: Record[] = []
  let off = 0
  while (off < buf.length) {
    if (off + HEADER > buf.length) return { records, stop: off, reason: 'torn' }
    const len = buf.readUInt32BE(off)
    const sum = buf.readUInt32BE(off + 4)
    if (off + HEADER + len > buf.length) return { records, stop: off, reason: 'torn' }
    const bytes = buf.subarray(off + HEADER, off + HEADER + len)
    if (crc32(bytes) !== sum) return { records, stop: off, reason: off + HEADER + len === buf.length ? 'torn' : 'corrupt' }
    let entry: LogEntry
    try {
      entry = JSON.parse(bytes.toString('utf8')) as LogEntry
    } catch {
      return { records, stop: off, reason: 'corrupt' }
    }
    records.push({ offset: off, bytes, entry })
    off += HEADER + len
  }
  return { records, stop: off, reason: 'end' }
}

class SegmentStore implements LogStore {
  readonly kind = 'segment'
  readonly #dir: string
  readonly #segmentEntries: number
  readonly #segmentBytes: number
  readonly #readOnly: boolean
  readonly #segments: Segment[] = []
  readonly #readers = new Map<string, Promise<FileHandle>>()
  #checkpoints: StoredCheckpoint[] = []
  #head: Head = { version: 0, hash: 'b3:' }
  #oldest = 1
  #active: FileHandle | undefined
  #leaves: FileHandle | undefined
  #leavesDirty = false
  #leafCount = 0
  #checkpointBytes = 0
  #closed = false
  #opened = false
  #failed: unknown = undefined

  constructor(o: SegmentStoreOptions) {
    this.#dir = o.dir
    this.#segmentEntries = o.segmentEntries ?? 1000
    this.#segmentBytes = o.segmentBytes ?? 64 * 1024 * 1024
    this.#readOnly = o.readOnly ?? false
  }

  async open(o: OpenOptions): Promise<RecoveredLog> {
    this.#check()
    if (this.#opened) throw new Error('segment store already opened')
    this.#opened = true
    const recoveries: Record_<number> = {}
    const bump = (kind: string): void => {
      recoveries[kind] = (recoveries[kind] ?? 0) + 1
    }
    if (!this.#readOnly) await mkdir(this.#dir, { recursive: true })
    const genesis = await this.#loadGenesis(o.genesis)
    const gHash = genesisHash(genesis)

    // Segments, oldest first.
    const names = (await readdir(this.#dir)).filter((n) => /^seg-\d{20}\.log$/.test(n)).sort()
    let prevHash = gHash
    let prevVersion = 0
    const tailLeaves: Array<{ version: number; bytes: Uint8Array }> = []
    const notable: LogEntry[] = []
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!
      const path = join(this.#dir, name)
      const first = Number(name.slice(4, 24))
      const isLast = i === names.length - 1
      const buf = await readFile(path)
      const { records, stop, reason } = scan(buf)
      if (reason === 'corrupt' || (reason === 'torn' && !isLast)) {
        throw new IntegrityFailedError(`log segment ${name} is corrupt at byte ${stop}`, { details: { segment: name, offset: stop } })
      }
      if (reason === 'torn') {
        bump('torn_tail')
        if (!this.#readOnly) {
          const fh = await open(path, 'r+')
          try {
            await fh.truncate(stop)
            await fh.sync()
          } finally {
            await fh.close()
          }
        }
      }
      if (records.length === 0) {
        // An empty last segment (created, then crashed before its first record): drop it.
        if (isLast && !this.#readOnly) {
          await rm(path, { force: true })
          bump('empty_segment')
        }
        continue
      }
      if (i === 0) this.#oldest = first
      if (records[0]!.entry.version !== first) throw new IntegrityFailedError(`segment ${name} starts at version ${records[0]!.entry.version}`)
      const seg: Segment = {
        path,
        offsets: [],
        lengths: [],
        info: { first, last: first - 1, bytes: 0, firstCommittedAt: records[0]!.entry.committedAt, lastCommittedAt: 0 },
      }
      for (const r of records) {
        const v = r.entry.version
        if (prevVersion !== 0 && v !== prevVersion + 1) throw new IntegrityFailedError(`log gap: version ${v} follows ${prevVersion}`)
        // The chain is verified in the tail segment at every start (and everywhere by the deep verifier).
        // (The first held entry of a pruned log has no predecessor here to link to.)
        if (isLast && (v === 1 || prevVersion > 0) && r.entry.prev !== prevHash) {
          throw new IntegrityFailedError(`log chain broken at version ${v}`, { details: { version: v } })
        }
        prevHash = entryHash(r.bytes)
        prevVersion = v
        seg.offsets.push(r.offset)
        seg.lengths.push(r.bytes.length)
        seg.info.last = v
        seg.info.lastCommittedAt = r.entry.committedAt
        seg.info.bytes = r.offset + HEADER + r.bytes.length
        if (isNotable(r.entry)) notable.push(r.entry)
        tailLeaves.push({ version: v, bytes: r.bytes })
        if (tailLeaves.length > this.#segmentEntries * 2) tailLeaves.shift()
      }
      this.#segments.push(seg)
    }
    this.#head = prevVersion === 0 ? { version: 0, hash: gHash } : { version: prevVersion, hash: prevHash }
    if (this.#segments.length === 0) this.#oldest = this.#head.version + 1

    // Leaf hashes: the file may be behind (not fsynced) or ahead (a torn record) of the segments.
    const leavesPath = join(this.#dir, LEAVES)
    let leafBuf: Buffer = await readFile(leavesPath).catch(() => Buffer.alloc(0))
    const whole = Math.floor(leafBuf.length / LEAF)
    const leafHashes: Uint8Array[] = []
    for (let i = 0; i < Math.min(whole, this.#head.version); i++) leafHashes.push(Uint8Array.from(leafBuf.subarray(i * LEAF, (i + 1) * LEAF)))
    if (whole !== this.#head.version || leafBuf.length % LEAF !== 0) bump(whole > this.#head.version ? 'leaves_truncated' : 'leaves_rebuilt')
    const byVersion = new Map(tailLeaves.map((t) => [t.version, t.bytes]))
    for (let v = leafHashes.length + 1; v <= this.#head.version; v++) {
      const bytes = byVersion.get(v) ?? (await this.read(v))
      if (bytes === undefined) throw new IntegrityFailedError(`leaf hash of pruned version ${v} is lost`, { details: { version: v } })
      leafHashes.push(o.leafHash(bytes, genesis.treeHash))
    }
    // The tail's stored leaf hashes must match its records.
    for (const [v, bytes] of byVersion) {
      const h = o.leafHash(bytes, genesis.treeHash)
      if (Buffer.compare(h, leafHashes[v - 1]!) !== 0) {
        bump('leaves_rebuilt')
        leafHashes[v - 1] = h
      }
    }
    leafBuf = Buffer.concat(leafHashes)
    this.#leafCount = leafHashes.length
    if (!this.#readOnly) {
      if (recoveries['leaves_rebuilt'] !== undefined || recoveries['leaves_truncated'] !== undefined) {
        await writeFile(leavesPath, leafBuf)
      }
      this.#leaves = await open(leavesPath, 'a')
      await this.#leaves.sync()
    }

    this.#checkpoints = await this.#loadCheckpoints(bump)
    const last = this.#segments.at(-1)
    if (!this.#readOnly && last !== undefined) this.#active = await open(last.path, 'a')
    return { genesis, head: { ...this.#head }, leafHashes, oldest: this.#oldest, checkpoints: [...this.#checkpoints], notable, recoveries }
  }

  async #loadGenesis(fresh: Genesis | undefined): Promise<Genesis> {
    const path = join(this.#dir, GENESIS)
    try {
      return JSON.parse(await readFile(path, 'utf8')) as Genesis
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new IntegrityFailedError(`cannot read ${path}`, { cause: e })
    }
    if (this.#readOnly) throw new MalformedError(`${this.#dir} holds no registry log (no ${GENESIS})`, { details: { field: 'dir' } })
    if (fresh === undefined) throw noGenesis()
    const tmp = `${path}.tmp`
    const fh = await open(tmp, 'w', 0o644)
    try {
      await fh.writeFile(`${JSON.stringify(fresh, null, 2)}\n`)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
    await fsyncDir(this.#dir)
    return fresh
  }

  async #loadCheckpoints(bump: (k: string) => void): Promise<StoredCheckpoint[]> {
    const path = join(this.#dir, CHECKPOINTS)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch {
      return []
    }
    const out: StoredCheckpoint[] = []
    const lines = text.split('\n')
    let good = 0
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!
      if (line === '') {
        if (i === lines.length - 1) break
        continue
      }
      try {
        out.push(JSON.parse(line) as StoredCheckpoint)
        good += Buffer.byteLength(line) + 1
      } catch {
        if (i < lines.length - 1 && lines.slice(i + 1).some((l) => l !== '')) throw new IntegrityFailedError(`${CHECKPOINTS} is corrupt at line ${i + 1}`)
        bump('torn_checkpoint')
        if (!this.#readOnly) {
          const fh = await open(path, 'r+')
          try {
            await fh.truncate(good)
            await fh.sync()
          } finally {
            await fh.close()
          }
        }
        break
      }
    }
    this.#checkpointBytes = good
    return out
  }

  head(): Head {
    return { ...this.#head }
  }

  async compareAndAppend(expected: Head, e: EncodedEntry, leafHash: Uint8Array): Promise<boolean> {
    this.#writable()
    if (expected.version !== this.#head.version || expected.hash !== this.#head.hash) return false
    if (e.entry.version !== expected.version + 1 || e.entry.prev !== expected.hash) {
      throw new ChainMismatchError('entry does not extend HEAD', { details: { version: e.entry.version } })
    }
    let seg = this.#segments.at(-1)
    if (seg === undefined || seg.offsets.length >= this.#segmentEntries || seg.info.bytes >= this.#segmentBytes) {
      await this.#active?.close()
      this.#active = undefined
      const path = join(this.#dir, segName(e.entry.version))
      this.#active = await open(path, 'a')
      await fsyncDir(this.#dir)
      seg = {
        path,
        offsets: [],
        lengths: [],
        info: { first: e.entry.version, last: e.entry.version - 1, bytes: 0, firstCommittedAt: e.entry.committedAt, lastCommittedAt: 0 },
      }
      this.#segments.push(seg)
    }
    const rec = frame(e.bytes)
    try {
      // The record goes to the page cache synchronously (a few µs for a record of a few hundred
      // bytes, cheaper than a thread-pool round trip); the one wait is the fdatasync: the record
      // and the file size it needs are durable, without a full inode flush.
      writeAll(this.#active!.fd, rec)
      await this.#active!.datasync()
    } catch (err) {
      // Not acknowledged: cut what may have been written so the next append starts clean. If even
      // that fails, refuse further appends until a restart recovers the tail.
      try {
        await this.#active!.truncate(seg.info.bytes)
        await this.#active!.sync()
      } catch {
        this.#failed = err
      }
      throw err
    }
    seg.offsets.push(seg.info.bytes)
    seg.lengths.push(e.bytes.length)
    seg.info.bytes += rec.length
    seg.info.last = e.entry.version
    seg.info.lastCommittedAt = e.entry.committedAt
    this.#head = { version: e.entry.version, hash: e.hash }
    // Derived data, made durable before the next checkpoint (see the module comment); written
    // synchronously to the page cache so the acknowledgement waits for nothing but the fdatasync.
    // The record is durable by now, so a failure here does not fail the commit: further appends
    // are refused until a restart, whose recovery rebuilds the leaf hashes from the segments.
    try {
      writeAll(this.#leaves!.fd, leafHash.subarray(0, LEAF))
    } catch (err) {
      this.#failed = err
    }
    this.#leafCount++
    this.#leavesDirty = true
    return true
  }

  async read(version: number): Promise<Uint8Array | undefined> {
    this.#check()
    const seg = this.#find(version)
    if (seg === undefined) return undefined
    const i = version - seg.info.first
    const off = seg.offsets[i]!
    const len = seg.lengths[i]!
    const fh = await this.#reader(seg.path)
    const buf = Buffer.allocUnsafe(HEADER + len)
    const { bytesRead } = await fh.read(buf, 0, buf.length, off)
    const bytes = buf.subarray(HEADER, bytesRead)
    if (bytesRead !== buf.length || buf.readUInt32BE(0) !== len || crc32(bytes) !== buf.readUInt32BE(4)) {
      throw new IntegrityFailedError(`stored record of version ${version} fails its checksum`, { details: { version } })
    }
    return bytes
  }

  /** A read handle of a segment (a few kept open, least recently used closed first). */
  async #reader(path: string): Promise<FileHandle> {
    const cached = this.#readers.get(path)
    if (cached !== undefined) {
      this.#readers.delete(path)
      this.#readers.set(path, cached)
      return cached
    }
    const opening = open(path, 'r')
    this.#readers.set(path, opening)
    opening.catch(() => this.#readers.delete(path))
    if (this.#readers.size > READERS) {
      const [oldest, fh] = this.#readers.entries().next().value!
      this.#readers.delete(oldest)
      void fh.then((h) => h.close()).catch(() => undefined)
    }
    return opening
  }

  async #dropReader(path: string): Promise<void> {
    const fh = this.#readers.get(path)
    this.#readers.delete(path)
    await fh?.then((h) => h.close()).catch(() => undefined)
  }

  #find(version: number): Segment | undefined {
    let lo = 0
    let hi = this.#segments.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const s = this.#segments[mid]!
      if (version < s.info.first) hi = mid - 1
      else if (version > s.info.last) lo = mid + 1
      else return s
    }
    return undefined
  }

  oldest(): number {
    return this.#oldest
  }

  async appendCheckpoint(cp: StoredCheckpoint): Promise<void> {
    this.#writable()
    if (this.#leavesDirty) {
      await this.#leaves!.sync()
      this.#leavesDirty = false
    }
    const line = `${JSON.stringify(cp)}\n`
    const fh = await open(join(this.#dir, CHECKPOINTS), 'a')
    try {
      await fh.write(line)
      await fh.sync()
    } finally {
      await fh.close()
    }
    this.#checkpointBytes += Buffer.byteLength(line)
    this.#checkpoints.push(cp)
  }

  checkpoints(): readonly StoredCheckpoint[] {
    return this.#checkpoints
  }

  segments(): readonly SegmentInfo[] {
    return this.#segments.map((s) => ({ ...s.info }))
  }

  sizeBytes(): number {
    let n = this.#leafCount * LEAF + this.#checkpointBytes
    for (const s of this.#segments) n += s.info.bytes
    return n
  }

  async prune(through: number): Promise<SegmentInfo[]> {
    this.#writable()
    const removed: SegmentInfo[] = []
    while (this.#segments.length > 1 && this.#segments[0]!.info.last <= through) {
      const s = this.#segments.shift()!
      this.#oldest = s.info.last + 1
      await this.#dropReader(s.path)
      await rm(s.path, { force: true })
      removed.push({ ...s.info })
    }
    if (removed.length > 0) await fsyncDir(this.#dir)
    return removed
  }

  async probe(): Promise<void> {
    this.#writable()
    const path = join(this.#dir, PROBE)
    const fh = await open(path, 'w')
    try {
      await fh.write('probe')
      await fh.sync()
    } finally {
      await fh.close()
    }
    await stat(path)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    try {
      if (this.#leavesDirty) await this.#leaves?.sync()
    } finally {
      await this.#active?.close()
      await this.#leaves?.close()
      for (const path of [...this.#readers.keys()]) await this.#dropReader(path)
    }
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('log store is closed')
  }

  #writable(): void {
    this.#check()
    if (this.#readOnly) throw new Error('log store is read-only')
    if (!this.#opened) throw new Error('log store is not open')
    if (this.#failed !== undefined) throw new NotReadyError('log store failed a write; restart to recover its tail', { cause: this.#failed, retryAfterMs: 5000 })
  }
}

type Record_<T> = { [k: string]: T }

/**
 * Creates a segment-file log store in `options.dir`.
 *
 * @example
 * ```ts
 * const store = createSegmentStore({ dir: './data/registry' })
 * ```
 */
export function createSegmentStore(options: SegmentStoreOptions): LogStore {
  return new SegmentStore(options)
}
