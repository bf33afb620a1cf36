/**
 * A sleep that another task can cut short: a planner sleeps until its next tick, and a read that
 * finds urgent work wakes it early.
 *
 * @module
 */

import { systemClock, type Clock } from '../clock.js'
import { waitUnlessAborted } from './abort.js'

/**
 * A sleep on an injectable clock that {@link WakeableSleep.wake} can end early. A `wake()` while
 * nobody sleeps is remembered and ends the next sleep at once (so a wake-up is never lost between
 * two sleeps).
 *
 * @example
 * ```ts
 * const tick = new WakeableSleep(clock)
 * supervisor.spawn('planner', async (signal) => {
 *   for (;;) { await plan(signal); await tick.sleep(30_000, signal) }
 * })
 * onCorruptRead(() => tick.wake())
 * ```
 */
export class WakeableSleep {
  readonly #clock: Clock
  #wake: (() => void) | undefined
  #pending = false

  /** @param clock - @default systemClock */
  constructor(clock: Clock = systemClock) {
    this.#clock = clock
  }

  /** Ends the current sleep now, or the next one at once when nobody sleeps. */
  wake(): void {
    if (this.#wake !== undefined) this.#wake()
    else this.#pending = true
  }

  /**
   * Sleeps `ms`, or less when woken.
   * @throws the signal's reason ({@link CanceledError} by default) when `signal` aborts.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (!signal?.aborted && this.#pending) {
      this.#pending = false
      return Promise.resolve()
    }
    return waitUnlessAborted<void>(signal, (w) => {
      const end = (): void => {
        this.#clock.clearTimeout(timer)
        this.#wake = undefined
        w.resolve()
      }
      const timer = this.#clock.setTimeout(end, ms)
      timer.unref?.()
      this.#wake = end
      return () => {
        this.#clock.clearTimeout(timer)
        this.#wake = undefined
      }
    })
  }
}
