/**
 * Bounded, jittered retries for idempotent operations.
 *
 * @module
 */

import { abortReason, systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { RonError } from '../errors.js'
import { noopMetrics } from '../metrics-sink.js'
import type { MetricsSink } from '../metrics-sink.js'
import { systemRandom } from '../random.js'
import type { Random } from '../random.js'
import type { RetryBudget } from './retry-budget.js'

/** Options of {@link retry}. */
export interface RetryOptions {
  /** Total attempts including the first. @defaultValue 3 */
  tries?: number
  /** Lower bound of the first backoff. @defaultValue 50 */
  baseMinMs?: number
  /** Upper bound of the first backoff. @defaultValue 100 */
  baseMaxMs?: number
  /** Maximum backoff. @defaultValue 2000 */
  capMs?: number
  /** Whether an error may be retried. @defaultValue `e instanceof RonError && e.retryable` */
  shouldRetry?: (e: unknown) => boolean
  /** Shared budget that must grant every retry. */
  budget?: RetryBudget
  /** Time source for the sleeps. @defaultValue systemClock */
  clock?: Clock
  /** Jitter source. @defaultValue systemRandom */
  random?: Random
  /** Aborts the current attempt's signal and any backoff sleep. */
  signal?: AbortSignal
  /** Where `backoff_retries_total{op}` goes. @defaultValue noopMetrics */
  metrics?: MetricsSink
  /** Operation name for metrics. @defaultValue 'op' */
  op?: string
}

const NEVER = new AbortController().signal

/** The default retry predicate: a {@link RonError} whose `retryable` flag is set. */
export function isRetryable(e: unknown): boolean {
  return e instanceof RonError && e.retryable
}

/**
 * Calls `fn` up to `tries` times while it fails with a retryable error. **Only for idempotent
 * operations**: a retried write may be applied twice. Before retry `n` (1-based) it sleeps a delay
 * drawn uniformly in `[baseMinMs, baseMaxMs]` times `2^(n-1)`, capped at `capMs`; a larger
 * `retryAfterMs` on the error (e.g. a {@link BusyError}) is honoured, still capped.
 *
 * @returns the first successful result.
 * @throws the last error when attempts run out, the error is not retryable or the budget is spent.
 * @throws {@link CanceledError} (or the signal's reason) when `signal` aborts during a sleep.
 * @example
 * ```ts
 * const blob = await retry((attempt, signal) => client.get(addr, { signal }), { op: 'storage.get' })
 * ```
 */
export async function retry<T>(fn: (attempt: number, signal: AbortSignal) => Promise<T>, policy: RetryOptions = {}): Promise<T> {
  const tries = Math.max(1, policy.tries ?? 3)
  const baseMin = policy.baseMinMs ?? 50
  const baseMax = Math.max(baseMin, policy.baseMaxMs ?? 100)
  const cap = policy.capMs ?? 2000
  const shouldRetry = policy.shouldRetry ?? isRetryable
  const clock = policy.clock ?? systemClock
  const random = policy.random ?? systemRandom
  const signal = policy.signal ?? NEVER
  const metrics = policy.metrics ?? noopMetrics
  const op = policy.op ?? 'op'
  policy.budget?.recordRequest()
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) throw abortReason(signal)
    try {
      return await fn(attempt, signal)
    } catch (e) {
      if (attempt >= tries || signal.aborted || !shouldRetry(e)) throw e
      if (policy.budget && !policy.budget.tryRetry()) {
        metrics.inc('retry_budget_exhausted_total', { op })
        throw e
      }
      const base = baseMin + random.next() * (baseMax - baseMin)
      let delay = Math.min(cap, base * 2 ** (attempt - 1))
      const hint = e instanceof RonError ? e.retryAfterMs : undefined
      if (hint !== undefined && hint > delay) delay = Math.min(cap, hint)
      metrics.inc('backoff_retries_total', { op })
      await clock.sleep(delay, signal)
    }
  }
}
