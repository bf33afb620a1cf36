/**
 * Token bucket rate limiter with lazy refill.
 *
 * @module
 */

import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { RonUsageError } from '../errors.js'

/** Options of {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Maximum tokens held (burst size). */
  capacity: number
  /** Tokens added per second. */
  refillPerSec: number
  /** Time source (refill is computed lazily from `now()`, no interval timer). @defaultValue systemClock */
  clock?: Clock
  /** Tokens at creation. @defaultValue capacity */
  initial?: number
}

/**
 * A token bucket: `capacity` burst, `refillPerSec` sustained rate. Answers how long until the next
 * tokens ({@link TokenBucket.msUntil}, for `Retry-After`) and can wait for them
 * ({@link TokenBucket.take}, for pacing, e.g. repair bytes).
 *
 * @example
 * ```ts
 * const bucket = new TokenBucket({ capacity: 100, refillPerSec: 50 })
 * if (!bucket.tryTake()) throw new BusyError('rate limited', { retryAfterMs: bucket.msUntil() })
 * ```
 */
export class TokenBucket {
  readonly #capacity: number
  readonly #rate: number
  readonly #clock: Clock
  #tokens: number
  #last: number

  /** @throws RangeError when `capacity` or `refillPerSec` is not positive. */
  constructor(options: TokenBucketOptions) {
    if (!(options.capacity > 0)) throw new RonUsageError('RON_INVALID_OPTION', 'TokenBucket: capacity must be > 0')
    if (!(options.refillPerSec > 0)) throw new RonUsageError('RON_INVALID_OPTION', 'TokenBucket: refillPerSec must be > 0')
    this.#capacity = options.capacity
    this.#rate = options.refillPerSec / 1000
    this.#clock = options.clock ?? systemClock
    this.#tokens = Math.min(options.capacity, options.initial ?? options.capacity)
    this.#last = this.#clock.now()
  }

  /** Maximum tokens. */
  get capacity(): number {
    return this.#capacity
  }

  /** Tokens available now. */
  get available(): number {
    this.#refill()
    return this.#tokens
  }

  /** True when the bucket is full (a full bucket carries no state worth keeping). */
  get full(): boolean {
    return this.available >= this.#capacity
  }

  /** Takes `n` tokens if available now. @defaultValue n = 1 */
  tryTake(n = 1): boolean {
    this.#refill()
    if (this.#tokens + 1e-9 < n) return false
    this.#tokens = Math.max(0, this.#tokens - n)
    return true
  }

  /**
   * Milliseconds until `n` tokens are available (0 if they are now), rounded up. For `n` above
   * capacity this is the time to accumulate `n` tokens if the bucket could hold them.
   */
  msUntil(n = 1): number {
    this.#refill()
    const missing = n - this.#tokens
    return missing <= 1e-9 ? 0 : Math.ceil(missing / this.#rate)
  }

  /**
   * Waits on the clock until `n` tokens have been taken and returns the milliseconds waited.
   * Amounts above `capacity` are taken in steps of at most `capacity`. Waiters are not queued
   * fairly: concurrent takers race for refilled tokens.
   *
   * @throws {@link CanceledError} (or the signal's reason) when `signal` aborts; tokens taken in
   *   earlier steps are not returned.
   */
  async take(n: number, signal?: AbortSignal): Promise<number> {
    const start = this.#clock.now()
    let remaining = n
    while (remaining > 0) {
      const step = Math.min(remaining, this.#capacity)
      const wait = this.msUntil(step)
      if (wait > 0) await this.#clock.sleep(wait, signal)
      else if (signal?.aborted) await this.#clock.sleep(0, signal)
      if (this.tryTake(step)) remaining -= step
    }
    return this.#clock.now() - start
  }

  #refill(): void {
    const now = this.#clock.now()
    const elapsed = now - this.#last
    if (elapsed > 0) {
      this.#tokens = Math.min(this.#capacity, this.#tokens + elapsed * this.#rate)
      this.#last = now
    } else if (elapsed < 0) {
      // The wall clock stepped back: refill from now on instead of stalling for the size of the step.
      this.#last = now
    }
  }
}
