/**
 * Revoked token ids, consulted by the verifier before any signature work.
 *
 * @module
 */

import { systemClock, type Clock } from '../clock.js'

/** Answers whether a token id (`jti`) is revoked. Must be fast and synchronous. */
export interface RevocationCheck {
  isRevoked(jti: string): boolean
  /**
   * True when this source may be missing recent revocations (a feed that has not synced within
   * its staleness bound). The verifier then refuses write and admin scopes with 503 `NotReady`
   * (`revocation_stale`). Absent means never stale (a local set).
   */
  isStale?(): boolean
}

/** Options of {@link RevocationSet}. */
export interface RevocationSetOptions {
  /** Maximum number of entries. @default 100000 */
  capacity?: number
  /**
   * Seconds an entry is kept after its token's `exp` (covers the verifier's clock tolerance).
   * @default 60
   */
  graceSec?: number
  /** @default systemClock */
  clock?: Clock
}

/**
 * A bounded set of revoked `jti`s. An entry lives until its token's `exp` + `graceSec` (after that
 * the token fails the expiry check anyway) and is purged lazily. At capacity, expired entries are
 * purged first; if none expired, the entry whose token expires soonest is evicted (and counted in
 * {@link RevocationSet.evicted}), because it is the one whose revocation matters for the shortest
 * time.
 *
 * @example
 * ```ts
 * const revoked = new RevocationSet({ capacity: 10_000 })
 * revoked.add(claims.jti, claims.exp)
 * const verifier = createTokenVerifier({ keys, revocations: revoked })
 * ```
 */
export class RevocationSet implements RevocationCheck {
  readonly #entries = new Map<string, number>() // jti → drop-after, ms
  readonly #capacity: number
  readonly #graceMs: number
  readonly #clock: Clock
  #evicted = 0

  constructor(opts: RevocationSetOptions = {}) {
    this.#capacity = Math.max(1, opts.capacity ?? 100_000)
    this.#graceMs = (opts.graceSec ?? 60) * 1000
    this.#clock = opts.clock ?? systemClock
  }

  /** Number of entries currently held (including not yet purged expired ones). */
  get size(): number {
    return this.#entries.size
  }

  /** Entries evicted at capacity before their expiry. */
  get evicted(): number {
    return this.#evicted
  }

  /**
   * Revokes `jti`. `expSec` is the token's `exp` (seconds since the epoch); without it the
   * entry never expires on its own (it can still be evicted at capacity).
   */
  add(jti: string, expSec?: number): void {
    const dropAt = expSec === undefined ? Infinity : expSec * 1000 + this.#graceMs
    if (dropAt <= this.#clock.now()) return
    if (!this.#entries.has(jti) && this.#entries.size >= this.#capacity) this.#makeRoom()
    const prev = this.#entries.get(jti)
    this.#entries.set(jti, prev === undefined ? dropAt : Math.max(prev, dropAt))
  }

  /** True when `jti` is revoked and its entry has not expired. */
  isRevoked(jti: string): boolean {
    const dropAt = this.#entries.get(jti)
    if (dropAt === undefined) return false
    if (dropAt <= this.#clock.now()) {
      this.#entries.delete(jti)
      return false
    }
    return true
  }

  /** Removes `jti` (an un-revocation, e.g. when replaying a feed). */
  delete(jti: string): boolean {
    return this.#entries.delete(jti)
  }

  /** Drops expired entries now; returns how many. */
  purge(): number {
    const now = this.#clock.now()
    let n = 0
    for (const [jti, dropAt] of this.#entries) {
      if (dropAt <= now) {
        this.#entries.delete(jti)
        n++
      }
    }
    return n
  }

  #makeRoom(): void {
    if (this.purge() > 0) return
    let victim: string | undefined
    let soonest = Infinity
    for (const [jti, dropAt] of this.#entries) {
      if (victim === undefined || dropAt < soonest) {
        victim = jti
        soonest = dropAt
      }
    }
    if (victim !== undefined) {
      this.#entries.delete(victim)
      this.#evicted++
    }
  }
}
