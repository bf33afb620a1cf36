/**
 * Last-write-wins cell with change notification (tokio's `watch`).
 *
 * @module
 */

import { abortReason, signalOf, waitUnlessAborted, type SignalOption, type WaitSettlers } from './abort.js'
import { ClosedError } from '../errors.js'

type Waiter<T> = WaitSettlers<T>

/**
 * A last-write-wins cell for config snapshots and shutdown flags. Readers take the current snapshot
 * with {@link Watch.get} (store immutable values: a reader holds either the old or the new object,
 * never a mix) and can await the next change.
 *
 * @example
 * ```ts
 * const shutdown = new Watch(false)
 * void shutdown.changed().then(() => console.log('stopping'))
 * shutdown.set(true)
 * ```
 */
export class Watch<T> {
  #value: T
  #version = 0
  #closed = false
  readonly #listeners = new Set<(v: T) => void>()
  readonly #waiters = new Set<Waiter<T>>()

  /** @param initial - the first snapshot (version 0). */
  constructor(initial: T) {
    this.#value = initial
  }

  /** The current snapshot. */
  get(): T {
    return this.#value
  }

  /** Incremented by every {@link Watch.set}. */
  get version(): number {
    return this.#version
  }

  /** True after {@link Watch.close}. */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * Replaces the snapshot, wakes every `changed()` waiter and calls every subscriber. A throwing
   * subscriber does not stop the others; the first error is rethrown after all were called.
   * @throws {@link ClosedError} after {@link Watch.close}.
   */
  set(value: T): void {
    if (this.#closed) throw new ClosedError('watch is closed')
    this.#value = value
    this.#version++
    const waiters = [...this.#waiters]
    this.#waiters.clear()
    for (const w of waiters) w.resolve(value)
    let first: { e: unknown } | undefined
    for (const fn of [...this.#listeners]) {
      try {
        fn(value)
      } catch (e) {
        first ??= { e }
      }
    }
    if (first) throw first.e
  }

  /**
   * Resolves with the value of the next {@link Watch.set} after this call.
   * @throws {@link CanceledError} (or the signal's reason) when `signal` aborts first.
   * @throws {@link ClosedError} when the watch is or becomes closed.
   */
  changed(options?: SignalOption): Promise<T> {
    const signal = signalOf(options)
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    if (this.#closed) return Promise.reject(new ClosedError('watch is closed'))
    return waitUnlessAborted<T>(signal, (w) => {
      this.#waiters.add(w)
      return () => this.#waiters.delete(w)
    })
  }

  /** Calls `fn` with each new value (not the current one). @returns a disposer that unsubscribes. */
  subscribe(fn: (value: T) => void): () => void {
    const wrapped = (v: T): void => fn(v)
    this.#listeners.add(wrapped)
    return () => {
      this.#listeners.delete(wrapped)
    }
  }

  /** Number of subscribers and waiters (for leak checks). */
  get listenerCount(): number {
    return this.#listeners.size + this.#waiters.size
  }

  /** Rejects pending `changed()` with {@link ClosedError}, drops subscribers; `get()` keeps working. Idempotent. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    for (const w of this.#waiters) w.reject(new ClosedError('watch is closed'))
    this.#waiters.clear()
    this.#listeners.clear()
  }

  /** Same as {@link Watch.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close()
  }

  /** Same as {@link Watch.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    this.close()
    return Promise.resolve()
  }
}
