/**
 * The delivery dedupe store: delivery key → receipt address, bounded in size and time. A key
 * enters only once its receipt is stored (and, with a `persist` hook, once its record is
 * durable: see `DedupeJournal`); while the first copy of a delivery is being stored, a concurrent
 * duplicate joins it instead of storing again.
 *
 * @module
 */

import type { Address, Clock } from '@ron/core'

/** Options of {@link DedupeStore}. */
export interface DedupeStoreOptions {
  /** How long a stored delivery is remembered. Must cover the replay window both ways. @default 600000 */
  ttlMs?: number
  /** Most deliveries remembered; the oldest are forgotten first. @default 100000 */
  maxEntries?: number
  clock: Clock
  /**
   * Makes a delivery's record durable before it counts as stored (the webhook is answered only
   * after): a rejection forgets the delivery and fails its `track()`. @default none (memory only)
   */
  persist?: (record: DedupeRecord) => Promise<void>
}

/** One remembered delivery: its key, its receipt and when it is forgotten (Unix ms). */
export interface DedupeRecord {
  key: string
  receipt: Address
  expiresAt: number
}

/** What {@link DedupeStore.lookup} finds. */
export type DedupeHit = { kind: 'stored'; receipt: Address } | { kind: 'pending'; receipt: Promise<Address> } | { kind: 'new' }

/**
 * Single writer: only the webhook route (on the event loop) calls it, so there is no lock; map
 * insertion order is arrival order, which makes expiry and eviction O(1) from the front.
 *
 * @example
 * ```ts
 * const d = new DedupeStore({ clock, ttlMs: 600_000 })
 * const hit = d.lookup('github:abc')
 * if (hit.kind === 'new') await d.track('github:abc', storeReceipt())
 * ```
 */
export class DedupeStore {
  readonly #ttlMs: number
  readonly #max: number
  readonly #clock: Clock
  readonly #stored = new Map<string, { receipt: Address; expiresAt: number }>()
  readonly #pending = new Map<string, Promise<Address>>()
  readonly #persist: ((record: DedupeRecord) => Promise<void>) | undefined

  constructor(options: DedupeStoreOptions) {
    this.#ttlMs = options.ttlMs ?? 600_000
    this.#max = options.maxEntries ?? 100_000
    this.#clock = options.clock
    this.#persist = options.persist
  }

  /**
   * Remembers deliveries recorded before (a journal read at startup), oldest first; expired
   * records are skipped, and the bound applies.
   */
  restore(records: Iterable<DedupeRecord>): void {
    const now = this.#clock.now()
    for (const r of records) {
      if (r.expiresAt <= now) continue
      this.#stored.delete(r.key)
      this.#stored.set(r.key, { receipt: r.receipt, expiresAt: r.expiresAt })
    }
    this.#bound()
  }

  /** The deliveries remembered now, oldest first (what a compacted journal keeps). */
  records(): DedupeRecord[] {
    this.#expire()
    const out: DedupeRecord[] = []
    for (const [key, v] of this.#stored) out.push({ key, receipt: v.receipt, expiresAt: v.expiresAt })
    return out
  }

  /** Deliveries remembered as stored. */
  get size(): number {
    this.#expire()
    return this.#stored.size
  }

  /** Deliveries whose receipt is being stored. */
  get pending(): number {
    return this.#pending.size
  }

  /** Whether `key` was stored (and still remembered), is being stored, or is new. */
  lookup(key: string): DedupeHit {
    this.#expire()
    const s = this.#stored.get(key)
    if (s !== undefined) return { kind: 'stored', receipt: s.receipt }
    const p = this.#pending.get(key)
    if (p !== undefined) return { kind: 'pending', receipt: p }
    return { kind: 'new' }
  }

  /**
   * Tracks the store of `key`'s receipt: concurrent lookups see it as pending; once `storing`
   * resolves (and its record is persisted, with a `persist` hook) the key is remembered for the
   * TTL; if either fails the key is forgotten (the provider's retry starts afresh).
   */
  track(key: string, storing: Promise<Address>): Promise<Address> {
    const persist = this.#persist
    const stored = persist === undefined ? storing : storing.then(async (receipt) => {
      await persist({ key, receipt, expiresAt: this.#clock.now() + this.#ttlMs })
      return receipt
    })
    const tracked = stored.then(
      (receipt) => {
        this.#pending.delete(key)
        this.#remember(key, receipt)
        return receipt
      },
      (e: unknown) => {
        this.#pending.delete(key)
        throw e
      },
    )
    this.#pending.set(key, tracked)
    return tracked
  }

  #remember(key: string, receipt: Address): void {
    this.#stored.delete(key)
    this.#stored.set(key, { receipt, expiresAt: this.#clock.now() + this.#ttlMs })
    this.#bound()
  }

  #bound(): void {
    while (this.#stored.size > this.#max) {
      const oldest = this.#stored.keys().next().value
      if (oldest === undefined) break
      this.#stored.delete(oldest)
    }
  }

  #expire(): void {
    const now = this.#clock.now()
    for (const [k, v] of this.#stored) {
      if (v.expiresAt > now) break
      this.#stored.delete(k)
    }
  }
}
