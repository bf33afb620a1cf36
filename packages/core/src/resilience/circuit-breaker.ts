/**
 * Circuit breaker over a rolling error ratio.
 *
 * @module
 */

import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { BreakerOpenError, CanceledError } from '../errors.js'
import { noopMetrics } from '../metrics-sink.js'
import type { MetricsSink } from '../metrics-sink.js'
import { WindowedCounter } from './windowed-counter.js'

/** Breaker state. */
export type BreakerState = 'closed' | 'open' | 'half-open'

/** Emitted by {@link CircuitBreaker.onStateChange}. */
export interface BreakerStateChange {
  type: 'breaker:opened' | 'breaker:half-opened' | 'breaker:closed'
  from: BreakerState
  to: BreakerState
  breaker: string
}

/** Serialisable snapshot from {@link CircuitBreaker.toJSON}. */
export interface BreakerSnapshot {
  name: string
  state: BreakerState
  calls: number
  failures: number
  /** Virtual/real time the breaker last opened, when open or half-open. */
  openedAt?: number
  /** Time left in the cooldown, when open. */
  retryAfterMs?: number
  /** Probes in flight, when half-open. */
  probes?: number
}

/** Options of {@link CircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Name: the `breaker` metric label and `details.breaker`. @defaultValue 'breaker' */
  name?: string
  /** Rolling window of the error ratio. @defaultValue 10000 */
  windowMs?: number
  /** Calls needed in the window before the breaker may open. @defaultValue 10 */
  minCalls?: number
  /** Failure ratio at or above which it opens. @defaultValue 0.5 */
  errorRatio?: number
  /** Time open before probing. @defaultValue 5000 */
  cooldownMs?: number
  /** Concurrent probes admitted when half-open; all must succeed to close. @defaultValue 1 */
  halfOpenProbes?: number
  /**
   * Which errors count as failures. Other errors are ignored: neither a failure nor a success (a
   * canceled half-open probe does not close the breaker). @defaultValue every error except {@link CanceledError}
   */
  isFailure?: (e: unknown) => boolean
  /** Time source (cooldown is checked lazily, no timers). @defaultValue systemClock */
  clock?: Clock
  /** Where `breaker_state{target}` (0 closed, 1 open, 2 half-open) goes. @defaultValue noopMetrics */
  metrics?: MetricsSink
}

/** SPEC.md section 4: 0 closed, 1 open, 2 half-open. */
const GAUGE: Record<BreakerState, number> = { closed: 0, open: 1, 'half-open': 2 }
const CALLS = 0
const FAILURES = 1

type Outcome = 'ok' | 'fail' | 'ignore'

/**
 * Closed → Open when, over the rolling window, at least `minCalls` calls were made and the failure
 * ratio reached `errorRatio`; Open → Half-open once `cooldownMs` has passed (checked lazily on the
 * clock); Half-open admits `halfOpenProbes` concurrent probes: all succeeding closes it, one
 * failure reopens it.
 *
 * @example
 * ```ts
 * const breaker = new CircuitBreaker({ name: 'peer-a' })
 * const v = await breaker.execute((signal) => peer.get(key, { signal }))
 * ```
 */
export class CircuitBreaker {
  readonly #name: string
  readonly #minCalls: number
  readonly #ratio: number
  readonly #cooldownMs: number
  readonly #probes: number
  readonly #isFailure: (e: unknown) => boolean
  readonly #clock: Clock
  readonly #metrics: MetricsSink
  readonly #window: WindowedCounter
  readonly #listeners = new Set<(e: BreakerStateChange) => void>()
  #state: BreakerState = 'closed'
  #openedAt = 0
  #generation = 0
  #probesInFlight = 0
  #probeSuccesses = 0

  constructor(options: CircuitBreakerOptions = {}) {
    this.#name = options.name ?? 'breaker'
    this.#minCalls = options.minCalls ?? 10
    this.#ratio = options.errorRatio ?? 0.5
    this.#cooldownMs = options.cooldownMs ?? 5000
    this.#probes = Math.max(1, options.halfOpenProbes ?? 1)
    this.#isFailure = options.isFailure ?? ((e) => !(e instanceof CanceledError))
    this.#clock = options.clock ?? systemClock
    this.#metrics = options.metrics ?? noopMetrics
    this.#window = new WindowedCounter(options.windowMs ?? 10_000, 2)
    this.#metrics.set('breaker_state', { target: this.#name }, 0)
  }

  /** The breaker's name. */
  get name(): string {
    return this.#name
  }

  /** Current state (an open breaker whose cooldown passed reads as `half-open`). */
  get state(): BreakerState {
    this.#tick()
    return this.#state
  }

  /**
   * Runs `fn` if the breaker admits it and records the outcome.
   *
   * @throws {@link BreakerOpenError} while open (`retryAfterMs` = cooldown left) or when half-open
   *   and all probe slots are taken; `fn` is not called.
   * @throws whatever `fn` throws.
   */
  async execute<T>(fn: (signal?: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    this.#tick()
    if (this.#state === 'open') throw this.#openError(this.#cooldownMs - (this.#clock.now() - this.#openedAt))
    const probe = this.#state === 'half-open'
    if (probe) {
      if (this.#probesInFlight >= this.#probes) throw this.#openError(0)
      this.#probesInFlight++
    }
    const generation = this.#generation
    let outcome: Outcome
    try {
      const v = await fn(signal)
      outcome = 'ok'
      return v
    } catch (e) {
      // An error that is not the upstream's fault (by default a cancellation: the caller gave up,
      // e.g. a hedged request that lost) says nothing about health: it is neither success nor failure.
      outcome = this.#isFailure(e) ? 'fail' : 'ignore'
      throw e
    } finally {
      if (probe && generation === this.#generation) this.#probesInFlight--
      this.#record(outcome!, probe && generation === this.#generation)
    }
  }

  /** Subscribes to state changes. @returns a disposer. */
  onStateChange(fn: (e: BreakerStateChange) => void): () => void {
    this.#listeners.add(fn)
    return () => {
      this.#listeners.delete(fn)
    }
  }

  /** A JSON-safe snapshot of the breaker. */
  toJSON(): BreakerSnapshot {
    const now = this.#clock.now()
    this.#tick()
    const snap: BreakerSnapshot = {
      name: this.#name,
      state: this.#state,
      calls: this.#window.sum(now, CALLS),
      failures: this.#window.sum(now, FAILURES),
    }
    if (this.#state !== 'closed') snap.openedAt = this.#openedAt
    if (this.#state === 'open') snap.retryAfterMs = Math.max(0, this.#cooldownMs - (now - this.#openedAt))
    if (this.#state === 'half-open') snap.probes = this.#probesInFlight
    return snap
  }

  /** Forces the breaker closed and clears its window. */
  reset(): void {
    this.#window.reset()
    this.#transition('closed')
  }

  #record(outcome: Outcome, isCurrentProbe: boolean): void {
    if (outcome === 'ignore') return // a probe's slot was already freed; it may be retried
    const now = this.#clock.now()
    if (isCurrentProbe) {
      if (outcome === 'fail') {
        this.#open(now)
        return
      }
      this.#probeSuccesses++
      if (this.#probeSuccesses >= this.#probes) {
        this.#window.reset()
        this.#transition('closed')
      }
      return
    }
    if (this.#state !== 'closed') return // results of calls admitted before the breaker opened
    this.#window.add(now, CALLS)
    if (outcome === 'fail') {
      this.#window.add(now, FAILURES)
      const calls = this.#window.sum(now, CALLS)
      if (calls >= this.#minCalls && this.#window.sum(now, FAILURES) / calls >= this.#ratio) this.#open(now)
    }
  }

  #open(now: number): void {
    this.#openedAt = now
    this.#transition('open')
  }

  #tick(): void {
    if (this.#state !== 'open') return
    const now = this.#clock.now()
    // The wall clock stepped back (NTP, VM resume): restart the cooldown from now rather than
    // staying open for the size of the step.
    if (now < this.#openedAt) this.#openedAt = now
    if (now - this.#openedAt >= this.#cooldownMs) this.#transition('half-open')
  }

  #transition(to: BreakerState): void {
    const from = this.#state
    this.#generation++
    this.#probesInFlight = 0
    this.#probeSuccesses = 0
    if (from === to) return
    this.#state = to
    this.#metrics.set('breaker_state', { target: this.#name }, GAUGE[to])
    const type = to === 'open' ? 'breaker:opened' : to === 'half-open' ? 'breaker:half-opened' : 'breaker:closed'
    const e: BreakerStateChange = { type, from, to, breaker: this.#name }
    for (const fn of [...this.#listeners]) {
      try {
        fn(e)
      } catch {
        // Observers must not break the breaker.
      }
    }
  }

  #openError(retryAfterMs: number): BreakerOpenError {
    const ms = Math.max(0, Math.ceil(retryAfterMs))
    return new BreakerOpenError(`breaker ${this.#name} is open`, { details: { breaker: this.#name }, retryAfterMs: ms })
  }
}
