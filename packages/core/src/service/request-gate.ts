/**
 * The service-wide request limits of the base config (`http.maxInflight`, `http.maxRps`): over
 * either → 429 Busy with `details.reason` `max_inflight` or `max_rps`. The host admits every
 * matched request through it, after the per-IP admission; a streamed reply holds its admission
 * until its body ends.
 *
 * @module
 */

import type { Clock } from '../clock.js'
import { BusyError } from '../errors.js'
import { TokenBucket } from '../resilience/token-bucket.js'

/** Limits of a {@link RequestGate}; `undefined` = unlimited. @internal */
export interface GateLimits {
  maxInflight: number | undefined
  maxRps: number | undefined
}

/** Service-wide concurrency and rate limits, swapped live on reload. @internal */
export class RequestGate {
  #limits: GateLimits
  #inflight = 0
  #bucket: TokenBucket | undefined
  readonly #clock: Clock
  readonly #release = (): void => {
    this.#inflight--
  }

  constructor(limits: GateLimits, clock: Clock) {
    this.#clock = clock
    this.#limits = limits
    this.#bucket = bucketFor(limits.maxRps, clock)
  }

  /** Whether any limit is set (an unlimited gate is skipped on the hot path). */
  get active(): boolean {
    return this.#limits.maxInflight !== undefined || this.#bucket !== undefined
  }

  /** Requests in progress. */
  get inflight(): number {
    return this.#inflight
  }

  /** Swaps the limits (live reload); requests in progress keep their admission. */
  configure(limits: GateLimits): void {
    if (limits.maxRps !== this.#limits.maxRps) this.#bucket = bucketFor(limits.maxRps, this.#clock)
    this.#limits = limits
  }

  /**
   * Admits one request; the returned release must be called exactly once.
   * @throws {@link BusyError} when a limit is reached (`details.reason` `max_inflight` or `max_rps`).
   */
  admit(): () => void {
    const max = this.#limits.maxInflight
    if (max !== undefined && this.#inflight >= max) {
      throw new BusyError(`more than ${max} requests in progress`, { details: { reason: 'max_inflight', limit: max }, retryAfterMs: 1000 })
    }
    if (this.#bucket !== undefined && !this.#bucket.tryTake()) {
      throw new BusyError(`more than ${this.#limits.maxRps} requests per second`, {
        details: { reason: 'max_rps', limit: this.#limits.maxRps },
        retryAfterMs: Math.max(1, this.#bucket.msUntil()),
      })
    }
    this.#inflight++
    return this.#release
  }
}

function bucketFor(rps: number | undefined, clock: Clock): TokenBucket | undefined {
  return rps === undefined ? undefined : new TokenBucket({ capacity: rps, refillPerSec: rps, clock })
}
