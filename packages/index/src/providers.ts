/**
 * Provider records: address → the nodes that announced it, with an expiry. Soft state: kept in
 * memory only, refreshed by announcements (storage re-announces every TTL/2), purged by the
 * janitor once expired; lookups ignore expired records even before the janitor runs.
 *
 * @module
 */

import { BusyError } from '@ron/core'
import type { Address } from '@ron/core'

/** One provider of an address. */
export interface ProviderRecord {
  node: string
  endpoint: string
  /** Unix ms after which the record is ignored and purged. */
  expiresAt: number
  /** When the last announcement arrived, Unix ms. */
  announcedAt: number
}

/**
 * Providers kept per address. Ranking answers at most 32; a set this large is already abuse, and
 * without a bound one address could take the whole table and make every resolve of it sort
 * hundreds of thousands of records.
 */
export const MAX_PROVIDERS_PER_ADDRESS = 256

/** The provider table (one writer: the request that announces, in one synchronous step). */
export class ProviderTable {
  readonly #byAddress = new Map<Address, Map<string, ProviderRecord>>()
  #max: number
  #size = 0

  /** @param maxRecords - records kept at most; an announcement of a new record beyond it is refused. */
  constructor(maxRecords: number) {
    this.#max = maxRecords
  }

  /** Changes the bound (reload): records beyond a lowered bound stay until they expire; new ones are refused meanwhile. */
  resize(maxRecords: number): void {
    this.#max = maxRecords
  }

  /** Number of records (including expired ones not yet purged). */
  get size(): number {
    return this.#size
  }

  /**
   * Adds or refreshes the record of `node` for `address`.
   * @returns true when the record is new (the address had no record from this node).
   * @throws {@link BusyError} when the table is full, or the address already has
   *   {@link MAX_PROVIDERS_PER_ADDRESS} live providers, and the record is new.
   */
  announce(address: Address, node: string, endpoint: string, expiresAt: number, now: number): boolean {
    let nodes = this.#byAddress.get(address)
    const existing = nodes?.get(node)
    if (existing === undefined && nodes !== undefined && nodes.size >= MAX_PROVIDERS_PER_ADDRESS) {
      // Expired records make room first (the janitor may not have run yet).
      for (const [n, r] of nodes) {
        if (r.expiresAt <= now) {
          nodes.delete(n)
          this.#size--
        }
      }
      if (nodes.size >= MAX_PROVIDERS_PER_ADDRESS) {
        throw new BusyError(`address ${address} has ${MAX_PROVIDERS_PER_ADDRESS} providers already`, { details: { reason: 'provider_set_full', address }, retryAfterMs: 1000 })
      }
    }
    if (existing === undefined && this.#size >= this.#max) {
      throw new BusyError('provider table is full', { details: { reason: 'provider_table_full' }, retryAfterMs: 1000 })
    }
    if (nodes === undefined) {
      nodes = new Map()
      this.#byAddress.set(address, nodes)
    }
    nodes.set(node, { node, endpoint, expiresAt, announcedAt: now })
    if (existing === undefined) this.#size++
    return existing === undefined
  }

  /** The live (unexpired) records of `address`. */
  lookup(address: Address, now: number): ProviderRecord[] {
    const nodes = this.#byAddress.get(address)
    if (nodes === undefined) return []
    const out: ProviderRecord[] = []
    for (const r of nodes.values()) if (r.expiresAt > now) out.push(r)
    return out
  }

  /** Removes expired records. @returns how many were removed. */
  purge(now: number): number {
    let removed = 0
    for (const [address, nodes] of this.#byAddress) {
      for (const [node, r] of nodes) {
        if (r.expiresAt <= now) {
          nodes.delete(node)
          removed++
        }
      }
      if (nodes.size === 0) this.#byAddress.delete(address)
    }
    this.#size -= removed
    return removed
  }

  /** Drops everything. */
  clear(): void {
    this.#byAddress.clear()
    this.#size = 0
  }
}
