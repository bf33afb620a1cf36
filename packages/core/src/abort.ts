/**
 * Waiting unless aborted, in one place (as cockatiel's `common/abort.ts`): every primitive that
 * waits (`BoundedQueue.recv`, `Subscription.recv`, `Watch.changed`, `Clock.sleep`,
 * `WakeableSleep`, the transports) goes through these helpers, so each one checks the signal
 * first, rejects with the same error, and removes its listener in exactly one place.
 *
 * @module
 */

import { setMaxListeners } from 'node:events'
import { CanceledError } from './errors.js'

/** The error to reject with when `signal` aborted: its reason if it is an Error, else a CanceledError. */
export function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason
  if (r instanceof Error && r.name !== 'AbortError') return r
  return new CanceledError('operation canceled', r === undefined ? {} : { cause: r })
}

/** Settles a wait started by {@link waitUnlessAborted}. */
export interface WaitSettlers<T> {
  readonly resolve: (value: T) => void
  readonly reject: (reason: Error) => void
}

/**
 * Starts a wait that also ends when `signal` aborts. `start` receives the settlers and returns an
 * optional `cancel` function, called (once) only if the signal wins, to undo the registration
 * (remove the waiter from a set, clear a timer). The abort listener is removed however the wait
 * ends. An already-aborted signal rejects at once without calling `start`.
 *
 * @returns a promise settled by the first of: `resolve`, `reject`, the signal's abort.
 * @example
 * ```ts
 * recv(signal?: AbortSignal): Promise<T> {
 *   return waitUnlessAborted<T>(signal, (w) => {
 *     this.#waiters.add(w)
 *     return () => this.#waiters.delete(w)
 *   })
 * }
 * ```
 */
export function waitUnlessAborted<T>(signal: AbortSignal | undefined, start: (w: WaitSettlers<T>) => (() => void) | void): Promise<T> {
  if (signal?.aborted) return Promise.reject(abortReason(signal))
  return new Promise<T>((resolve, reject) => {
    let done = false
    let cancel: (() => void) | void = undefined
    const onAbort = (): void => {
      if (done) return
      done = true
      cancel?.()
      reject(abortReason(signal!))
    }
    const finish = (): boolean => {
      if (done) return false
      done = true
      signal?.removeEventListener('abort', onAbort)
      return true
    }
    cancel = start({
      resolve: (v) => {
        if (finish()) resolve(v)
      },
      reject: (e) => {
        if (finish()) reject(e)
      },
    })
    if (!done) signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * Settles with `p`, or rejects with the signal's reason when it aborts first. `onLoser` receives
 * `p`'s value if it arrives after the abort (to release what it holds, e.g. a response body).
 * The listener is removed when `p` settles.
 */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined, onLoser?: (value: T) => void): Promise<T> {
  if (signal === undefined) return p
  if (signal.aborted) {
    p.then(onLoser ?? (() => undefined), () => undefined)
    return Promise.reject(abortReason(signal))
  }
  let aborted = false
  const result = waitUnlessAborted<T>(signal, (w) => {
    p.then(
      (v) => {
        if (aborted) onLoser?.(v)
        else w.resolve(v)
      },
      (e: unknown) => w.reject(e instanceof Error ? e : new Error(String(e))),
    )
    return () => {
      aborted = true
    }
  })
  return result
}

/**
 * Calls `fn` once when `signal` aborts (at once if it already has).
 * @returns a disposer that removes the listener.
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn()
    return () => {}
  }
  signal.addEventListener('abort', fn, { once: true })
  return () => signal.removeEventListener('abort', fn)
}

/** A signal that aborts when either of two signals does, and the disposer of its listeners. */
export interface LinkedSignal {
  /** Aborts (with the first source's reason) when either source aborts. */
  readonly signal: AbortSignal
  /** Detaches from both sources; call it when the signal is no longer needed. Idempotent. */
  dispose(): void
}

const NOOP = (): void => {}

/** Long-lived sources whose listener-count warning is already lifted. */
const lifted = new WeakSet<AbortSignal>()

/**
 * Links two signals into one that aborts when either does: `AbortSignal.any` for the common
 * case of a short-lived operation under a long-lived one, without its cost. `AbortSignal.any`
 * must track its sources through weak references so that nothing leaks without a disposer; on
 * Node 20 that makes it several times dearer than a plain controller with two listeners, and a
 * request path that combines signals two or three times paid it on every request. Here the
 * caller owns the link and calls `dispose()` when the operation ends (the listeners on a
 * long-lived source would otherwise accumulate). `a` is the long-lived source: it may carry many
 * links at once (one per request in flight), so Node's listener-count warning is lifted for it.
 * When `b` is absent, the same as `a`, or either source has already aborted, no new signal is made.
 *
 * @example
 * ```ts
 * const link = linkSignals(serviceSignal, req.signal)
 * try {
 *   await work(link.signal)
 * } finally {
 *   link.dispose()
 * }
 * ```
 */
export function linkSignals(a: AbortSignal, b: AbortSignal | undefined): LinkedSignal {
  if (b === undefined || b === a || a.aborted) return { signal: a, dispose: NOOP }
  if (b.aborted) return { signal: b, dispose: NOOP }
  if (!lifted.has(a)) {
    setMaxListeners(0, a)
    lifted.add(a)
  }
  const ac = new AbortController()
  const dispose = (): void => {
    a.removeEventListener('abort', onA)
    b.removeEventListener('abort', onB)
  }
  const onA = (): void => {
    dispose()
    ac.abort(a.reason)
  }
  const onB = (): void => {
    dispose()
    ac.abort(b.reason)
  }
  a.addEventListener('abort', onA, { once: true })
  b.addEventListener('abort', onB, { once: true })
  return { signal: ac.signal, dispose }
}

/** What a waiting method accepts: a signal, or an options object carrying one. */
export type SignalOption = AbortSignal | { signal?: AbortSignal | undefined } | undefined

/** The signal in a {@link SignalOption}. */
export function signalOf(o: SignalOption): AbortSignal | undefined {
  if (o === undefined) return undefined
  if (o instanceof AbortSignal) return o
  return o.signal
}
