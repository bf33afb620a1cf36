/**
 * A bounded copy of verified objects read from other nodes (SPEC §6a, issue 23 "optionally keeping
 * a bounded cached copy"): least recently used out first, bounded by total bytes. Only whole
 * objects that hashed to their address go in, so a hit is served without another check.
 *
 * @module
 */

import type { Address } from '@ron/core'

/** LRU of verified bytes by address. Single-threaded (the event loop), no locks. */
export class VerifiedCache {
  readonly #entries = new Map<Address, Uint8Array>()
  #bytes = 0
  #limit: number
  readonly #onSize: (bytes: number) => void

  /**
   * @param limitBytes - total bytes kept at most; 0 keeps nothing.
   * @param onSize - told the new total after every change (the `gateway_cache_bytes` gauge).
   */
  constructor(limitBytes: number, onSize: (bytes: number) => void = () => {}) {
    this.#limit = limitBytes
    this.#onSize = onSize
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes
  }

  /** The verified bytes of `address`, refreshed as most recently used. */
  get(address: Address): Uint8Array | undefined {
    const hit = this.#entries.get(address)
    if (hit === undefined) return undefined
    this.#entries.delete(address)
    this.#entries.set(address, hit)
    return hit
  }

  /** Keeps `bytes` (already verified against `address`) when it fits, dropping the least recently used. */
  set(address: Address, bytes: Uint8Array): void {
    if (bytes.byteLength > this.#limit || this.#entries.has(address)) return
    this.#entries.set(address, bytes)
    this.#bytes += bytes.byteLength
    this.#evict()
  }

  /** Changes the bound (a reload), dropping what no longer fits. */
  resize(limitBytes: number): void {
    this.#limit = limitBytes
    this.#evict()
  }

  /** Drops everything. */
  clear(): void {
    this.#entries.clear()
    this.#bytes = 0
    this.#onSize(0)
  }

  #evict(): void {
    for (const [k, v] of this.#entries) {
      if (this.#bytes <= this.#limit) break
      this.#entries.delete(k)
      this.#bytes -= v.byteLength
    }
    this.#onSize(this.#bytes)
  }
}
