/**
 * The bounded work queue: the TypeScript form of the seeds' bounded `mpsc` + `try_send`.
 *
 * @module
 */

import { abortReason, signalOf, waitUnlessAborted, type SignalOption, type WaitSettlers } from './abort.js'
import { BusyError, ClosedError } from '../errors.js'
import { noopMetrics } from '../metrics-sink.js'
import type { MetricsSink } from '../metrics-sink.js'
import { checkCapacity, Ring } from './ring.js'

/** What a full queue does with a new item. */
export type OverflowPolicy = 'reject-new' | 'drop-oldest'

/** Options of {@link BoundedQueue}. */
export interface BoundedQueueOptions {
  /** Name used as the `queue` metric label and in errors. */
  name: string
  /** Maximum number of items held. */
  capacity: number
  /** `reject-new` throws {@link BusyError}; `drop-oldest` evicts the oldest item. @defaultValue 'reject-new' */
  overflow?: OverflowPolicy
  /** `retryAfterMs` hint carried by the {@link BusyError}. @defaultValue 1000 */
  retryAfterMs?: number
  /** Where `queue_depth` and `queue_dropped_total` go. @defaultValue noopMetrics */
  metrics?: MetricsSink
}

type Waiter<T> = WaitSettlers<T>

/**
 * A fixed-capacity FIFO queue. Producers never wait: {@link BoundedQueue.trySend} either enqueues,
 * evicts the oldest (`drop-oldest`) or throws {@link BusyError} (`reject-new`). Consumers wait with
 * {@link BoundedQueue.recv}, which is cancellable without losing items: an item is only ever handed
 * to a receiver whose signal has not aborted. O(1) ring buffer; reports `queue_depth{queue}`.
 *
 * @example
 * ```ts
 * const q = new BoundedQueue<Job>({ name: 'work', capacity: 512 })
 * q.trySend(job)               // throws BusyError when full
 * const next = await q.recv(signal)
 * q.close()                    // intake stops; recv drains the rest, then rejects ClosedError
 * ```
 */
export class BoundedQueue<T> {
  readonly #name: string
  readonly #ring: Ring<T>
  readonly #overflow: OverflowPolicy
  readonly #retryAfterMs: number
  readonly #metrics: MetricsSink
  readonly #labels: { queue: string }
  readonly #waiters = new Set<Waiter<T>>()
  #closed = false

  /** @throws RangeError when `capacity` is not a positive integer. */
  constructor(options: BoundedQueueOptions) {
    checkCapacity(options.capacity, `BoundedQueue(${options.name})`)
    this.#name = options.name
    this.#ring = new Ring<T>(options.capacity)
    this.#overflow = options.overflow ?? 'reject-new'
    this.#retryAfterMs = options.retryAfterMs ?? 1000
    this.#metrics = options.metrics ?? noopMetrics
    this.#labels = { queue: options.name }
    this.#metrics.set('queue_depth', this.#labels, 0)
  }

  /** The queue's name (metric label). */
  get name(): string {
    return this.#name
  }

  /** Maximum number of items held. */
  get capacity(): number {
    return this.#ring.capacity
  }

  /** Items currently held. */
  get depth(): number {
    return this.#ring.size
  }

  /** The overflow policy. */
  get overflow(): OverflowPolicy {
    return this.#overflow
  }

  /** True after {@link BoundedQueue.close}. */
  get closed(): boolean {
    return this.#closed
  }

  /** Number of receivers currently waiting in {@link BoundedQueue.recv}. */
  get waiting(): number {
    return this.#waiters.size
  }

  /**
   * Enqueues without waiting. Hands the item straight to a waiting receiver when there is one.
   *
   * @returns the evicted item for `drop-oldest` queues that were full, else `undefined`.
   * @throws {@link BusyError} at capacity on `reject-new` queues (`details.queue`, `retryAfterMs`).
   *   Not counted here: the service host counts every 429 it answers in `busy_rejections_total`.
   * @throws {@link ClosedError} after {@link BoundedQueue.close}.
   */
  trySend(item: T): T | undefined {
    if (this.#closed) throw new ClosedError(`queue ${this.#name} is closed`, { details: { queue: this.#name } })
    for (const w of this.#waiters) {
      // An aborted waiter has already left the set (its abort listener runs synchronously).
      this.#waiters.delete(w)
      w.resolve(item)
      return undefined
    }
    let evicted: T | undefined
    if (this.#ring.full) {
      if (this.#overflow === 'reject-new') {
        throw new BusyError(`queue ${this.#name} is full`, {
          details: { queue: this.#name },
          retryAfterMs: this.#retryAfterMs,
        })
      }
      evicted = this.#ring.shift()
      this.#metrics.inc('queue_dropped_total', this.#labels)
    }
    this.#ring.push(item)
    this.#gauge()
    return evicted
  }

  /** Takes the oldest item without waiting, or returns `undefined` when empty. */
  tryRecv(): T | undefined {
    if (this.#ring.size === 0) return undefined
    const item = this.#ring.shift() as T
    this.#gauge()
    return item
  }

  /**
   * Takes the oldest item, waiting for one if the queue is empty.
   *
   * @throws {@link CanceledError} (or the signal's own reason) when `signal` aborts first; no item
   *   is consumed in that case.
   * @throws {@link ClosedError} when the queue is closed and empty.
   */
  recv(options?: SignalOption): Promise<T> {
    const signal = signalOf(options)
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    if (this.#ring.size > 0) return Promise.resolve(this.tryRecv() as T)
    if (this.#closed) return Promise.reject(this.#closedError())
    return waitUnlessAborted<T>(signal, (w) => {
      this.#waiters.add(w)
      return () => this.#waiters.delete(w)
    })
  }

  /**
   * Stops intake: later {@link BoundedQueue.trySend} calls throw {@link ClosedError}; items already
   * queued are still delivered, then `recv` rejects with {@link ClosedError}. Idempotent.
   */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    // Waiters only exist while the queue is empty, so they will never get an item.
    for (const w of this.#waiters) w.reject(this.#closedError())
    this.#waiters.clear()
  }

  /** Same as {@link BoundedQueue.close}. */
  [Symbol.dispose](): void {
    this.close()
  }

  /** Same as {@link BoundedQueue.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    this.close()
    return Promise.resolve()
  }

  #closedError(): ClosedError {
    return new ClosedError(`queue ${this.#name} is closed`, { details: { queue: this.#name } })
  }

  #gauge(): void {
    this.#metrics.set('queue_depth', this.#labels, this.#ring.size)
  }
}
