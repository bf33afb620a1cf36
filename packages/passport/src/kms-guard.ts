/**
 * Every KMS call goes through here: a deadline (default 3 s) that holds even when the KMS ignores
 * its signal, no retry, latency and timeout metrics, and a health signal that turns the `issue`
 * path unready while the KMS is failing (seed svc-passport sections 5 and 13).
 *
 * @module
 */

import { CircuitBreaker, NotReadyError, TimeoutError, abortReason, diskFaultReason, isRonError, toDiskFault, type Clock, type MetricsSink } from '@ron/core'
import type { Kms } from './kms.js'

/** KMS operations, the `op` label of `kms_call_latency_seconds`. */
export type KmsOp = 'generate' | 'import' | 'sign' | 'list' | 'destroy'

/** Options of {@link KmsGuard}. */
export interface KmsGuardOptions {
  kms: Kms
  /** Deadline of every call. */
  timeoutMs: number
  clock: Clock
  metrics: MetricsSink
  /** Told after every call whether the KMS is healthy (a timeout or failure → false). */
  onHealth?: (ok: boolean, reason?: string) => void
  /**
   * Breaker on the sign path (seed section 5, optional): after enough failures or timeouts in
   * its window it opens, and issuance fails fast with 503 `BreakerOpen` instead of waiting out
   * the deadline; half-open probes close it again. `undefined` = no breaker.
   */
  breaker?: { windowMs: number; minCalls: number; errorRatio: number; cooldownMs: number } | undefined
}

const isDiskFault = (e: unknown): boolean => isRonError(e, 'NotReady') && ['disk_full', 'io_error', 'read_only'].includes(e.details['reason'] as string)

/** The KMS behind a deadline. @internal */
export class KmsGuard {
  readonly kms: Kms
  readonly timeoutMs: number
  readonly #clock: Clock
  readonly #metrics: MetricsSink
  readonly #onHealth: ((ok: boolean, reason?: string) => void) | undefined
  readonly #breaker: CircuitBreaker | undefined

  constructor(o: KmsGuardOptions) {
    this.kms = o.kms
    this.timeoutMs = o.timeoutMs
    this.#clock = o.clock
    this.#metrics = o.metrics
    this.#onHealth = o.onHealth
    if (o.breaker !== undefined) {
      this.#breaker = new CircuitBreaker({
        name: 'kms',
        ...o.breaker,
        clock: o.clock,
        metrics: o.metrics,
        // An unknown kid is the caller's problem, not the KMS failing.
        isFailure: (e) => !isRonError(e, 'NotFound') && !isRonError(e, 'Canceled') && !isDiskFault(e),
      })
      this.#breaker.onStateChange((e) => {
        if (e.to === 'open') this.#onHealth?.(false, 'kms_breaker_open')
      })
    }
  }

  /** State of the sign-path breaker (`closed` without one). */
  get breakerState(): 'closed' | 'open' | 'half-open' {
    return this.#breaker?.state ?? 'closed'
  }

  /**
   * Runs one KMS call under the deadline. Never retries.
   * @throws {@link TimeoutError} (504, `details.op: 'kms'`) past the deadline
   * @throws {@link NotReadyError} (503, `details.reason: 'kms_failing'`) when the KMS fails
   * @throws {@link BreakerOpenError} (503) for `sign` while the breaker is open
   * @throws the caller's abort reason when `signal` aborts first
   */
  call<T>(op: KmsOp, fn: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (op === 'sign' && this.#breaker !== undefined) return this.#breaker.execute(() => this.#call(op, fn, signal), signal)
    return this.#call(op, fn, signal)
  }

  async #call<T>(op: KmsOp, fn: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    // A caller that already gave up costs no KMS call.
    if (signal?.aborted) throw abortReason(signal)
    const ac = new AbortController()
    const started = this.#clock.now()
    let timedOut = false
    let rejectRace: ((e: unknown) => void) | undefined
    const race = new Promise<never>((_, reject) => {
      rejectRace = reject
    })
    const timer = this.#clock.setTimeout(() => {
      timedOut = true
      const e = new TimeoutError(`KMS ${op} exceeded its ${this.timeoutMs} ms deadline`, { details: { op: 'kms', call: op, timeoutMs: this.timeoutMs } })
      ac.abort(e)
      rejectRace?.(e)
    }, this.timeoutMs)
    timer.unref?.()
    const onAbort = (): void => {
      ac.abort(signal?.reason)
      rejectRace?.(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      const result = await Promise.race([fn(ac.signal), race])
      this.#onHealth?.(true)
      return result
    } catch (e) {
      if (timedOut) {
        this.#metrics.inc('io_timeouts_total', { op: 'kms' })
        this.#onHealth?.(false, 'kms_timeout')
        throw ac.signal.reason as Error
      }
      if (signal?.aborted) throw e
      // An unknown kid is the caller's problem, not the KMS failing (as the breaker counts it).
      if (isRonError(e, 'NotFound')) throw e
      // The file keystore on a full or failing disk: a disk fault (503 with the disk's reason), not the KMS failing.
      if (diskFaultReason(e) !== undefined) throw toDiskFault(e, 'passport key store')
      this.#onHealth?.(false, 'kms_failing')
      throw new NotReadyError(`KMS ${op} failed`, { details: { reason: 'kms_failing', call: op }, cause: e, retryAfterMs: 1000 })
    } finally {
      this.#clock.clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      this.#metrics.observe('kms_call_latency_seconds', { op }, (this.#clock.now() - started) / 1000)
    }
  }
}
