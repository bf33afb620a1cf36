/**
 * Deadlines: run an operation with a time limit and a cancellation signal.
 *
 * @module
 */

import { abortReason, systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { TimeoutError } from '../errors.js'
import { noopMetrics } from '../metrics-sink.js'
import type { MetricsSink } from '../metrics-sink.js'

/** Options of {@link withDeadline}. */
export interface DeadlineOptions {
  /** Time source. @defaultValue systemClock */
  clock?: Clock
  /** Operation name: `details.op` of the {@link TimeoutError} and the `op` label of `io_timeouts_total`. @defaultValue 'op' */
  op?: string
  /** Caller cancellation; aborting it rejects with {@link CanceledError} (or the signal's reason). */
  signal?: AbortSignal
  /** Where `io_timeouts_total{op}` goes. @defaultValue noopMetrics */
  metrics?: MetricsSink
}

/**
 * Runs `fn` with a deadline: `deadline` is a number of milliseconds or a signal whose abort means
 * "time is up". Whichever comes first wins: `fn`'s result, the deadline ({@link TimeoutError}) or
 * the caller's `opts.signal` ({@link CanceledError}); in the last two cases the signal given to `fn`
 * aborts with that same error. The timer and listeners are removed in every case.
 *
 * @throws {@link TimeoutError} when the deadline passes first (counted in `io_timeouts_total{op}`).
 * @throws {@link CanceledError} when `opts.signal` aborts first.
 * @example
 * ```ts
 * const body = await withDeadline(5000, (signal) => fetchBlob(addr, signal), { op: 'fetch' })
 * ```
 */
export function withDeadline<T>(deadline: number | AbortSignal, fn: (signal: AbortSignal) => Promise<T>, opts: DeadlineOptions = {}): Promise<T> {
  const clock = opts.clock ?? systemClock
  const op = opts.op ?? 'op'
  const parent = opts.signal
  if (parent?.aborted) return Promise.reject(abortReason(parent))
  const inner = new AbortController()
  return new Promise<T>((resolve, reject) => {
    let done = false
    let timer: ReturnType<Clock['setTimeout']> | undefined
    const deadlineSignal = typeof deadline === 'number' ? undefined : deadline
    const cleanup = (): void => {
      done = true
      if (timer !== undefined) clock.clearTimeout(timer)
      parent?.removeEventListener('abort', onCancel)
      deadlineSignal?.removeEventListener('abort', onTimeout)
    }
    const fail = (e: Error): void => {
      if (done) return
      cleanup()
      inner.abort(e)
      reject(e)
    }
    function onTimeout(): void {
      if (done) return
      ;(opts.metrics ?? noopMetrics).inc('io_timeouts_total', { op })
      fail(new TimeoutError(`${op}: deadline exceeded`, { details: { op } }))
    }
    function onCancel(): void {
      fail(abortReason(parent!))
    }
    if (deadlineSignal) {
      if (deadlineSignal.aborted) {
        onTimeout()
        return
      }
      deadlineSignal.addEventListener('abort', onTimeout, { once: true })
    } else {
      timer = clock.setTimeout(onTimeout, Math.max(0, deadline as number))
      timer.unref?.()
    }
    parent?.addEventListener('abort', onCancel, { once: true })
    let p: Promise<T>
    try {
      p = fn(inner.signal)
    } catch (e) {
      // Propagate exactly what fn threw, Error or not.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      p = Promise.reject(e)
    }
    p.then(
      (v) => {
        if (done) return
        cleanup()
        resolve(v)
      },
      (e: unknown) => {
        if (done) return
        cleanup()
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(e)
      },
    )
  })
}

/** A signal that aborts after a delay, see {@link deadlineSignal}. */
export interface DeadlineSignal {
  /** Aborts with a {@link TimeoutError} at the deadline, or with the parent's reason. */
  readonly signal: AbortSignal
  /** Clears the timer and the parent listener; call it in `finally`. Idempotent. */
  dispose(): void
}

/**
 * A signal that aborts with {@link TimeoutError} after `ms` on `clock`, or earlier when `parent`
 * aborts. Dispose it when the operation ends so no timer is left behind.
 *
 * @example
 * ```ts
 * const d = deadlineSignal(5000)
 * try { await fetch(url, { signal: d.signal }) } finally { d.dispose() }
 * ```
 */
export function deadlineSignal(ms: number, clock: Clock = systemClock, parent?: AbortSignal): DeadlineSignal {
  const ac = new AbortController()
  if (parent?.aborted) {
    ac.abort(abortReason(parent))
    return { signal: ac.signal, dispose() {} }
  }
  const onParent = (): void => {
    dispose()
    ac.abort(abortReason(parent!))
  }
  const timer = clock.setTimeout(() => {
    dispose()
    ac.abort(new TimeoutError('deadline exceeded', { details: { ms } }))
  }, Math.max(0, ms))
  timer.unref?.()
  parent?.addEventListener('abort', onParent, { once: true })
  let disposed = false
  function dispose(): void {
    if (disposed) return
    disposed = true
    clock.clearTimeout(timer)
    parent?.removeEventListener('abort', onParent)
  }
  return { signal: ac.signal, dispose }
}
