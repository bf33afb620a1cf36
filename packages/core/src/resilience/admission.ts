/**
 * Per-key (per-IP) admission control.
 *
 * @module
 */

import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { BusyError } from '../errors.js'
import { TokenBucket } from './token-bucket.js'

/** Options of {@link Admission}. */
export interface AdmissionOptions {
  /** Name, the `endpoint` label of `busy_rejections_total`. @defaultValue 'admission' */
  name?: string
  /** Concurrent admissions per key. @defaultValue 256 */
  maxConcurrentPerKey?: number
  /** Optional per-key rate limit. */
  rate?: { capacity: number; refillPerSec: number }
  /** Keys tracked at most; idle keys are forgotten beyond this. @defaultValue 10000 */
  maxKeys?: number
  /** `retryAfterMs` for concurrency rejections. @defaultValue 1000 */
  retryAfterMs?: number
  /** Time source for the buckets. @defaultValue systemClock */
  clock?: Clock
}

/** Set by {@link Admission}'s static block: its private `#enter`, for {@link holdAdmission}. */
let enterAdmission: (a: Admission, key: string) => Entry

interface Entry {
  active: number
  bucket: TokenBucket | undefined
  /** When the key was last admitted (a sequence number): least recently used first on eviction. */
  used: number
  /** One slot for the holder (see {@link AdmissionHold}): what it keeps per key rather than per request. */
  memo: unknown
}

/**
 * A per-key gate: at most `maxConcurrentPerKey` concurrent admissions per key plus an optional
 * per-key token bucket. Memory is bounded: at most `maxKeys` keys are tracked; when a new key
 * finds them all taken, idle keys with a full (or no) bucket are forgotten first, then the least
 * recently used idle keys (their bucket restarts full), and if every key is busy the new key is
 * rejected. Idle keys are not forgotten earlier: a client sending one request at a time would
 * otherwise delete and re-insert its key on every request.
 *
 * @example
 * ```ts
 * const gate = new Admission({ maxConcurrentPerKey: 256, rate: { capacity: 50, refillPerSec: 20 } })
 * const release = gate.acquire(remoteIp) // throws BusyError
 * try { await handle(req) } finally { release() }
 * ```
 */
export class Admission {
  readonly #name: string
  readonly #maxConcurrent: number
  readonly #rate: { capacity: number; refillPerSec: number } | undefined
  readonly #maxKeys: number
  readonly #retryAfterMs: number
  readonly #clock: Clock
  readonly #keys = new Map<string, Entry>()
  #tick = 0

  constructor(options: AdmissionOptions = {}) {
    this.#name = options.name ?? 'admission'
    this.#maxConcurrent = options.maxConcurrentPerKey ?? 256
    this.#rate = options.rate
    this.#maxKeys = options.maxKeys ?? 10_000
    this.#retryAfterMs = options.retryAfterMs ?? 1000
    this.#clock = options.clock ?? systemClock
  }

  /** Number of keys currently tracked. */
  get size(): number {
    return this.#keys.size
  }

  /** Admissions in flight for `key`. */
  active(key: string): number {
    return this.#keys.get(key)?.active ?? 0
  }

  /**
   * Admits one unit of work for `key`.
   *
   * @returns an idempotent release function; call it in `finally`.
   * @throws {@link BusyError} when `key` is at its concurrent cap, out of rate tokens
   *   (`retryAfterMs` from the bucket) or when `maxKeys` busy keys are already tracked.
   */
  acquire(key: string): () => void {
    const e = this.#enter(key)
    let released = false
    return () => {
      if (released) return
      released = true
      // An idle key stays (it is forgotten when maxKeys is reached): deleting it here made a client
      // sending one request at a time delete and re-insert its key on every request.
      e.active--
    }
  }

  static {
    enterAdmission = (a, key) => a.#enter(key)
  }

  /** Admits one unit for `key` (see {@link Admission.acquire}) and returns its entry. */
  #enter(key: string): Entry {
    let entry = this.#keys.get(key)
    if (entry === undefined) {
      if (this.#keys.size >= this.#maxKeys) this.#evict()
      if (this.#keys.size >= this.#maxKeys) throw this.#busy(key, 'too many keys', 'too_many_keys', this.#retryAfterMs)
      entry = { active: 0, bucket: this.#rate ? new TokenBucket({ ...this.#rate, clock: this.#clock }) : undefined, used: 0, memo: undefined }
      this.#keys.set(key, entry)
    }
    // Recency as a sequence number rather than Map order: deleting and re-inserting the key on
    // every request churned the Map's table (rehash and shrink in the runtime, ~1k instructions).
    entry.used = ++this.#tick
    if (entry.active >= this.#maxConcurrent) throw this.#busy(key, 'too many concurrent requests', 'per_ip', this.#retryAfterMs)
    if (entry.bucket && !entry.bucket.tryTake()) {
      throw this.#busy(key, 'rate limited', 'per_ip_rate', Math.max(1, entry.bucket.msUntil()))
    }
    entry.active++
    return entry
  }

  #evict(): void {
    // First what is free to forget (idle and full bucket), then least recently used idle keys.
    for (const [k, e] of this.#keys) if (e.active === 0 && (e.bucket === undefined || e.bucket.full)) this.#keys.delete(k)
    if (this.#keys.size < this.#maxKeys) return
    const idle = [...this.#keys].filter(([, e]) => e.active === 0).sort((a, b) => a[1].used - b[1].used)
    for (const [k] of idle) {
      this.#keys.delete(k)
      if (this.#keys.size < this.#maxKeys) return
    }
  }

  /** `reason` is SPEC.md 4's machine-readable `details.reason` (`per_ip` for the per-IP cap). */
  #busy(key: string, why: string, reason: 'per_ip' | 'per_ip_rate' | 'too_many_keys', retryAfterMs: number): BusyError {
    // Not counted here: the service host counts every 429 in busy_rejections_total{endpoint,queue}.
    return new BusyError(`${this.#name}: ${why}`, { details: { key, reason, endpoint: this.#name }, retryAfterMs })
  }
}

/**
 * One admission held through {@link holdAdmission}: pass it to {@link releaseAdmission} exactly
 * once. It is the key's entry, the same object for every admission of that key while the key is
 * tracked: its `memo` is the holder's, for what it would otherwise allocate per request (the
 * service host keeps its release functions there). @internal
 */
export type AdmissionHold = Entry

/**
 * {@link Admission.acquire} without the release closure, for a caller that already guarantees
 * exactly one {@link releaseAdmission} per admission (the service host, once per finished exchange): no
 * function allocated per request. @throws {@link BusyError} as `acquire` does. @internal
 */
export function holdAdmission(a: Admission, key: string): AdmissionHold {
  return enterAdmission(a, key)
}

/** Ends an admission taken by {@link holdAdmission}. Call exactly once per hold. @internal */
export function releaseAdmission(hold: AdmissionHold): void {
  // An idle key stays (it is forgotten when maxKeys is reached): deleting it here made a client
  // sending one request at a time delete and re-insert its key on every request.
  hold.active--
}
