/**
 * What this index has learnt of names homed on other nodes: the newest verified record per name,
 * from peer answers (bindings) and peer NotFounds (tombstones). It decides which of two verified
 * records is believed — the same home's higher `seq`; between two homes, the lower node id (SPEC
 * §6a) — and keeps the conflicts it saw for the node to show. Memory only, bounded: it is a cache
 * of signed facts any peer can send again.
 *
 * @module
 */

import type { SignedNameRecord } from './name-record.js'

/** Two nodes claim to be the home of one name. */
export interface NameConflict {
  name: string
  /** The node ids that signed a record for the name, lowest first. */
  homes: string[]
  /** The home believed (the lowest node id). */
  winner: string
  /** When the conflict was last seen, Unix ms. */
  seenAt: number
}

/** What {@link RemoteNames.offer} made of a record. */
export type OfferResult = 'new' | 'same' | 'stale' | 'lost'

/** The remote-name table. Single writer: the resolver, in one synchronous step per offer. */
export class RemoteNames {
  readonly #records = new Map<string, SignedNameRecord>()
  readonly #conflicts = new Map<string, NameConflict>()
  readonly #max: number
  readonly #maxConflicts: number

  /**
   * @param maxRecords - records kept at most (the oldest learnt go first).
   * @param maxConflicts - conflicts kept at most (the oldest seen go first).
   */
  constructor(maxRecords = 100_000, maxConflicts = 1024) {
    this.#max = maxRecords
    this.#maxConflicts = maxConflicts
  }

  /** The believed record of `name`, if any (a binding or a tombstone). */
  get(name: string): SignedNameRecord | undefined {
    return this.#records.get(name)
  }

  /**
   * Offers a verified record. @returns `new` when it is now the believed record, `same` when it is
   * the one already believed, `stale` when the same home's higher `seq` is known, `lost` when
   * another home with a lower node id holds the name (a conflict, recorded either way).
   */
  offer(r: SignedNameRecord, now: number): OfferResult {
    const held = this.#records.get(r.name)
    if (held !== undefined && held.node !== r.node) {
      this.#conflict(r.name, held.node, r.node, now)
      if (held.node < r.node) return 'lost'
    } else if (held !== undefined) {
      if (r.seq < held.seq) return 'stale'
      if (r.seq === held.seq) return 'same'
    }
    this.#records.delete(r.name)
    this.#records.set(r.name, r)
    if (this.#records.size > this.#max) {
      const oldest = this.#records.keys().next().value
      if (oldest !== undefined) this.#records.delete(oldest)
    }
    return 'new'
  }

  /** Forgets what is known of `name` (it is homed here now). */
  forget(name: string): void {
    this.#records.delete(name)
  }

  /** Conflicts seen, most recent last. */
  conflicts(): NameConflict[] {
    return [...this.#conflicts.values()].map((c) => ({ ...c, homes: [...c.homes] }))
  }

  /** Number of conflicts held. */
  get conflictCount(): number {
    return this.#conflicts.size
  }

  /** Drops everything. */
  clear(): void {
    this.#records.clear()
    this.#conflicts.clear()
  }

  #conflict(name: string, a: string, b: string, now: number): void {
    const c = this.#conflicts.get(name)
    const homes = [...new Set([...(c?.homes ?? []), a, b])].sort()
    this.#conflicts.delete(name)
    this.#conflicts.set(name, { name, homes, winner: homes[0]!, seenAt: now })
    if (this.#conflicts.size > this.#maxConflicts) {
      const oldest = this.#conflicts.keys().next().value
      if (oldest !== undefined) this.#conflicts.delete(oldest)
    }
  }
}
