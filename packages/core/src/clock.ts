/**
 * Injectable time. Everything in RON that waits, times out or measures takes a {@link Clock}, so
 * tests can run on virtual time (`VirtualClock` in `@ron/core/testing`) instead of sleeping.
 *
 * @module
 */

import { abortReason, waitUnlessAborted } from './abort.js'

export { abortReason }

/** An opaque timer handle returned by {@link Clock.setTimeout}. */
export interface TimerHandle {
  /** Lets the process exit while the timer is pending (no-op on virtual clocks). */
  unref?(): unknown
}

/** Source of time and timers. */
export interface Clock {
  /** Milliseconds on a monotonic-enough scale (wall-clock epoch ms for {@link systemClock}). */
  now(): number
  /** Calls `fn` after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle
  /** Cancels a pending timer; unknown or fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void
  /**
   * Resolves after `ms` milliseconds; rejects with the signal's reason (a `CanceledError` unless
   * the signal carries its own) when `signal` aborts first. Leaves no timer or listener behind.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

/** Builds `sleep` from `setTimeout`/`clearTimeout`; shared by the real and virtual clocks. */
export function sleepWith(clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>, ms: number, signal?: AbortSignal): Promise<void> {
  return waitUnlessAborted<void>(signal, (w) => {
    const handle = clock.setTimeout(() => w.resolve(), Math.max(0, ms))
    return () => clock.clearTimeout(handle)
  })
}

/** The real clock: `Date.now()` and unref'ed Node timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms)
    t.unref()
    return t
  },
  clearTimeout(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>)
  },
  sleep(ms, signal) {
    return sleepWith(systemClock, ms, signal)
  },
}
