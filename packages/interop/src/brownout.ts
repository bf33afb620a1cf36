/**
 * The brownout sentinel (seed svc-interop §2): samples the error rate of webhook and upload
 * requests and the p95 latency of upstream calls, and watches the `work` queue. Any trigger turns
 * brownout on at once; it clears only after every signal has stayed below its (lower) clear level
 * for `holdMs` (hysteresis). While active, webhooks and uploads get 503 `Brownout` with
 * `Retry-After`; reads keep working.
 *
 * @module
 */

import type { Clock } from '@ron/core'

/** Brownout thresholds. */
export interface BrownoutThresholds {
  /** Turn brownout on/off entirely. @default true */
  enabled: boolean
  /** Error ratio of webhook/upload requests that triggers brownout. @default 0.01 */
  errorRatio: number
  /** Window of the error ratio. @default 300000 (5 min) */
  errorWindowMs: number
  /** Requests needed in the window before the ratio counts. @default 100 */
  minRequests: number
  /** Upstream p95 latency that triggers brownout. @default 500 */
  upstreamP95Ms: number
  /** Window of the upstream latency samples. @default 60000 */
  latencyWindowMs: number
  /** Samples needed before the p95 counts. @default 20 */
  minSamples: number
  /** Work-queue fill ratio above which brownout starts. @default 0.8 */
  queueRatio: number
  /** Clear levels are this fraction of the trigger levels. @default 0.5 */
  clearFactor: number
  /** How long every signal must stay below its clear level before brownout ends. @default 10000 */
  holdMs: number
  /** `Retry-After` of shed requests. @default 5000 */
  retryAfterMs: number
}

/** Why brownout is on. */
export type BrownoutTrigger = 'error_rate' | 'upstream_p95' | 'queue'

/** Snapshot from {@link BrownoutSentinel.status}. */
export interface BrownoutStatus {
  active: boolean
  /** Triggers seen at the last evaluation. */
  triggers: BrownoutTrigger[]
  errorRatio: number
  requests: number
  upstreamP95Ms: number | undefined
  queueRatio: number
  since: number | undefined
}

const BUCKETS = 30

/** Counts (requests, errors) over a sliding window of {@link BUCKETS} buckets. */
class WindowCounts {
  readonly #bucketMs: number
  readonly #req = new Array<number>(BUCKETS).fill(0)
  readonly #err = new Array<number>(BUCKETS).fill(0)
  #epoch = -1

  constructor(windowMs: number) {
    this.#bucketMs = Math.max(1, Math.floor(windowMs / BUCKETS))
  }

  add(now: number, error: boolean): void {
    const i = this.#advance(now)
    this.#req[i]!++
    if (error) this.#err[i]!++
  }

  sums(now: number): { requests: number; errors: number } {
    this.#advance(now)
    let requests = 0
    let errors = 0
    for (let i = 0; i < BUCKETS; i++) {
      requests += this.#req[i]!
      errors += this.#err[i]!
    }
    return { requests, errors }
  }

  #advance(now: number): number {
    const epoch = Math.floor(now / this.#bucketMs)
    if (this.#epoch < 0 || epoch < this.#epoch) {
      // First use, or the clock stepped back: start afresh.
      this.#req.fill(0)
      this.#err.fill(0)
    } else {
      for (let e = this.#epoch + 1; e <= Math.min(epoch, this.#epoch + BUCKETS); e++) {
        this.#req[e % BUCKETS] = 0
        this.#err[e % BUCKETS] = 0
      }
    }
    this.#epoch = epoch
    return epoch % BUCKETS
  }
}

/** The last `capacity` latency samples with their times. */
class LatencyRing {
  readonly #at: Float64Array
  readonly #ms: Float64Array
  #next = 0
  #size = 0

  constructor(capacity = 1024) {
    this.#at = new Float64Array(capacity)
    this.#ms = new Float64Array(capacity)
  }

  add(now: number, ms: number): void {
    this.#at[this.#next] = now
    this.#ms[this.#next] = ms
    this.#next = (this.#next + 1) % this.#at.length
    if (this.#size < this.#at.length) this.#size++
  }

  p95(now: number, windowMs: number, minSamples: number): number | undefined {
    const xs: number[] = []
    for (let i = 0; i < this.#size; i++) if (now - this.#at[i]! <= windowMs) xs.push(this.#ms[i]!)
    if (xs.length < minSamples) return undefined
    xs.sort((a, b) => a - b)
    return xs[Math.min(xs.length - 1, Math.ceil(0.95 * xs.length) - 1)]
  }
}

/** Options of {@link BrownoutSentinel}. */
export interface BrownoutSentinelOptions {
  thresholds: BrownoutThresholds
  clock: Clock
  /** Current fill of the `work` queue. */
  queue: () => { depth: number; capacity: number }
  /** Called on every change of the active state. */
  onChange?: (active: boolean, status: BrownoutStatus) => void
}

/**
 * Single writer: the request path records outcomes and the sentinel task evaluates; both run on
 * the event loop, so no lock is needed.
 *
 * @example
 * ```ts
 * const s = new BrownoutSentinel({ thresholds, clock, queue: () => ({ depth: pool.depth, capacity: pool.capacity }) })
 * if (s.shedding()) throw new BrownoutError('brownout', { retryAfterMs: 5000 })
 * ```
 */
export class BrownoutSentinel {
  #t: BrownoutThresholds
  readonly #clock: Clock
  readonly #queue: () => { depth: number; capacity: number }
  readonly #onChange: ((active: boolean, status: BrownoutStatus) => void) | undefined
  #counts: WindowCounts
  readonly #latency = new LatencyRing()
  #active = false
  #since: number | undefined
  #calmSince: number | undefined
  #last: BrownoutStatus

  constructor(options: BrownoutSentinelOptions) {
    this.#t = options.thresholds
    this.#clock = options.clock
    this.#queue = options.queue
    this.#onChange = options.onChange
    this.#counts = new WindowCounts(options.thresholds.errorWindowMs)
    this.#last = { active: false, triggers: [], errorRatio: 0, requests: 0, upstreamP95Ms: undefined, queueRatio: 0, since: undefined }
  }

  /** The thresholds in force. */
  get thresholds(): BrownoutThresholds {
    return this.#t
  }

  /** Swaps the thresholds (config reload); a new error window starts afresh. */
  setThresholds(t: BrownoutThresholds): void {
    if (t.errorWindowMs !== this.#t.errorWindowMs) this.#counts = new WindowCounts(t.errorWindowMs)
    this.#t = t
    this.evaluate()
  }

  /** True while brownout is on. */
  get active(): boolean {
    return this.#active
  }

  /** Records the outcome of a webhook or upload request (`error` = a 5xx of our own making). */
  recordRequest(error: boolean): void {
    this.#counts.add(this.#clock.now(), error)
  }

  /** Records the latency of one upstream call. */
  recordUpstream(ms: number): void {
    this.#latency.add(this.#clock.now(), ms)
  }

  /**
   * Whether a write (webhook, upload) should be shed now. Checks the queue immediately (a full
   * queue needs no sampling period to be seen) and otherwise the last evaluation.
   */
  shedding(): boolean {
    if (!this.#t.enabled) return false
    if (!this.#active && this.#queueRatio() > this.#t.queueRatio) this.evaluate()
    return this.#active
  }

  /** The last evaluation. */
  status(): BrownoutStatus {
    return { ...this.#last, triggers: [...this.#last.triggers] }
  }

  /** Samples every signal and updates the state (the sentinel task calls this periodically). */
  evaluate(): BrownoutStatus {
    const now = this.#clock.now()
    const t = this.#t
    const { requests, errors } = this.#counts.sums(now)
    const errorRatio = requests === 0 ? 0 : errors / requests
    const p95 = this.#latency.p95(now, t.latencyWindowMs, t.minSamples)
    const queueRatio = this.#queueRatio()
    const enough = requests >= t.minRequests
    const triggers: BrownoutTrigger[] = []
    if (enough && errorRatio >= t.errorRatio) triggers.push('error_rate')
    if (p95 !== undefined && p95 >= t.upstreamP95Ms) triggers.push('upstream_p95')
    if (queueRatio > t.queueRatio) triggers.push('queue')
    const calm =
      (!enough || errorRatio < t.errorRatio * t.clearFactor) &&
      (p95 === undefined || p95 < t.upstreamP95Ms * t.clearFactor) &&
      queueRatio <= t.queueRatio * t.clearFactor

    const was = this.#active
    if (!t.enabled) {
      this.#active = false
    } else if (triggers.length > 0) {
      this.#active = true
      this.#calmSince = undefined
    } else if (this.#active) {
      if (!calm) this.#calmSince = undefined
      else {
        this.#calmSince ??= now
        if (now - this.#calmSince >= t.holdMs) this.#active = false
      }
    }
    if (this.#active && !was) this.#since = now
    if (!this.#active) this.#since = undefined
    this.#last = { active: this.#active, triggers, errorRatio, requests, upstreamP95Ms: p95, queueRatio, since: this.#since }
    if (was !== this.#active) this.#onChange?.(this.#active, this.status())
    return this.status()
  }

  #queueRatio(): number {
    const q = this.#queue()
    return q.capacity === 0 ? 0 : q.depth / q.capacity
  }
}
