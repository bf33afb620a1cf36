/**
 * A JSON-lines file that acknowledges an append only once it is on disk: concurrent appends are
 * grouped into one write and one `fdatasync` (group commit), a failed append is cut off again
 * (the file is truncated back to its last acknowledged byte, so a half-written line never glues
 * itself to the next one), and a torn tail left by a crash is cut on open. Compaction rewrites
 * the file atomically (temporary file, fsync, rename, directory fsync) in the same queue, so it
 * never races an append. Disk faults come out as core's 503 `NotReady` (`toDiskFault`).
 *
 * @module
 */

import { open, readFile, type FileHandle } from 'node:fs/promises'
import { toDiskFault } from '@ron/core'
import { writeFileAtomic } from './file-keystore.js'

/** What the file reports after every write: `undefined` for success, the error otherwise. */
export type WriteObserver = (error: unknown) => void

type Job = { kind: 'append'; text: string; done: Settle } | { kind: 'rewrite'; produce: () => readonly unknown[]; done: Settle }
interface Settle {
  resolve(): void
  reject(e: unknown): void
}

const lineOf = (v: unknown): string => `${JSON.stringify(v)}\n`

/** One JSON-lines file with durable appends. @internal */
export class JsonlFile {
  readonly path: string
  readonly #dir: string
  readonly #what: string
  readonly #observe: WriteObserver
  /** Bytes acknowledged: the file's length after the last successful write. */
  #size: number
  /** The file may be longer than `#size` (a failed write left bytes): truncate before appending. */
  #dirty: boolean
  /** Lines in the file (live or not): what compaction compares with the live count. */
  #lines: number
  readonly #queue: Job[] = []
  #draining: Promise<void> | undefined
  #closed = false

  private constructor(path: string, dir: string, what: string, observe: WriteObserver, size: number, dirty: boolean, lines: number) {
    this.path = path
    this.#dir = dir
    this.#what = what
    this.#observe = observe
    this.#size = size
    this.#dirty = dirty
    this.#lines = lines
  }

  /**
   * Reads `path` (absent = empty) and returns its parsed lines and the file. A tail without its
   * newline (a crash mid-write) is dropped and cut off; an unparsable line inside the file is
   * skipped (nothing after it is lost).
   */
  static async open(path: string, dir: string, what: string, observe: WriteObserver): Promise<{ file: JsonlFile; lines: unknown[] }> {
    let buf: Buffer
    try {
      buf = await readFile(path)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw toDiskFault(e, what)
      buf = Buffer.alloc(0)
    }
    const end = buf.lastIndexOf(0x0a) + 1
    const out: unknown[] = []
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      if (line.trim() === '') continue
      try {
        out.push(JSON.parse(line))
      } catch {
        // A damaged line: skip it, keep the rest.
      }
    }
    // A torn tail is cut on the first append (open does not write: a read-only volume still opens).
    return { file: new JsonlFile(path, dir, what, observe, end, end < buf.length, out.length), lines: out }
  }

  /** Lines the file holds (including ones a compaction would drop). */
  get lineCount(): number {
    return this.#lines
  }

  /**
   * Appends `values` as lines; resolves once they are on disk (fdatasync).
   * @throws {@link NotReadyError} (`disk_full`, `io_error`, `read_only`) when the disk refuses: nothing
   *   of this append stays in the file
   */
  append(values: readonly unknown[]): Promise<void> {
    if (values.length === 0) return Promise.resolve()
    return this.#enqueue((done) => ({ kind: 'append', text: values.map(lineOf).join(''), done }))
  }

  /** Replaces the whole file with `produce()` (called when the rewrite runs, after every earlier append). */
  rewrite(produce: () => readonly unknown[]): Promise<void> {
    return this.#enqueue((done) => ({ kind: 'rewrite', produce, done }))
  }

  /** Refuses new writes and waits for queued ones. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true
    await this.#draining
  }

  #enqueue(make: (done: Settle) => Job): Promise<void> {
    if (this.#closed) return Promise.reject(new Error(`${this.#what} is closed`))
    return new Promise<void>((resolve, reject) => {
      this.#queue.push(make({ resolve, reject }))
      this.#draining ??= this.#drain().finally(() => {
        this.#draining = undefined
      })
    })
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const first = this.#queue[0]!
      if (first.kind === 'rewrite') {
        this.#queue.shift()
        await this.#settle([first], () => this.#rewrite(first.produce))
        continue
      }
      // Group commit: every append queued behind the one in flight goes in the next write.
      const batch: Array<Extract<Job, { kind: 'append' }>> = []
      while (this.#queue[0]?.kind === 'append') batch.push(this.#queue.shift() as Extract<Job, { kind: 'append' }>)
      await this.#settle(batch, () => this.#append(batch.map((j) => j.text).join('')))
    }
  }

  async #settle(jobs: Job[], run: () => Promise<void>): Promise<void> {
    try {
      await run()
    } catch (e) {
      const err = toDiskFault(e, this.#what)
      this.#observe(err)
      for (const j of jobs) j.done.reject(err)
      return
    }
    this.#observe(undefined)
    for (const j of jobs) j.done.resolve()
  }

  async #append(text: string): Promise<void> {
    const buf = Buffer.from(text, 'utf8')
    // Opened per batch (one open per group commit, beside the fsync): no handle held between
    // writes, so the volume can be remounted, and a compaction's rename never leaves a stale one.
    const fh: FileHandle = await open(this.path, 'a', 0o600)
    try {
      if (this.#dirty) {
        await fh.truncate(this.#size)
        this.#dirty = false
      }
      this.#dirty = true
      try {
        let off = 0
        // O_APPEND: every write lands at the end; a short write is continued.
        while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten
        await fh.datasync()
      } catch (e) {
        // Cut what this append left behind; if even that fails, the next append cuts it first.
        await fh.truncate(this.#size).then(
          () => {
            this.#dirty = false
          },
          () => undefined,
        )
        throw e
      }
    } finally {
      await fh.close().catch(() => undefined)
    }
    this.#size += buf.length
    this.#dirty = false
    this.#lines += text.split('\n').length - 1
  }

  async #rewrite(produce: () => readonly unknown[]): Promise<void> {
    const values = produce()
    const text = values.map(lineOf).join('')
    await writeFileAtomic(this.path, text, this.#dir)
    this.#size = Buffer.byteLength(text)
    this.#dirty = false
    this.#lines = values.length
  }
}
