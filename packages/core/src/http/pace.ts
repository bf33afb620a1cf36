/**
 * Slow-client rules of a request body (SPEC.md 4 "Slow clients"), on top of the gap timeout
 * between chunks: a minimum average rate over a sliding window, and a whole-request deadline.
 * Both count from the first read of the body (a request waiting in a work queue is not the
 * client's fault), and only while the host is reading: time the host paused the body because
 * its consumer was busy (backpressure) is not held against the client. Either rule failing is
 * `408 RequestTimeout` (the client was too slow), with `details.reason` `min_rate` or `deadline`.
 *
 * @module
 */

import type { Clock } from '../clock.js'
import { RequestTimeoutError, type RonError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'

/** Buckets of the sliding window of the rate rule. */
const BUCKETS = 10

/** The slow-client limits of request bodies (part of the host's HTTP limits). @internal */
export interface PaceLimits {
  /** Minimum average body rate over `rateWindowMs`, bytes/s. */
  minBytesPerSec: number
  /** Window of the rate rule; the rule applies once a body has been read this long. */
  rateWindowMs: number
  /** Whole-request deadline of a body (extended for large bodies, see {@link bodyDeadlineMs}). */
  requestTimeoutMs: number
}

/**
 * The deadline of a body of `expectedBytes` (its `Content-Length`, or the most the route
 * accepts): `requestTimeoutMs` plus the time that many bytes take at the minimum rate. So a small
 * body (a webhook, a JSON call) has about `requestTimeoutMs`, and a large upload as long as it
 * needs at `minBytesPerSec`. `undefined` (no deadline, the rate rule alone) when nothing bounds
 * the body's size.
 *
 * @example
 * ```ts
 * bodyDeadlineMs(2048, { minBytesPerSec: 8192, rateWindowMs: 10_000, requestTimeoutMs: 10_000 }) // 10250
 * bodyDeadlineMs(2 ** 30, { minBytesPerSec: 8192, rateWindowMs: 30_000, requestTimeoutMs: 30_000 }) // 131102000
 * ```
 */
export function bodyDeadlineMs(expectedBytes: number | undefined, l: PaceLimits): number | undefined {
  if (expectedBytes === undefined || !Number.isFinite(expectedBytes)) return undefined
  return l.requestTimeoutMs + Math.ceil((expectedBytes / l.minBytesPerSec) * 1000)
}

/** Told once when a body has been read for one check period without ending. @internal */
export interface SlowBodyOwner {
  /** Returns an error to fail the body with (its principal already has its share of lingering bodies). */
  bodyLingers(): RonError | undefined
}

/**
 * One body's pace: bytes counted into {@link BUCKETS} buckets over the rate window, on a clock
 * that stops while the host is not reading. The readers call {@link BodyPace.add} per chunk and
 * {@link BodyPace.check} from their timer; both return the failure (once) instead of throwing.
 * A body still arriving after one check period is *lingering*: the pace tells its owner once
 * ({@link SlowBodyOwner.bodyLingers}), which may refuse it (the per-principal share of lingering
 * bodies, `shares.ts`); a body read at line speed never counts.
 * The buckets are allocated only for a body that is still arriving after one bucket's time, so a
 * body read at once costs a few numbers.
 *
 * @internal
 */
export class BodyPace {
  readonly #metrics: MetricsSink | undefined
  readonly #deadlineMs: number | undefined
  readonly #windowMs: number
  readonly #minRate: number
  readonly #start: number
  /** Time not counted (the host was not reading). */
  #excluded = 0
  /** When the host stopped reading, or -1 while it reads. A pace starts stopped: the reader's first read starts it. */
  #stoppedAt: number
  #total = 0
  #counts: Float64Array | undefined = undefined
  #lastIdx = 0
  #failure: RonError | undefined = undefined
  readonly #owner: SlowBodyOwner | undefined
  #lingering = false

  constructor(limits: PaceLimits, expectedBytes: number | undefined, clock: Clock, metrics: MetricsSink | undefined, owner?: SlowBodyOwner) {
    this.#owner = owner
    // A snapshot: a reload applies to bodies read from then on.
    this.#windowMs = limits.rateWindowMs
    this.#minRate = limits.minBytesPerSec
    this.#deadlineMs = bodyDeadlineMs(expectedBytes, limits)
    this.#metrics = metrics
    this.#start = clock.now()
    this.#stoppedAt = this.#start
  }

  /** The deadline of this body in ms of reading time, `undefined` for none. */
  get deadlineMs(): number | undefined {
    return this.#deadlineMs
  }

  /** How often a reader waiting for the client should call {@link check}. */
  get checkEveryMs(): number {
    return Math.max(1, Math.floor(this.#windowMs / BUCKETS))
  }

  /** The failure, once a rule failed (or the owner refused the lingering body). */
  get failure(): RonError | undefined {
    return this.#failure
  }

  /** Reading time so far: wall time since the first read minus the time the host was not reading. */
  elapsed(now: number): number {
    const stopped = this.#stoppedAt >= 0 ? now - this.#stoppedAt : 0
    return now - this.#start - this.#excluded - stopped
  }

  /** The host stops reading (its consumer is busy): the time until {@link go} is not counted. */
  stop(now: number): void {
    if (this.#stoppedAt < 0) this.#stoppedAt = now
  }

  /** The host reads (again). Readers call this when they start reading. */
  go(now: number): void {
    if (this.#stoppedAt < 0) return
    this.#excluded += now - this.#stoppedAt
    this.#stoppedAt = -1
  }

  /** Counts `n` bytes received now and checks the rules. */
  add(n: number, now: number): RonError | undefined {
    if (this.#failure !== undefined) return this.#failure
    const elapsed = this.elapsed(now)
    this.#total += n
    const bucketMs = this.#windowMs / BUCKETS
    if (this.#counts === undefined) {
      // Everything so far arrived within the first bucket: nothing to keep apart yet.
      if (elapsed < bucketMs) return this.#deadlineMs !== undefined && elapsed >= this.#deadlineMs ? this.#check(elapsed) : undefined
      const refused = this.#lingers()
      if (refused !== undefined) return refused
      this.#counts = new Float64Array(BUCKETS)
      this.#counts[0] = this.#total - n
    }
    const idx = Math.floor(elapsed / bucketMs)
    this.#advance(idx)
    this.#counts[idx % BUCKETS]! += n
    return this.#check(elapsed)
  }

  /** Checks the rules now (from a reader's timer while it waits for the client). */
  check(now: number): RonError | undefined {
    if (this.#failure !== undefined) return this.#failure
    const elapsed = this.elapsed(now)
    if (elapsed >= this.#windowMs / BUCKETS) {
      const refused = this.#lingers()
      if (refused !== undefined) return refused
    }
    return this.#check(elapsed)
  }

  /** Tells the owner, once, that this body lingers; its refusal becomes the failure. */
  #lingers(): RonError | undefined {
    if (this.#lingering) return undefined
    this.#lingering = true
    const refused = this.#owner?.bodyLingers()
    if (refused !== undefined) this.#failure = refused
    return refused
  }

  #check(elapsed: number): RonError | undefined {
    if (this.#deadlineMs !== undefined && elapsed >= this.#deadlineMs) {
      return this.#fail('deadline', `request body not received within ${this.#deadlineMs} ms`, { deadlineMs: this.#deadlineMs, received: this.#total })
    }
    if (elapsed < this.#windowMs) return undefined
    const bucketMs = this.#windowMs / BUCKETS
    if (this.#counts === undefined) {
      this.#counts = new Float64Array(BUCKETS)
      this.#counts[0] = this.#total
    }
    const idx = Math.floor(elapsed / bucketMs)
    this.#advance(idx)
    let sum = 0
    for (let i = 0; i < BUCKETS; i++) sum += this.#counts[i]!
    // The buckets cover from the start of the oldest one to now.
    const coveredMs = elapsed - (idx - BUCKETS + 1) * bucketMs
    const rate = (sum * 1000) / coveredMs
    if (rate >= this.#minRate) return undefined
    return this.#fail('min_rate', `request body slower than ${this.#minRate} bytes/s over ${this.#windowMs} ms`, {
      minBytesPerSec: this.#minRate,
      windowMs: this.#windowMs,
      bytesPerSec: Math.floor(rate),
      received: this.#total,
    })
  }

  #advance(idx: number): void {
    const counts = this.#counts!
    for (let j = this.#lastIdx + 1; j <= idx && j <= this.#lastIdx + BUCKETS; j++) counts[j % BUCKETS] = 0
    if (idx > this.#lastIdx) this.#lastIdx = idx
  }

  #fail(reason: 'min_rate' | 'deadline', message: string, details: Record<string, unknown>): RequestTimeoutError {
    this.#metrics?.inc('io_timeouts_total', { op: reason === 'min_rate' ? 'read_rate' : 'read_deadline' })
    const failure = new RequestTimeoutError(message, { details: { op: 'read', reason, ...details } })
    this.#failure = failure
    return failure
  }
}
