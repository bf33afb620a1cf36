/**
 * File I/O helpers of the filesystem backend: pipelined sequential writes for puts and positioned
 * chunk reads for verified streaming.
 *
 * @module
 */

import type { FileHandle } from 'node:fs/promises'
import { systemClock, type Clock, type TimerHandle } from '@ron/core'

/**
 * Spare write buffers of one store, reused by its puts. Each put needs two
 * {@link PipelinedWriter.CAPACITY} buffers; allocating them per put is 512 KiB of fresh
 * ArrayBuffer memory per upload, and V8 counts ArrayBuffer bytes allocated since the last
 * mark-compact against the old generation's limit: on a server whose limit has settled close to
 * its live heap, that churn alone schedules a full GC every few uploads. Holds at most
 * `maxBuffers` idle buffers; what does not fit is left to the GC.
 *
 * A burst leaves up to `maxBuffers` buffers idle (4 MiB for 16): once no buffer has been taken or
 * given for `idleMs`, the pool drops them all, so a store that stopped writing does not keep that
 * memory (an upload after a quiet period allocates its two buffers afresh). The timer runs on
 * `clock` (unref'd by the system clock: it never keeps a process alive) only while buffers are
 * idle, and {@link clear} cancels it for good.
 * @internal
 */
export class WriteBufferPool {
  readonly #idle: Buffer[] = []
  readonly #max: number
  readonly #clock: Clock
  readonly #idleMs: number
  #lastUse = 0
  #timer: TimerHandle | undefined
  #closed = false

  constructor(maxBuffers: number, opts: { clock?: Clock; idleMs?: number } = {}) {
    this.#max = maxBuffers
    this.#clock = opts.clock ?? systemClock
    this.#idleMs = opts.idleMs ?? 10_000
  }

  /** An idle buffer, or a fresh one. */
  take(): Buffer {
    this.#lastUse = this.#clock.now()
    return this.#idle.pop() ?? Buffer.allocUnsafe(PipelinedWriter.CAPACITY)
  }

  /** Hands `buf` back (no write may still be using it). */
  give(buf: Buffer): void {
    this.#lastUse = this.#clock.now()
    if (this.#closed || this.#idle.length >= this.#max) return
    this.#idle.push(buf)
    if (this.#timer === undefined) this.#arm(this.#idleMs)
  }

  /** Number of idle buffers held. */
  get idle(): number {
    return this.#idle.length
  }

  /**
   * Drops every idle buffer, cancels the idle timer and keeps no buffer handed back later (the
   * store is closing: a late {@link give} must not arm a timer again).
   */
  clear(): void {
    this.#closed = true
    this.#idle.length = 0
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  /** Checks again in `ms`: drops the idle buffers if the pool was not used for `idleMs` by then. */
  #arm(ms: number): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined
      if (this.#idle.length === 0) return
      const quiet = this.#clock.now() - this.#lastUse
      if (quiet >= this.#idleMs) this.#idle.length = 0
      else this.#arm(this.#idleMs - quiet)
    }, ms)
    this.#timer.unref?.()
  }
}

/**
 * Gathers pieces (request bodies arrive in pieces of a few KiB under load) into large sequential
 * writes, and keeps one write in flight while the next buffer fills, so hashing the next bytes
 * overlaps writing the previous ones. Two buffers of {@link PipelinedWriter.CAPACITY} at most,
 * taken from `pool` and handed back by {@link PipelinedWriter.release}; pieces are copied once
 * (the source may reuse its buffers).
 *
 * With `onBlock`, every byte taken is handed to it exactly once, in order, from the writer's own
 * buffer, before that buffer is written: in blocks of up to {@link PipelinedWriter.CAPACITY} (a
 * put hashes them: a few native hash calls per 256 KiB instead of two per piece, and the address
 * is that of the bytes written, whatever the source does with its buffers afterwards), until
 * {@link PipelinedWriter.seal}.
 * @internal
 */
export class PipelinedWriter implements PutWriter {
  static readonly CAPACITY = 256 * 1024
  readonly #fh: FileHandle
  readonly #pool: WriteBufferPool | undefined
  #buf: Buffer | undefined
  #spare: Buffer | undefined
  #len = 0
  #inflight: Promise<void> | undefined
  #error: unknown = undefined
  #failed = false
  #onBlock: ((block: Uint8Array) => void) | undefined
  /** Bytes at the start of the current buffer already handed to `onBlock` (by {@link seal}). */
  #seen = 0

  constructor(fh: FileHandle, pool?: WriteBufferPool, onBlock?: (block: Uint8Array) => void) {
    this.#fh = fh
    this.#pool = pool
    this.#onBlock = onBlock
  }

  /**
   * Hands what `onBlock` has not seen yet to it and stops calling it: bytes taken afterwards (a
   * trailer) are written but not shown to `onBlock`.
   */
  seal(): void {
    const onBlock = this.#onBlock
    this.#onBlock = undefined
    if (onBlock !== undefined && this.#len > this.#seen) onBlock(this.#buf!.subarray(this.#seen, this.#len))
    this.#seen = this.#len
  }

  /** Takes `piece`; returns a promise only when the caller must wait (a buffer filled up). */
  write(piece: Uint8Array): Promise<void> | undefined {
    if (this.#failed) throw this.#error
    if (this.#len + piece.length < PipelinedWriter.CAPACITY) {
      this.#current().set(piece, this.#len)
      this.#len += piece.length
      return undefined
    }
    return this.#writeSlow(piece)
  }

  /** Writes out everything taken so far and waits for it. */
  async flush(): Promise<void> {
    if (this.#len > 0) await this.#handOff()
    await this.#inflight
    if (this.#failed) throw this.#error
  }

  /** Waits for a write in flight, ignoring its outcome (before closing the file on a failure path). */
  async settle(): Promise<void> {
    await this.#inflight
  }

  /**
   * Ends the writer (it takes no more pieces) and hands its buffers back to the pool: call it after
   * {@link flush} or {@link settle}. A buffer that a write may still be using is never pooled.
   */
  release(): void {
    this.#failed = true
    this.#error ??= new Error('PipelinedWriter is released')
    if (this.#inflight === undefined) {
      for (const b of [this.#buf, this.#spare]) if (b !== undefined) this.#pool?.give(b)
    }
    this.#buf = undefined
    this.#spare = undefined
    this.#len = 0
    this.#seen = 0
    this.#onBlock = undefined
  }

  #current(): Buffer {
    if (this.#buf === undefined) {
      this.#buf = this.#spare ?? this.#pool?.take() ?? Buffer.allocUnsafe(PipelinedWriter.CAPACITY)
      this.#spare = undefined
    }
    return this.#buf
  }

  async #writeSlow(piece: Uint8Array): Promise<void> {
    const cap = PipelinedWriter.CAPACITY
    let off = 0
    while (off < piece.length) {
      const n = Math.min(cap - this.#len, piece.length - off)
      this.#current().set(n === piece.length ? piece : piece.subarray(off, off + n), this.#len)
      this.#len += n
      off += n
      if (this.#len === cap) await this.#handOff()
    }
  }

  /** Starts writing the current buffer once the previous write is done; does not wait for it. */
  async #handOff(): Promise<void> {
    // Shown before waiting for the write in flight, so that the work overlaps it.
    if (this.#onBlock !== undefined && this.#len > this.#seen) this.#onBlock(this.#buf!.subarray(this.#seen, this.#len))
    this.#seen = 0
    await this.#inflight
    if (this.#failed) throw this.#error
    const buf = this.#buf!
    const len = this.#len
    this.#buf = undefined
    this.#len = 0
    this.#inflight = writeAll(this.#fh, buf.subarray(0, len)).then(
      () => {
        // A flush can finish the last write while an earlier buffer is already the spare.
        if (this.#spare === undefined) this.#spare = buf
        else this.#pool?.give(buf)
        this.#inflight = undefined
      },
      (e: unknown) => {
        this.#failed = true
        this.#error = e
        this.#inflight = undefined
      },
    )
  }
}

/** What a put writes through: {@link PipelinedWriter} or {@link GatherWriter}. @internal */
export interface PutWriter {
  /** Takes `piece`; returns a promise only when the caller must wait before the next one. */
  write(piece: Uint8Array): Promise<void> | undefined
  /** Stops showing pieces to `onBlock` (what follows, a trailer, is written but not shown). */
  seal(): void
  /** Writes out everything taken so far and waits for it. */
  flush(): Promise<void>
  /** Waits for a write in flight, ignoring its outcome. */
  settle(): Promise<void>
  /** Ends the writer (after {@link PutWriter.flush} or {@link PutWriter.settle}). */
  release(): void
}

/**
 * The writer of a put whose source hands its pieces over (`PutOptions.ownedPieces`: request
 * bodies, whose socket buffers are fresh for every read and never written again): no copy. Each
 * piece is shown to `onBlock` (hashed) as it is taken, then written as it is with one `writev` per
 * {@link PipelinedWriter.CAPACITY} bytes (or {@link GatherWriter.MAX_PIECES} pieces) gathered, one
 * write in flight while the next pieces gather. Holds at most one write's pieces plus the
 * gathering ones (about two capacities, at most twice that many pieces).
 *
 * Compared with {@link PipelinedWriter}: no copy of the body into the writer's buffers, no buffer
 * of its own to keep between puts, and the bytes are hashed while they are still in the cache the
 * socket read left them in. It relies on the pieces not changing once taken: a source that reuses
 * its buffer must use {@link PipelinedWriter}.
 * @internal
 */
export class GatherWriter implements PutWriter {
  /** Pieces gathered into one `writev` at most (Linux's IOV_MAX: one system call). */
  static readonly MAX_PIECES = 1024
  readonly #fh: FileHandle
  #onBlock: ((block: Uint8Array) => void) | undefined
  #pieces: Uint8Array[] = []
  #len = 0
  #inflight: Promise<void> | undefined
  #error: unknown = undefined
  #failed = false

  constructor(fh: FileHandle, onBlock?: (block: Uint8Array) => void) {
    this.#fh = fh
    this.#onBlock = onBlock
  }

  seal(): void {
    this.#onBlock = undefined
  }

  write(piece: Uint8Array): Promise<void> | undefined {
    if (this.#failed) throw this.#error
    this.#onBlock?.(piece)
    this.#pieces.push(piece)
    this.#len += piece.length
    // Also bounded in pieces: a client trickling 1-byte TCP segments must not make one upload
    // hold 256 Ki tiny Buffers (tens of MiB of heap) before its first write.
    if (this.#len < PipelinedWriter.CAPACITY && this.#pieces.length < GatherWriter.MAX_PIECES) return undefined
    return this.#handOff()
  }

  async flush(): Promise<void> {
    if (this.#len > 0) await this.#handOff()
    await this.#inflight
    if (this.#failed) throw this.#error
  }

  async settle(): Promise<void> {
    await this.#inflight
  }

  release(): void {
    this.#failed = true
    this.#error ??= new Error('GatherWriter is released')
    this.#pieces = []
    this.#len = 0
    this.#onBlock = undefined
  }

  /** Starts writing the gathered pieces once the previous write is done; does not wait for it. */
  async #handOff(): Promise<void> {
    await this.#inflight
    if (this.#failed) throw this.#error
    const pieces = this.#pieces
    this.#pieces = []
    this.#len = 0
    this.#inflight = writevAll(this.#fh, pieces).then(
      () => {
        this.#inflight = undefined
      },
      (e: unknown) => {
        this.#failed = true
        this.#error = e
        this.#inflight = undefined
      },
    )
  }
}

/**
 * Writes all of `pieces`, in order, at the current file position: one `writev` (the kernel takes
 * up to IOV_MAX pieces a call, libuv loops over the rest), again from where a short write stopped.
 * @internal
 */
export async function writevAll(fh: FileHandle, pieces: Uint8Array[]): Promise<void> {
  let rest = pieces
  for (;;) {
    if (rest.length === 1) return writeAll(fh, rest[0]!)
    let { bytesWritten } = await fh.writev(rest)
    let i = 0
    while (i < rest.length && bytesWritten >= rest[i]!.length) bytesWritten -= rest[i++]!.length
    if (i === rest.length) return
    const next = rest.slice(i)
    next[0] = next[0]!.subarray(bytesWritten)
    rest = next
  }
}

/** Writes all of `piece` at the current file position (loops over short writes). @internal */
export async function writeAll(fh: FileHandle, piece: Uint8Array): Promise<void> {
  let off = 0
  while (off < piece.length) {
    const { bytesWritten } = await fh.write(piece, off, piece.length - off)
    off += bytesWritten
  }
}

/** Positioned read of up to `len` bytes at `pos` into a fresh buffer; short only at end of file. @internal */
export async function readAt(fh: FileHandle, pos: number, len: number, checkOpen: () => void): Promise<Uint8Array> {
  const buf = Buffer.allocUnsafe(len)
  let got = 0
  try {
    while (got < len) {
      const { bytesRead } = await fh.read(buf, got, len - got, pos + got)
      if (bytesRead === 0) break
      got += bytesRead
    }
  } catch (e) {
    checkOpen() // a handle closed under us reports Closed, not EBADF
    throw e
  }
  return got === len ? buf : buf.subarray(0, got)
}
