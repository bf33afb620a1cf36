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
   * True when `jti` was revoked *with its subtree* (`cascade: true`): a token whose `prf` names it
   * is refused too. False for a retirement (`cascade: false`, SPEC.md section 5 "Retiring is not
   * revoking") and for ids not revoked. Absent means every revocation cascades.
   */
  revokesDescendants?(jti: string): boolean
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
 * Each entry also says whether it cascades ({@link RevocationSet.revokesDescendants}): a revocation
 * does (a leak: what was minted from the token dies with it), a retirement does not (the admin
 * token replaced on renewal or rotation: what it minted lives on).
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
  /** Entries that do not cascade (retirements; rare: replaced admin tokens). */
  readonly #retired = new Set<string>()
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
   * entry never expires on its own (it can still be evicted at capacity). `cascade: false` records
   * a retirement: the token itself is refused, tokens minted from it are not. A later cascading
   * add of the same id upgrades it; a retirement never downgrades a revocation.
   */
  add(jti: string, expSec?: number, options: { cascade?: boolean } = {}): void {
    const dropAt = expSec === undefined ? Infinity : expSec * 1000 + this.#graceMs
    if (dropAt <= this.#clock.now()) return
    if (!this.#entries.has(jti) && this.#entries.size >= this.#capacity) this.#makeRoom()
    const prev = this.#entries.get(jti)
    this.#entries.set(jti, prev === undefined ? dropAt : Math.max(prev, dropAt))
    if (options.cascade !== false) this.#retired.delete(jti)
    else if (prev === undefined) this.#retired.add(jti)
  }

  /** True when `jti` is revoked (or retired) and its entry has not expired. */
  isRevoked(jti: string): boolean {
    const dropAt = this.#entries.get(jti)
    if (dropAt === undefined) return false
    if (dropAt <= this.#clock.now()) {
      this.#drop(jti)
      return false
    }
    return true
  }

  /** True when `jti` is revoked with its subtree (not merely retired) and its entry has not expired. */
  revokesDescendants(jti: string): boolean {
    return this.isRevoked(jti) && !this.#retired.has(jti)
  }

  /** Removes `jti` (an un-revocation, e.g. when replaying a feed). */
  delete(jti: string): boolean {
    this.#retired.delete(jti)
    return this.#entries.delete(jti)
  }

  #drop(jti: string): void {
    this.#entries.delete(jti)
    this.#retired.delete(jti)
  }

  /** Drops expired entries now; returns how many. */
  purge(): number {
    const now = this.#clock.now()
    let n = 0
    for (const [jti, dropAt] of this.#entries) {
      if (dropAt <= now) {
        this.#drop(jti)
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
      this.#drop(victim)
      this.#evicted++
    }
  }
}
