/**
 * The durable side of webhook dedupe (issue 20): `<dataDir>/dedupe.jsonl`, one JSON line per
 * delivery `{k, r, e}` (key, receipt, expiry). A delivery is appended and fsynced before its
 * webhook is answered — concurrent deliveries share one write and one fsync (group commit) — so
 * a restart remembers every delivery it acknowledged, for as long as the replay window needs.
 * The file stays bounded: when the lines written outnumber the live deliveries, it is rewritten
 * with the live ones alone (temporary file, fsync, rename, directory fsync).
 *
 * A local disk fault (full, read-only, failing) refuses the append with 503 `NotReady` and core's
 * `details.reason` (`disk_full`, `read_only`, `io_error`), and marks the journal faulted: the
 * service turns its webhook path unready and `probe()` rewrites the file whole once the disk
 * takes writes again (a failed append may have left a torn line), clearing the fault.
 *
 * @module
 */

import { mkdir, open, rename, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { ClosedError, NotReadyError, diskFaultReason, hasErrnoCode, toDiskFault, type DiskFaultReason } from '@ron/core'
import type { DedupeRecord } from './dedupe.js'

/** The journal's file name inside the data directory. */
export const DEDUPE_FILE = 'dedupe.jsonl'

/** Lines appended beyond the live count before the file is rewritten. */
const COMPACT_SLACK = 1024

interface Waiter {
  line: string
  resolve: () => void
  reject: (e: Error) => void
}

/** Options of {@link DedupeJournal.open}. */
export interface DedupeJournalOptions {
  /** The deliveries to keep when the file is rewritten (the dedupe store's live records). */
  live: () => DedupeRecord[]
  /** Called when the journal turns faulted (a reason) or healthy again (`undefined`). */
  onFault?: (reason: DiskFaultReason | undefined) => void
}

/**
 * Single writer of the dedupe file. `append()` calls from the webhook path are batched; one flush
 * runs at a time.
 *
 * @example
 * ```ts
 * const { journal, records } = await DedupeJournal.open('/var/lib/ron/interop', { live: () => store.records() })
 * store.restore(records)
 * await journal.append({ key: 'github:d-1', receipt, expiresAt })
 * ```
 */
export class DedupeJournal {
  readonly #path: string
  readonly #dir: string
  readonly #o: DedupeJournalOptions
  #fh: FileHandle | undefined
  #lines: number
  #queue: Waiter[] = []
  #flushing: Promise<void> | undefined
  #fault: DiskFaultReason | undefined
  #closed = false

  private constructor(dir: string, fh: FileHandle | undefined, lines: number, fault: DiskFaultReason | undefined, o: DedupeJournalOptions) {
    this.#dir = dir
    this.#path = join(dir, DEDUPE_FILE)
    this.#fh = fh
    this.#lines = lines
    this.#fault = fault
    this.#o = o
  }

  /**
   * Reads the journal in `dir` (created if missing) and opens it for appending. Torn or
   * malformed lines (a crash mid-append) are skipped. A disk fault while opening does not fail:
   * the journal starts faulted (see {@link fault}) and {@link probe} recovers it.
   *
   * @returns the journal and the records read from it, oldest first (expired ones included: the
   *   dedupe store skips them)
   * @throws the filesystem error when `dir` cannot be created or the file read for another reason
   */
  static async open(dir: string, o: DedupeJournalOptions): Promise<{ journal: DedupeJournal; records: DedupeRecord[] }> {
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const path = join(dir, DEDUPE_FILE)
    let text = ''
    try {
      text = await readSized(path)
    } catch (e) {
      if (!hasErrnoCode(e, 'ENOENT')) throw e
    }
    const records: DedupeRecord[] = []
    let lines = 0
    for (const line of text.split('\n')) {
      if (line === '') continue
      lines++
      const r = parseLine(line)
      if (r !== undefined) records.push(r)
    }
    const journal = new DedupeJournal(dir, undefined, lines, undefined, o)
    try {
      // A torn last line (a crash mid-append) would glue onto the next append: rewrite first.
      if (text !== '' && !text.endsWith('\n')) await journal.#rewrite(records)
      else journal.#fh = await open(path, 'a', 0o600)
    } catch (e) {
      const fault = diskFaultReason(e)
      if (fault === undefined) throw e
      journal.#fault = fault
    }
    return { journal, records }
  }

  /** Why the journal refuses writes, or `undefined` when it takes them. */
  get fault(): DiskFaultReason | undefined {
    return this.#fault
  }

  /**
   * Appends `record` and resolves once it is on disk (written and fsynced).
   * @throws {@link NotReadyError} with the disk fault's `details.reason` while faulted or when the write fails;
   *   {@link ClosedError} after {@link close}
   */
  append(record: DedupeRecord): Promise<void> {
    if (this.#closed) return Promise.reject(new ClosedError('the dedupe journal is closed'))
    if (this.#fault !== undefined) return Promise.reject(this.#faultError())
    const line = `${JSON.stringify({ k: record.key, r: record.receipt, e: record.expiresAt })}\n`
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ line, resolve, reject })
      this.#flushing ??= this.#flush().finally(() => {
        this.#flushing = undefined
      })
    })
  }

  /**
   * While faulted: rewrites the file with the live records and reopens it; clears the fault when
   * that works. Returns whether the journal takes writes now.
   */
  async probe(): Promise<boolean> {
    if (this.#closed) return false
    if (this.#fault === undefined) return true
    await this.#flushing
    try {
      await this.#rewrite()
    } catch (e) {
      const reason = diskFaultReason(e)
      if (reason !== this.#fault && reason !== undefined) this.#setFault(reason)
      return false
    }
    this.#setFault(undefined)
    return true
  }

  /** Waits for the appends in flight, then closes the file. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true
    await this.#flushing
    const fh = this.#fh
    this.#fh = undefined
    await fh?.close().catch(() => undefined)
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue
      this.#queue = []
      try {
        if (this.#fault !== undefined) throw this.#faultError()
        const fh = this.#fh
        if (fh === undefined) throw new ClosedError('the dedupe journal is closed')
        await fh.write(batch.length === 1 ? batch[0]!.line : batch.map((w) => w.line).join(''))
        await fh.datasync()
        this.#lines += batch.length
      } catch (e) {
        const reason = diskFaultReason(e)
        if (reason !== undefined) this.#setFault(reason)
        const err = toDiskFault(e, 'webhook dedupe') as Error
        for (const w of batch) w.reject(err)
        continue
      }
      for (const w of batch) w.resolve()
      if (this.#lines > COMPACT_SLACK && this.#lines > 2 * this.#o.live().length) {
        try {
          await this.#rewrite()
        } catch (e) {
          // The appended file is still whole; a failed rewrite only leaves it long (and the disk
          // fault, if it is one, is reported by the next append).
          const reason = diskFaultReason(e)
          if (reason !== undefined) this.#setFault(reason)
        }
      }
    }
  }

  /** Writes the live records to a temporary file, fsyncs it, renames it over the journal, fsyncs the directory, reopens. */
  async #rewrite(records?: DedupeRecord[]): Promise<void> {
    const live = records ?? this.#o.live()
    const tmp = `${this.#path}.tmp`
    const out = await open(tmp, 'w', 0o600)
    try {
      await out.write(live.map((r) => `${JSON.stringify({ k: r.key, r: r.receipt, e: r.expiresAt })}\n`).join(''))
      await out.datasync()
    } finally {
      await out.close()
    }
    await rename(tmp, this.#path)
    const d = await open(this.#dir, 'r')
    try {
      await d.sync()
    } finally {
      await d.close()
    }
    const fh = await open(this.#path, 'a', 0o600)
    const old = this.#fh
    this.#fh = fh
    this.#lines = live.length
    await old?.close().catch(() => undefined)
  }

  #setFault(reason: DiskFaultReason | undefined): void {
    if (this.#fault === reason) return
    this.#fault = reason
    this.#o.onFault?.(reason)
  }

  #faultError(): NotReadyError {
    return new NotReadyError(`webhook dedupe not writable: ${this.#fault}`, { details: { reason: this.#fault }, retryAfterMs: 1000 })
  }
}

/** The file's bytes up to the size it had when opened (never an unbounded read, whatever the path is). */
async function readSized(path: string): Promise<string> {
  const fh = await open(path, 'r')
  try {
    const size = (await fh.stat()).size
    const buf = Buffer.allocUnsafe(size)
    let off = 0
    while (off < size) {
      const { bytesRead } = await fh.read(buf, off, size - off, off)
      if (bytesRead === 0) break
      off += bytesRead
    }
    return buf.toString('utf8', 0, off)
  } finally {
    await fh.close()
  }
}

function parseLine(line: string): DedupeRecord | undefined {
  try {
    const v = JSON.parse(line) as { k?: unknown; r?: unknown; e?: unknown }
    if (typeof v.k !== 'string' || typeof v.r !== 'string' || !v.r.startsWith('b3:') || typeof v.e !== 'number') return undefined
    return { key: v.k, receipt: v.r as DedupeRecord['receipt'], expiresAt: v.e }
  } catch {
    return undefined
  }
}
