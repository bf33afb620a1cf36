/**
 * The breaker table: one core `CircuitBreaker` per peer index plus its observed latencies. Its
 * single writer is the breaker janitor (seed I-2): it creates and retires entries when the peer
 * list changes (start, reload) and publishes `breaker_state{target}`; resolver workers only read
 * entries and run calls through them.
 *
 * @module
 */

import { CircuitBreaker, CanceledError, isRonError, noopMetrics } from '@ron/core'
import type { BreakerState, Clock, MetricsSink } from '@ron/core'
import type { ResolvedIndexConfig } from './config.js'

/** SPEC §4 encoding of `breaker_state{target}`: 0 closed, 1 open, 2 half-open. */
export const BREAKER_GAUGE: Readonly<Record<BreakerState, number>> = { closed: 0, open: 1, 'half-open': 2 }

const LATENCY_SAMPLES = 64

/** A peer's breaker and latency record. */
export class PeerHealth {
  readonly target: string
  readonly breaker: CircuitBreaker
  readonly #samples: number[] = []
  #next = 0
  #ewmaMs: number | undefined

  constructor(target: string, breaker: CircuitBreaker) {
    this.target = target
    this.breaker = breaker
  }

  /** Records the latency of a completed call (an answer, found or not). */
  observe(ms: number): void {
    if (this.#samples.length < LATENCY_SAMPLES) this.#samples.push(ms)
    else this.#samples[this.#next] = ms
    this.#next = (this.#next + 1) % LATENCY_SAMPLES
    this.#ewmaMs = this.#ewmaMs === undefined ? ms : 0.8 * this.#ewmaMs + 0.2 * ms
  }

  /** Smoothed latency, or `undefined` before the first answer. */
  get latencyMs(): number | undefined {
    return this.#ewmaMs
  }

  /** The 95th percentile of the recent latencies, or `undefined` before the first answer. */
  get p95Ms(): number | undefined {
    if (this.#samples.length === 0) return undefined
    const sorted = [...this.#samples].sort((a, b) => a - b)
    return sorted[Math.min(sorted.length - 1, Math.floor(0.95 * sorted.length))]
  }

  /** Health factor for ranking: 1 closed, 0.5 half-open, 0 open. */
  get health(): number {
    const s = this.breaker.state
    return s === 'closed' ? 1 : s === 'half-open' ? 0.5 : 0
  }
}

/** Errors that say something about a peer's health (a cancellation because another peer won does not). */
export function isPeerFailure(e: unknown): boolean {
  if (e instanceof CanceledError) return false
  if (isRonError(e)) return e.status >= 500 || e.code === 'Busy' || e.code === 'RequestTimeout'
  return true
}

/** The table of peer breakers. */
export class BreakerTable {
  #entries = new Map<string, PeerHealth>()
  /** The breaker settings the current entries were built with (`cfg.breaker`, serialised). */
  #settings: string | undefined
  readonly #clock: Clock
  readonly #metrics: MetricsSink

  constructor(clock: Clock, metrics: MetricsSink) {
    this.#clock = clock
    this.#metrics = metrics
  }

  /** The entry of `target`, if it is a configured peer. */
  get(target: string): PeerHealth | undefined {
    return this.#entries.get(target)
  }

  /** Every entry, in configuration order. */
  all(): PeerHealth[] {
    return [...this.#entries.values()]
  }

  /**
   * Janitor only: makes the table match `cfg.peers.targets` (existing breakers keep their state;
   * breakers of removed peers are retired and their gauge reset), then publishes every gauge.
   * Changed breaker settings (`cfg.breaker`, on reload) rebuild every breaker with them, closed:
   * a core breaker's thresholds are fixed when it is made.
   */
  sync(cfg: ResolvedIndexConfig): void {
    const settings = JSON.stringify(cfg.breaker)
    const keep = settings === this.#settings
    this.#settings = settings
    const next = new Map<string, PeerHealth>()
    for (const target of cfg.peers.targets) {
      next.set(target, (keep ? this.#entries.get(target) : undefined) ?? this.#create(target, cfg))
    }
    for (const [target] of this.#entries) {
      if (!next.has(target)) this.#metrics.set('breaker_state', { target }, BREAKER_GAUGE.closed)
    }
    this.#entries = next // one swap: readers see the old table or the new one
    this.publish()
  }

  /** Janitor only: publishes `breaker_state{target}` (lazy open → half-open transitions become visible). */
  publish(): void {
    for (const e of this.#entries.values()) this.#metrics.set('breaker_state', { target: e.target }, BREAKER_GAUGE[e.breaker.state])
  }

  #create(target: string, cfg: ResolvedIndexConfig): PeerHealth {
    const breaker = new CircuitBreaker({
      name: target,
      windowMs: cfg.breaker.windowMs,
      minCalls: cfg.breaker.minCalls,
      errorRatio: cfg.breaker.tripRatio,
      cooldownMs: cfg.breaker.cooldownMs,
      halfOpenProbes: cfg.breaker.halfOpenProbes,
      isFailure: isPeerFailure,
      clock: this.#clock,
      // The index publishes `breaker_state{target}` itself, in SPEC's encoding.
      metrics: noopMetrics,
    })
    breaker.onStateChange((e) => {
      if (e.to === 'open') this.#metrics.inc('breaker_open_total', { target })
      this.#metrics.set('breaker_state', { target }, BREAKER_GAUGE[e.to])
    })
    return new PeerHealth(target, breaker)
  }
}
