/**
 * The durable {@link LogStore}: append-only segment files in one directory.
 *
 * ```
 * genesis.json             the log's genesis record (written once, atomically)
 * head.bin                 the head record: the last acknowledged version and its entry hash,
 *                          the oldest version held, the checkpoints and durable leaf hashes
 *                          stored (two checksummed slots; see head-record.ts)
 * seg-<first version>.log  records: u32 length | u32 crc32 | canonical entry JSON
 * leaves.bin               32-byte Merkle leaf hashes of every version, pruned ones included
 * checkpoints.jsonl        one signed checkpoint per line
 * ```
 *
 * A commit writes its record, fdatasyncs the segment, then writes and fdatasyncs the head record,
 * and only then is acknowledged (its leaf hash goes to leaves.bin later, 128 at a time). So every version up to the head
 * record is durable and acknowledged, and nothing past it ever was. Opening checks the log
 * against the head record and refuses — IntegrityFailed naming the file and `ron-node registry
 * fsck` — a log that holds less than it acknowledged (a segment cut, emptied or deleted, a last
 * record rewritten, fewer checkpoints than recorded, a deleted head record or genesis); it cuts a
 * torn record past the head record (a crash mid-append) and keeps whole records past it (a crash
 * between the two fsyncs). `leaves.bin` is derived data: fsynced before each checkpoint and at
 * close, with the head record counting the leaf hashes known durable; the rest are rebuilt from
 * the segments on open, and a rewrite of the file is atomic.
 *
 * A failed write is never acknowledged and is undone (the segment cut back, the head record
 * rewritten) before the next one; while it cannot be undone (the disk still failing), writes
 * answer `NotReady` and {@link LogStore.probe} retries the undo.
 *
 * @module
 */

import { constants, readSync } from 'node:fs'
import { mkdir, open, readFile, readdir, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { ChainMismatchError, ClosedError, IntegrityFailedError, MalformedError, NotReadyError, diskFaultReason } from '@ron/core'
import { genesisHash, type EncodedEntry, type Genesis, type Head } from '../entry.js'
import { HEAD_FILE, encodeHeadRecord, headFileBytes, slotOffset, type HeadRecord } from './head-record.js'
import { noGenesis } from './notable.js'
import { CHECKPOINTS, GENESIS, HEADER, LEAF, LEAVES, PROBE, frame, fsyncDir, segName, writeAll, writeFileAtomic } from './segment-format.js'
import { damagedLogError, findLog, genesisLost, type Segment } from './segment-recovery.js'
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
   * truncated, and damage is returned in {@link RecoveredLog.problems} instead of thrown
   * (offline verification).
   * @default false
   */
  readOnly?: boolean
  /**
   * Accept a missing or unreadable head record and write one for the log as it is (`ron-node
   * registry fsck --rebuild-head`): for a log written before head records existed, or whose
   * head record alone was lost. It cannot tell whether acknowledged entries went missing with it.
   * @default false
   */
  rebuildHead?: boolean
}

/** Read handles kept open (the recent segments serve most reads). */
const READERS = 4
/** Bytes the disk probe writes (one page: a full volume refuses it). */
const PROBE_BYTES = 4096

type HeadState = Omit<HeadRecord, 'seq'>

/** Leaf hashes written to leaves.bin at once (4 KiB: a page). */
const LEAF_BATCH = 128

class SegmentStore implements LogStore {
  readonly kind = 'segment'
  readonly #dir: string
  readonly #segmentEntries: number
  readonly #segmentBytes: number
  readonly #readOnly: boolean
  readonly #rebuildHead: boolean
  #segments: Segment[] = []
  readonly #readers = new Map<string, Promise<FileHandle>>()
  /** The read handles of {@link SegmentStore.#readers} once open (what `readNow` reads through). */
  readonly #openReaders = new Map<string, FileHandle>()
  #checkpoints: StoredCheckpoint[] = []
  #checkpointBytes = 0
  #head: Head = { version: 0, hash: 'b3:' }
  #oldest = 1
  #active: FileHandle | undefined
  #leaves: FileHandle | undefined
  #leavesDirty = false
  /** Leaf hashes appended, those not yet written to leaves.bin included. */
  #leafCount = 0
  /** Leaf hashes not yet written to leaves.bin (the last `#pendingCount` of `#leafCount`). */
  #pendingLeaves = Buffer.alloc(LEAF * LEAF_BATCH)
  #pendingCount = 0
  #headFile: FileHandle | undefined
  /** What head.bin holds (the last record written whole). */
  #durable: HeadRecord | undefined
  /** Head record writes, one at a time (commits, checkpoints and pruning all write it). */
  #headChain: Promise<unknown> = Promise.resolve()
  /** A failed write not yet undone: appends wait for `fix` to succeed. */
  #unclean: { fix: () => Promise<void>; cause: unknown } | undefined
  #closed = false
  #opened = false

  constructor(o: SegmentStoreOptions) {
    this.#dir = o.dir
    this.#segmentEntries = o.segmentEntries ?? 1000
    this.#segmentBytes = o.segmentBytes ?? 64 * 1024 * 1024
    this.#readOnly = o.readOnly ?? false
    this.#rebuildHead = o.rebuildHead ?? false
  }

  async open(o: OpenOptions): Promise<RecoveredLog> {
    this.#check()
    if (this.#opened) throw new Error('segment store already opened')
    this.#opened = true
    try {
      return await this.#open(o)
    } catch (e) {
      for (const path of [...this.#readers.keys()]) await this.#dropReader(path)
      throw e
    }
  }

  async #open(o: OpenOptions): Promise<RecoveredLog> {
    const dir = this.#dir
    if (!this.#readOnly) await mkdir(dir, { recursive: true })
    const names = await readdir(dir).catch((e: unknown) => {
      if (this.#readOnly && (e as { code?: unknown }).code === 'ENOENT') return [] as string[]
      throw e
    })
    if (!names.includes(GENESIS)) {
      if (await genesisLost(dir)) throw damagedLogError(dir, [`${GENESIS} is missing, but the directory holds a log (segments, checkpoints or a head record past version 0)`])
      if (this.#readOnly) throw new MalformedError(`${dir} holds no registry log (no ${GENESIS})`, { details: { field: 'dir' } })
      if (o.genesis === undefined) throw noGenesis()
      await this.#create(o.genesis)
    }

    const found = await findLog(dir, { segmentEntries: this.#segmentEntries, rebuildHead: this.#rebuildHead })
    const { genesis, head, recoveries } = found
    const bump = (kind: string): void => {
      recoveries[kind] = (recoveries[kind] ?? 0) + 1
    }
    this.#segments = found.segments
    this.#head = head
    this.#oldest = found.oldest
    this.#checkpoints = found.checkpoints
    this.#checkpointBytes = found.checkpointBytes

    // Leaf hashes: those the head record counts as durable (and every pruned one) come from
    // leaves.bin; the rest are rebuilt from the segments.
    const leavesPath = join(dir, LEAVES)
    const leafBuf = await readFile(leavesPath).catch((e: unknown) => {
      if ((e as { code?: unknown }).code === 'ENOENT') return Buffer.alloc(0)
      throw e
    })
    const whole = Math.floor(leafBuf.length / LEAF)
    const trusted = Math.min(whole, head.version, Math.max(found.record?.leaves ?? 0, found.oldest - 1))
    const leafHashes: Uint8Array[] = []
    for (let i = 0; i < trusted; i++) leafHashes.push(Uint8Array.from(leafBuf.subarray(i * LEAF, (i + 1) * LEAF)))
    let rewrite = whole !== head.version || leafBuf.length % LEAF !== 0
    if (rewrite) bump(whole > head.version ? 'leaves_truncated' : 'leaves_rebuilt')
    for (let v = leafHashes.length + 1; v <= head.version; v++) {
      const bytes = found.tail.get(v) ?? (v >= found.oldest ? await this.read(v) : undefined)
      if (bytes === undefined) {
        found.problems.push(`${LEAVES}: the leaf hash of pruned version ${v} is lost (it held ${whole} of ${head.version})`)
        leafHashes.push(new Uint8Array(LEAF))
        continue
      }
      const h = o.leafHash(bytes, genesis)
      if (v <= whole && Buffer.compare(h, leafBuf.subarray((v - 1) * LEAF, v * LEAF)) !== 0) {
        if (!rewrite) bump('leaves_rebuilt')
        rewrite = true
      }
      leafHashes.push(h)
    }
    // The recent records are authentic (chained to the head record): their leaf hashes win.
    for (const [v, bytes] of found.tail) {
      const h = o.leafHash(bytes, genesis)
      if (Buffer.compare(h, leafHashes[v - 1]!) !== 0) {
        if (!rewrite) bump('leaves_rebuilt')
        rewrite = true
        leafHashes[v - 1] = h
      }
    }
    this.#leafCount = leafHashes.length

    if (!this.#readOnly) {
      if (found.problems.length > 0) throw damagedLogError(dir, found.problems)
      for (const r of found.repairs) await r.run()
      if (rewrite || whole === 0) await writeFileAtomic(dir, leavesPath, Buffer.concat(leafHashes))
      this.#leaves = await open(leavesPath, 'r+')
      await this.#leaves.sync()
      await this.#openHead(found.record, {
        version: head.version,
        hash: head.hash,
        oldest: this.#oldest,
        checkpoints: this.#checkpoints.length,
        checkpointBytes: this.#checkpointBytes,
        leaves: this.#leafCount,
      })
      const last = this.#segments.at(-1)
      if (last !== undefined) this.#active = await open(last.path, 'a')
    }
    const r: RecoveredLog = { genesis, head: { ...head }, leafHashes, oldest: this.#oldest, checkpoints: [...this.#checkpoints], notable: found.notable, recoveries }
    if (this.#readOnly) r.problems = found.problems
    return r
  }

  /** A new log: its head record (version 0), then its genesis, each durable before the next. */
  async #create(genesis: Genesis): Promise<void> {
    const dir = this.#dir
    const record: HeadRecord = { seq: 1, version: 0, hash: genesisHash(genesis), oldest: 1, checkpoints: 0, checkpointBytes: 0, leaves: 0 }
    await writeFileAtomic(dir, join(dir, HEAD_FILE), headFileBytes(record))
    await writeFileAtomic(dir, join(dir, GENESIS), `${JSON.stringify(genesis, null, 2)}\n`)
  }

  /** Opens head.bin for in-place writes, writing the state found when the record differs from it. */
  async #openHead(record: HeadRecord | undefined, state: HeadState): Promise<void> {
    const path = join(this.#dir, HEAD_FILE)
    if (record === undefined) {
      // --rebuild-head: a fresh file (the old one is missing or unreadable).
      const fresh: HeadRecord = { ...state, seq: 1 }
      await writeFileAtomic(this.#dir, path, headFileBytes(fresh))
      this.#headFile = await open(path, 'r+')
      this.#durable = fresh
      return
    }
    this.#headFile = await open(path, 'r+')
    this.#durable = record
    const same = (Object.keys(state) as Array<keyof HeadState>).every((k) => state[k] === record[k])
    if (!same) await this.#writeHead(state)
  }

  /**
   * Writes the head record: the durable state with `change` applied, in the slot not holding the
   * current record, fdatasynced. Writes are serialised, and each starts from the last one written,
   * so a checkpoint's write never rolls back a commit's.
   */
  #writeHead(change: Partial<HeadState>): Promise<void> {
    const run = this.#headChain.then(async () => {
      const next: HeadRecord = { ...this.#durable!, ...change, seq: this.#durable!.seq + 1 }
      writeAll(this.#headFile!.fd, encodeHeadRecord(next), slotOffset(next.seq))
      await this.#headFile!.datasync()
      this.#durable = next
    })
    this.#headChain = run.catch(() => undefined)
    return run
  }

  head(): Head {
    return { ...this.#head }
  }

  async compareAndAppend(expected: Head, e: EncodedEntry, leafHash: Uint8Array): Promise<boolean> {
    this.#writable()
    await this.#restore()
    if (expected.version !== this.#head.version || expected.hash !== this.#head.hash) return false
    if (e.entry.version !== expected.version + 1 || e.entry.prev !== expected.hash) {
      throw new ChainMismatchError('entry does not extend HEAD', { details: { version: e.entry.version } })
    }
    let seg = this.#segments.at(-1)
    let fh = this.#active
    let fresh: Segment | undefined
    if (seg === undefined || fh === undefined || seg.offsets.length >= this.#segmentEntries || seg.info.bytes >= this.#segmentBytes) {
      const path = join(this.#dir, segName(e.entry.version))
      fh = await open(path, 'a')
      try {
        await fsyncDir(this.#dir)
      } catch (err) {
        await fh.close().catch(() => undefined)
        await rm(path, { force: true }).catch(() => undefined)
        throw err
      }
      fresh = {
        path,
        offsets: [],
        lengths: [],
        info: { first: e.entry.version, last: e.entry.version - 1, bytes: 0, firstCommittedAt: e.entry.committedAt, lastCommittedAt: 0 },
      }
      seg = fresh
    }
    const at = seg.info.bytes
    const rec = frame(e.bytes)
    let stage: 'segment' | 'head' = 'segment'
    try {
      // The record goes to the page cache synchronously (a few µs, cheaper than a thread-pool
      // round trip); the waits are the two fdatasyncs, segment first: the head record never
      // names a version the segment might not hold. The leaf hash is written later, with others.
      writeAll(fh.fd, rec)
      await fh.datasync()
      stage = 'head'
      await this.#writeHead({ version: e.entry.version, hash: e.hash })
    } catch (err) {
      await this.#undo(fh, fresh, at, stage, err)
      throw err
    }
    if (fresh !== undefined) {
      const old = this.#active
      this.#active = fh
      this.#segments.push(fresh)
      await old?.close().catch(() => undefined)
    }
    seg.offsets.push(at)
    seg.lengths.push(e.bytes.length)
    seg.info.bytes += rec.length
    seg.info.last = e.entry.version
    seg.info.lastCommittedAt = e.entry.committedAt
    this.#head = { version: e.entry.version, hash: e.hash }
    this.#leafCount++
    this.#leavesDirty = true
    this.#queueLeaf(leafHash)
    return true
  }

  /**
   * Queues the leaf hash of the version just appended for leaves.bin, written {@link LEAF_BATCH}
   * at a time (one write per page instead of one per commit) and before every sync of the file:
   * it is derived data, which the head record counts as durable only after a sync, so a hash not
   * yet written is rebuilt from its segment after a crash, as one written but not synced is.
   */
  #queueLeaf(leafHash: Uint8Array): void {
    if (this.#pendingCount * LEAF === this.#pendingLeaves.length) {
      // Earlier writes failed: keep every hash until one succeeds.
      const grown = Buffer.alloc(this.#pendingLeaves.length * 2)
      this.#pendingLeaves.copy(grown)
      this.#pendingLeaves = grown
    }
    this.#pendingLeaves.set(leafHash.subarray(0, LEAF), this.#pendingCount * LEAF)
    this.#pendingCount++
    if (this.#pendingCount < LEAF_BATCH) return
    try {
      this.#writeLeaves()
    } catch {
      // The commit is durable already: the hashes are written again with the next batch, and a
      // checkpoint (which syncs leaves.bin) fails until they are.
    }
  }

  /** Writes the pending leaf hashes at their place in leaves.bin (page cache; no sync). */
  #writeLeaves(): void {
    if (this.#pendingCount === 0) return
    writeAll(this.#leaves!.fd, this.#pendingLeaves.subarray(0, this.#pendingCount * LEAF), (this.#leafCount - this.#pendingCount) * LEAF)
    this.#pendingCount = 0
    if (this.#pendingLeaves.length > LEAF * LEAF_BATCH) this.#pendingLeaves = Buffer.alloc(LEAF * LEAF_BATCH)
  }

  /**
   * Undoes a failed append. Before the head record was written: cut the segment back. After (the
   * head record's write failed, and may or may not have reached the disk): first a new head
   * record of the current HEAD, then the cut — so that a crash at any point leaves a head record
   * the segment satisfies. What cannot be done now is retried before the next write and by probe().
   */
  async #undo(fh: FileHandle, fresh: Segment | undefined, at: number, stage: 'segment' | 'head', cause: unknown): Promise<void> {
    const head = { version: this.#head.version, hash: this.#head.hash }
    const cut = async (): Promise<void> => {
      if (fresh !== undefined) {
        await fh.close().catch(() => undefined)
        await rm(fresh.path, { force: true })
        await fsyncDir(this.#dir)
      } else {
        await fh.truncate(at)
        await fh.sync()
      }
    }
    const fix = stage === 'segment' ? cut : async (): Promise<void> => {
      await this.#writeHead(head)
      await cut()
    }
    try {
      await fix()
    } catch {
      this.#unclean = { fix, cause }
    }
  }

  /** Retries the undo of a failed write. @throws {@link NotReadyError} while it still fails */
  async #restore(): Promise<void> {
    const u = this.#unclean
    if (u === undefined) return
    try {
      await u.fix()
      this.#unclean = undefined
    } catch (e) {
      const reason = diskFaultReason(e) ?? diskFaultReason(u.cause) ?? 'io_error'
      throw new NotReadyError(`registry log not writable: ${reason} (a failed write is not yet undone)`, { details: { reason }, cause: e, retryAfterMs: 1000 })
    }
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
    return checked(version, buf, bytesRead, len)
  }

  /**
   * A record read synchronously through its segment's open read handle: a commit's read-back,
   * whose record the page cache holds (a few µs, against a thread-pool round trip and a
   * main-thread wake-up for `read`). `undefined` while that handle is not open yet (the first
   * read of a segment opens it, through `read`).
   */
  readNow(version: number): Uint8Array | undefined {
    this.#check()
    const seg = this.#find(version)
    if (seg === undefined) return undefined
    const fh = this.#openReaders.get(seg.path)
    if (fh === undefined) {
      // Opened for the next read-back: this one goes through `read`.
      void this.#reader(seg.path).catch(() => undefined)
      return undefined
    }
    const i = version - seg.info.first
    const len = seg.lengths[i]!
    const buf = Buffer.allocUnsafe(HEADER + len)
    return checked(version, buf, readSync(fh.fd, buf, 0, buf.length, seg.offsets[i]!), len)
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
    opening.then(
      (fh) => {
        if (this.#readers.get(path) === opening) this.#openReaders.set(path, fh)
      },
      () => this.#readers.delete(path),
    )
    if (this.#readers.size > READERS) {
      const [oldest, fh] = this.#readers.entries().next().value!
      this.#readers.delete(oldest)
      this.#openReaders.delete(oldest)
      void fh.then((h) => h.close()).catch(() => undefined)
    }
    return opening
  }

  async #dropReader(path: string): Promise<void> {
    const fh = this.#readers.get(path)
    this.#readers.delete(path)
    this.#openReaders.delete(path)
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
    await this.#restore()
    const leaves = this.#leafCount
    if (this.#leavesDirty) {
      this.#writeLeaves()
      await this.#leaves!.sync()
      this.#leavesDirty = this.#leafCount !== leaves
    }
    const line = Buffer.from(`${JSON.stringify(cp)}\n`)
    const path = join(this.#dir, CHECKPOINTS)
    const created = this.#checkpointBytes === 0
    // Written at its place (not appended), so a line left by a failed write is overwritten.
    const fh = await open(path, constants.O_RDWR | constants.O_CREAT, 0o644)
    try {
      writeAll(fh.fd, line, this.#checkpointBytes)
      await fh.truncate(this.#checkpointBytes + line.length)
      await fh.sync()
    } finally {
      await fh.close()
    }
    if (created) await fsyncDir(this.#dir)
    await this.#writeHead({ checkpoints: this.#checkpoints.length + 1, checkpointBytes: this.#checkpointBytes + line.length, leaves })
    this.#checkpointBytes += line.length
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
    await this.#restore()
    let n = 0
    while (n < this.#segments.length - 1 && this.#segments[n]!.info.last <= through) n++
    if (n === 0) return []
    const gone = this.#segments.slice(0, n)
    // The head record says they are gone before they are: a crash in between leaves files below
    // `oldest` (harmless leftovers), never a head record that expects files that are gone.
    await this.#writeHead({ oldest: gone.at(-1)!.info.last + 1 })
    this.#segments = this.#segments.slice(n)
    this.#oldest = gone.at(-1)!.info.last + 1
    for (const s of gone) {
      await this.#dropReader(s.path)
      await rm(s.path, { force: true })
    }
    await fsyncDir(this.#dir)
    return gone.map((s) => ({ ...s.info }))
  }

  async probe(): Promise<void> {
    this.#writable()
    await this.#restore()
    // A fresh page of a fresh file: a full volume refuses it (rewriting an old file may not).
    const path = join(this.#dir, PROBE)
    await rm(path, { force: true })
    const fh = await open(path, 'wx')
    try {
      await fh.write(Buffer.alloc(PROBE_BYTES, 0x70))
      await fh.sync()
    } finally {
      await fh.close()
      await rm(path, { force: true }).catch(() => undefined)
    }
  }

  /** True once `close()` was called (false on an object that only inherits from a store). */
  get closed(): boolean {
    return #closed in this && this.#closed
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    try {
      if (this.#leavesDirty && this.#leaves !== undefined && this.#unclean === undefined) {
        const leaves = this.#leafCount
        this.#writeLeaves()
        await this.#leaves.sync()
        // Best effort: the next open rebuilds whatever the head record does not count.
        await this.#writeHead({ leaves }).catch(() => undefined)
      }
    } finally {
      await this.#headChain
      await this.#active?.close()
      await this.#leaves?.close()
      await this.#headFile?.close()
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
  }
}

/**
 * The entry bytes of a record of `len` entry bytes read into `buf` (`bytesRead` of them).
 * @throws {@link IntegrityFailedError} when it is short or fails its length or checksum
 */
function checked(version: number, buf: Buffer, bytesRead: number, len: number): Uint8Array {
  const bytes = buf.subarray(HEADER, bytesRead)
  if (bytesRead !== buf.length || buf.readUInt32BE(0) !== len || crc32(bytes) !== buf.readUInt32BE(4)) {
    throw new IntegrityFailedError(`stored record of version ${version} fails its checksum`, { details: { version } })
  }
  return bytes
}

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
