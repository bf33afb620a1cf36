/**
 * Shared retry budget (Finagle / gRPC style).
 *
 * @module
 */

import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { WindowedCounter } from './windowed-counter.js'

/** Options of {@link RetryBudget}. */
export interface RetryBudgetOptions {
  /** Retries allowed per request over the window. @defaultValue 0.1 */
  ratio?: number
  /** Retries always allowed per second of window, so low traffic can still retry. @defaultValue 10 */
  minPerSec?: number
  /** Length of the rolling window. @defaultValue 10000 */
  windowMs?: number
  /** Time source. @defaultValue systemClock */
  clock?: Clock
}

/**
 * Caps retries across many callers so that retries cannot amplify an outage: a retry is allowed
 * only while `retries + 1 <= ratio * requests + minPerSec * windowSeconds` over the rolling window.
 * Share one budget per downstream dependency.
 *
 * @example
 * ```ts
 * const budget = new RetryBudget({ ratio: 0.2 })
 * await retry((n, signal) => client.get(addr, { signal }), { budget })
 * ```
 */
export class RetryBudget {
  readonly #ratio: number
  readonly #reserve: number
  readonly #clock: Clock
  readonly #window: WindowedCounter

  constructor(options: RetryBudgetOptions = {}) {
    const windowMs = options.windowMs ?? 10_000
    this.#ratio = options.ratio ?? 0.1
    this.#reserve = (options.minPerSec ?? 10) * (windowMs / 1000)
    this.#clock = options.clock ?? systemClock
    this.#window = new WindowedCounter(windowMs, 2)
  }

  /** Records one original (non-retry) request. */
  recordRequest(): void {
    this.#window.add(this.#clock.now(), 0)
  }

  /** Takes one retry from the budget; false when the budget is spent (do not retry). */
  tryRetry(): boolean {
    const now = this.#clock.now()
    const requests = this.#window.sum(now, 0)
    const retries = this.#window.sum(now, 1)
    if (retries + 1 > this.#ratio * requests + this.#reserve) return false
    this.#window.add(now, 1)
    return true
  }

  /** Retries currently allowed before the budget is spent. */
  get available(): number {
    const now = this.#clock.now()
    return Math.max(0, Math.floor(this.#ratio * this.#window.sum(now, 0) + this.#reserve - this.#window.sum(now, 1)))
  }
}
