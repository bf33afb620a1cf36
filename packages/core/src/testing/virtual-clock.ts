/**
 * A {@link Clock} whose time only moves when a test says so.
 *
 * @module
 */

import { sleepWith } from '../clock.js'
import type { Clock, TimerHandle } from '../clock.js'
import { RonUsageError } from '../errors.js'

interface VirtualTimer extends TimerHandle {
  readonly id: number
  readonly at: number
  readonly fn: () => void
}

/** Lets every queued microtask (and promise chain built from microtasks) run. */
function flushMicrotasks(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve))
}

/**
 * Virtual time for tests: `now()` starts at `start` and moves only through {@link VirtualClock.advance}
 * or {@link VirtualClock.runAll}. Timers fire in deadline order (ties in creation order) and
 * microtasks run between timers, so `await`-chains triggered by one timer settle before the next
 * fires.
 *
 * @example
 * ```ts
 * const clock = new VirtualClock()
 * const slept = clock.sleep(1000)
 * await clock.advance(1000) // slept is now resolved, no real time passed
 * ```
 */
export class VirtualClock implements Clock {
  #now: number
  #seq = 0
  readonly #timers = new Map<number, VirtualTimer>()

  /** @param start - initial value of `now()` in milliseconds. @defaultValue 0 */
  constructor(start = 0) {
    this.#now = start
  }

  /** Current virtual time in milliseconds. */
  now(): number {
    return this.#now
  }

  /** Schedules `fn` at `now() + ms` of virtual time. */
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: VirtualTimer = {
      id: ++this.#seq,
      at: this.#now + Math.max(0, Number.isFinite(ms) ? ms : 0),
      fn,
      unref() {
        return this
      },
    }
    this.#timers.set(timer.id, timer)
    return timer
  }

  /** Cancels a pending timer; unknown or fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void {
    const id = (handle as Partial<VirtualTimer>).id
    if (id !== undefined) this.#timers.delete(id)
  }

  /** Resolves after `ms` of virtual time; rejects when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal)
  }

  /** Number of timers not yet fired or cleared. A leak check after `close()` expects 0. */
  get pending(): number {
    return this.#timers.size
  }

  /** Deadline of the earliest pending timer, or `undefined` when none is pending. */
  get nextAt(): number | undefined {
    return this.#next()?.at
  }

  /** Lets pending microtasks run without moving time. */
  async flush(): Promise<void> {
    await flushMicrotasks()
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, in order, with
   * microtasks running between timers (so timers scheduled by a fired callback also fire if due).
   */
  async advance(ms: number): Promise<void> {
    const target = this.#now + Math.max(0, ms)
    await flushMicrotasks()
    for (;;) {
      const t = this.#next()
      if (t === undefined || t.at > target) break
      this.#fire(t)
      await flushMicrotasks()
    }
    this.#now = target
    await flushMicrotasks()
  }

  /** Advances to `at` (absolute virtual time); no-op if `at` is in the past. */
  async advanceTo(at: number): Promise<void> {
    await this.advance(Math.max(0, at - this.#now))
  }

  /**
   * Fires timers until none is pending, jumping time to each deadline.
   * @param limit - maximum number of timers to fire, to stop runaway rescheduling. @defaultValue 10000
   * @throws Error when `limit` timers fired and more are pending.
   * @returns the number of timers fired.
   */
  async runAll(limit = 10_000): Promise<number> {
    let fired = 0
    await flushMicrotasks()
    for (;;) {
      const t = this.#next()
      if (t === undefined) return fired
      if (fired >= limit) throw new RonUsageError('RON_TIMER_LIMIT', `VirtualClock.runAll: more than ${limit} timers fired`)
      this.#now = Math.max(this.#now, t.at)
      this.#fire(t)
      fired++
      await flushMicrotasks()
    }
  }

  #fire(t: VirtualTimer): void {
    this.#timers.delete(t.id)
    this.#now = Math.max(this.#now, t.at)
    t.fn()
  }

  #next(): VirtualTimer | undefined {
    let best: VirtualTimer | undefined
    for (const t of this.#timers.values()) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.id < best.id)) best = t
    }
    return best
  }
}
