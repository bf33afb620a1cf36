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

/**
 * A bounded cache of values with a per-entry expiry. A *pinned* key (an admin's `PUT
 * /admin/pins/:key`) is never expired nor evicted: its entry is served past its expiry and kept
 * past the bound until it is replaced (a fresh resolve), invalidated (a name write) or unpinned.
 */
export class TtlCache<V> {
  readonly #entries = new Map<string, CacheEntry<V>>()
  readonly #pinned = new Set<string>()
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

  /** The live entry of `key` (or the entry of a pinned key, live or not), if any. */
  get(key: string, now: number): CacheEntry<V> | undefined {
    const e = this.#entries.get(key)
    return e === undefined || (e.expiresAt <= now && !this.#pinned.has(key)) ? undefined : e
  }

  /** Keeps `key`'s entry past its expiry and the bound, now and whenever it is set again. */
  pin(key: string): void {
    this.#pinned.add(key)
  }

  /** Lets `key`'s entry expire and be evicted again. @returns whether it was pinned. */
  unpin(key: string): boolean {
    return this.#pinned.delete(key)
  }

  /** Whether `key` is pinned. */
  pinned(key: string): boolean {
    return this.#pinned.has(key)
  }

  /** The pinned keys, in pinning order. */
  pins(): string[] {
    return [...this.#pinned]
  }

  /** Inserts or replaces `key` until `expiresAt`; evicts the oldest entries past the bound. */
  set(key: string, value: V, expiresAt: number): void {
    this.#entries.delete(key) // re-insert at the young end
    this.#entries.set(key, { value, expiresAt, memo: undefined })
    if (this.#entries.size > this.#max) this.#trim()
  }

  /** Evicts the oldest unpinned entries down to the bound (pinned ones stay, even above it). */
  #trim(): number {
    let removed = 0
    for (const k of this.#entries.keys()) {
      if (this.#entries.size <= this.#max) break
      if (this.#pinned.has(k)) continue
      this.#entries.delete(k)
      removed++
    }
    return removed
  }

  /** Forgets `key` (a write invalidated it). */
  delete(key: string): void {
    this.#entries.delete(key)
  }

  /** Janitor: removes expired entries and trims to the bound. @returns how many were removed. */
  purge(now: number): number {
    let removed = 0
    for (const [k, e] of this.#entries) {
      if (e.expiresAt <= now && !this.#pinned.has(k)) {
        this.#entries.delete(k)
        removed++
      }
    }
    return removed + this.#trim()
  }

  /** Drops every entry (the pins stay: a pinned key's next answer is kept again). */
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
