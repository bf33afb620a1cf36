/**
 * The positive and negative answer caches. Workers read and insert; expiry and purging are the
 * cache janitor's alone (seed I-2: one writer of cache metadata). A read never mutates: an expired
 * entry simply reads as a miss until the janitor removes it. Both caches are bounded: an insert
 * at capacity evicts the oldest entry (insertion order), so memory never grows past the bound
 * between janitor runs.
 *
 * @module
 */

/**
 * One cache entry. `memo` is a slot a reader may fill with something derived from `value` alone
 * (the serialised reply of a hit): it never changes what the entry means, and it goes with the
 * entry when the key is replaced, invalidated or purged.
 */
export interface CacheEntry<V> {
  readonly value: V
  readonly expiresAt: number
  memo: unknown
}

/** A bounded cache of values with a per-entry expiry. */
export class TtlCache<V> {
  readonly #entries = new Map<string, CacheEntry<V>>()
  #max: number

  constructor(maxEntries: number) {
    this.#max = maxEntries
  }

  /** Entries held (including expired ones not yet purged). */
  get size(): number {
    return this.#entries.size
  }

  /** Changes the bound (reload); extra entries go at the next insert or purge. */
  resize(maxEntries: number): void {
    this.#max = maxEntries
  }

  /** The live entry of `key`, if any. */
  get(key: string, now: number): CacheEntry<V> | undefined {
    const e = this.#entries.get(key)
    return e === undefined || e.expiresAt <= now ? undefined : e
  }

  /** Inserts or replaces `key` until `expiresAt`; evicts the oldest entries past the bound. */
  set(key: string, value: V, expiresAt: number): void {
    this.#entries.delete(key) // re-insert at the young end
    this.#entries.set(key, { value, expiresAt, memo: undefined })
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next()
      if (oldest.done === true) break
      this.#entries.delete(oldest.value)
    }
  }

  /** Forgets `key` (a write invalidated it). */
  delete(key: string): void {
    this.#entries.delete(key)
  }

  /** Janitor: removes expired entries and trims to the bound. @returns how many were removed. */
  purge(now: number): number {
    let removed = 0
    for (const [k, e] of this.#entries) {
      if (e.expiresAt <= now) {
        this.#entries.delete(k)
        removed++
      }
    }
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next()
      if (oldest.done === true) break
      this.#entries.delete(oldest.value)
      removed++
    }
    return removed
  }

  /** Drops everything. */
  clear(): void {
    this.#entries.clear()
  }
}

/**
 * A jittered negative TTL: `ttlMs` times a factor drawn uniformly in `[1 - jitter, 1 + jitter]`,
 * so entries that were cached together do not all expire (and stampede the peers) together.
 */
export function jitteredTtl(ttlMs: number, jitter: number, random: () => number): number {
  return Math.max(1, Math.round(ttlMs * (1 - jitter + 2 * jitter * random())))
}
