/**
 * Bounded, lossy broadcast: the TypeScript form of tokio's `broadcast` channel with lag.
 *
 * @module
 */

import { abortReason, signalOf, waitUnlessAborted, type SignalOption, type WaitSettlers } from './abort.js'
import { ClosedError, RonUsageError } from '../errors.js'
import { noopMetrics } from '../metrics-sink.js'
import type { MetricsSink } from '../metrics-sink.js'
import { checkCapacity, Ring } from './ring.js'

/** Options of {@link Broadcast}. */
export interface BroadcastOptions {
  /** Topic name, the `topic` label of `bus_lagged_total`. @defaultValue 'bus' */
  name?: string
  /** Ring size per subscriber. */
  capacity: number
  /** Where `bus_lagged_total{topic}` goes. @defaultValue noopMetrics */
  metrics?: MetricsSink
}

/** Options of {@link Broadcast.subscribe}. */
export interface SubscribeOptions {
  /** Called by the async iterator when this subscriber missed `n` events (the iterator skips them). */
  onLag?: (n: number) => void
}

/** One result of {@link Subscription.recv}: a value, or how many events were missed. */
export type BroadcastRecv<T> = { value: T } | { lagged: number }

type Waiter<T> = WaitSettlers<BroadcastRecv<T>>

/**
 * One subscriber of a {@link Broadcast}: a private ring of the most recent events. When the
 * subscriber falls behind, the oldest events are dropped and its next `recv` returns
 * `{ lagged: n }` before continuing with what is left.
 */
export class Subscription<T> implements AsyncIterable<T> {
  readonly #ring: Ring<T>
  readonly #detachFromBus: (s: Subscription<T>) => void
  readonly #onLag: ((n: number) => void) | undefined
  readonly #lagMetric: () => void
  #lagged = 0
  #closed = false
  #waiter: Waiter<T> | undefined

  /** @internal Created by {@link Broadcast.subscribe}. */
  constructor(capacity: number, detach: (s: Subscription<T>) => void, lagMetric: () => void, options: SubscribeOptions) {
    this.#ring = new Ring<T>(capacity)
    this.#detachFromBus = detach
    this.#lagMetric = lagMetric
    this.#onLag = options.onLag
  }

  /** Events buffered and not yet received. */
  get depth(): number {
    return this.#ring.size
  }

  /** True once this subscription or its broadcast is closed. */
  get closed(): boolean {
    return this.#closed
  }

  /** @internal Delivers one event (called by the broadcast). */
  deliver(value: T): void {
    const w = this.#waiter
    if (w !== undefined && this.#lagged === 0) {
      this.#waiter = undefined
      w.resolve({ value })
      return
    }
    if (this.#ring.full) {
      this.#ring.shift()
      this.#lagged++
      this.#lagMetric()
    }
    this.#ring.push(value)
  }

  /** @internal Ends the subscription from the broadcast side: buffered events stay readable. */
  end(): void {
    this.#closed = true
    const w = this.#waiter
    if (w !== undefined) {
      this.#waiter = undefined
      w.reject(new ClosedError('broadcast closed'))
    }
  }

  /** Returns the next event, `{ lagged }` after a loss, or `undefined` when nothing is buffered. */
  tryRecv(): BroadcastRecv<T> | undefined {
    if (this.#lagged > 0) {
      const lagged = this.#lagged
      this.#lagged = 0
      return { lagged }
    }
    if (this.#ring.size > 0) return { value: this.#ring.shift() as T }
    return undefined
  }

  /**
   * Waits for the next event. Only one `recv` may wait at a time per subscription.
   *
   * @throws {@link ClosedError} when closed and everything buffered has been read.
   * @throws {@link CanceledError} (or the signal's reason) when `signal` aborts first.
   * @throws {@link RonUsageError} `RON_RECV_PENDING` when another `recv` is already waiting on this subscription.
   */
  recv(options?: SignalOption): Promise<BroadcastRecv<T>> {
    const signal = signalOf(options)
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    const ready = this.tryRecv()
    if (ready !== undefined) return Promise.resolve(ready)
    if (this.#closed) return Promise.reject(new ClosedError('broadcast subscription closed'))
    if (this.#waiter !== undefined) return Promise.reject(new RonUsageError('RON_RECV_PENDING', 'Subscription.recv: a recv is already pending'))
    return waitUnlessAborted<BroadcastRecv<T>>(signal, (w) => {
      this.#waiter = w
      return () => {
        if (this.#waiter === w) this.#waiter = undefined
      }
    })
  }

  /** Unsubscribes; buffered events are discarded and a pending `recv` rejects {@link ClosedError}. Idempotent. */
  close(): void {
    if (this.#closed && this.#ring.size === 0) {
      this.#detachFromBus(this)
      return
    }
    this.#ring.clear()
    this.#lagged = 0
    this.end()
    this.#detachFromBus(this)
  }

  /** Same as {@link Subscription.close}, for `using sub = bus.subscribe()`. */
  [Symbol.dispose](): void {
    this.close()
  }

  /** Same as {@link Subscription.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    this.close()
    return Promise.resolve()
  }

  /**
   * Yields values until the subscription or broadcast closes. Losses are reported to the `onLag`
   * option and skipped. Breaking out of the loop closes the subscription.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    try {
      for (;;) {
        let r: BroadcastRecv<T>
        try {
          r = await this.recv()
        } catch (e) {
          if (e instanceof ClosedError) return
          throw e
        }
        if ('lagged' in r) this.#onLag?.(r.lagged)
        else yield r.value
      }
    } finally {
      this.close()
    }
  }
}

/**
 * One producer, many subscribers, each with a bounded ring. {@link Broadcast.publish} never waits:
 * a slow subscriber loses its oldest events and is told how many it missed (counted in
 * `bus_lagged_total{topic}`).
 *
 * @example
 * ```ts
 * const bus = new Broadcast<string>({ name: 'registry', capacity: 1024 })
 * const sub = bus.subscribe()
 * bus.publish('updated')
 * const r = await sub.recv() // { value: 'updated' } or { lagged: n }
 * sub.close()
 * ```
 */
export class Broadcast<T> {
  readonly #name: string
  readonly #capacity: number
  readonly #metrics: MetricsSink
  readonly #subs = new Set<Subscription<T>>()
  #closed = false

  /** @throws RangeError when `capacity` is not a positive integer. */
  constructor(options: BroadcastOptions) {
    this.#name = options.name ?? 'bus'
    checkCapacity(options.capacity, `Broadcast(${this.#name})`)
    this.#capacity = options.capacity
    this.#metrics = options.metrics ?? noopMetrics
  }

  /** Topic name. */
  get name(): string {
    return this.#name
  }

  /** Ring size of each subscriber. */
  get capacity(): number {
    return this.#capacity
  }

  /** Number of live subscribers. */
  get subscribers(): number {
    return this.#subs.size
  }

  /** True after {@link Broadcast.close}. */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * Sends `value` to every current subscriber without waiting.
   * @returns the number of subscribers it was delivered to.
   * @throws {@link ClosedError} after {@link Broadcast.close}.
   */
  publish(value: T): number {
    if (this.#closed) throw new ClosedError(`broadcast ${this.#name} is closed`)
    for (const s of this.#subs) s.deliver(value)
    return this.#subs.size
  }

  /**
   * Adds a subscriber that sees every event published from now on.
   * @throws {@link ClosedError} after {@link Broadcast.close}.
   */
  subscribe(options: SubscribeOptions = {}): Subscription<T> {
    if (this.#closed) throw new ClosedError(`broadcast ${this.#name} is closed`)
    const labels = { topic: this.#name }
    const sub = new Subscription<T>(
      this.#capacity,
      (s) => this.#subs.delete(s),
      () => this.#metrics.inc('bus_lagged_total', labels),
      options,
    )
    this.#subs.add(sub)
    return sub
  }

  /** Ends every subscriber: each can still read what it buffered, then `recv` rejects {@link ClosedError}. Idempotent. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    for (const s of this.#subs) s.end()
    this.#subs.clear()
  }

  /** Same as {@link Broadcast.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close()
  }

  /** Same as {@link Broadcast.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    this.close()
    return Promise.resolve()
  }
}
