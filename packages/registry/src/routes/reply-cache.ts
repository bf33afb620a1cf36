/**
 * A byte-bounded LRU of replies, shared by the read routes.
 *
 * @module
 * @internal
 */

import type { Reply } from '@ron/core'

/** A byte-bounded LRU of replies (full tiles, entry views): one reply over a quarter of the bound is not kept. */
export class ReplyCache<R = Reply> {
  readonly #max: number
  readonly #map = new Map<string, { reply: R; bytes: number }>()
  #bytes = 0
  /** The most recently used entry: a hit on it moves nothing (a delete and a set, ~0.3k instructions). */
  #newest: { reply: R; bytes: number } | undefined = undefined
  constructor(maxBytes: number) {
    this.#max = maxBytes
  }
  get(key: string): R | undefined {
    const hit = this.#map.get(key)
    if (hit === undefined) return undefined
    if (hit !== this.#newest) {
      this.#map.delete(key)
      this.#map.set(key, hit)
      this.#newest = hit
    }
    return hit.reply
  }
  set(key: string, reply: R, bytes: number): void {
    if (bytes > this.#max / 4) return
    const old = this.#map.get(key)
    if (old !== undefined) {
      this.#map.delete(key)
      this.#bytes -= old.bytes
    }
    const entry = { reply, bytes }
    this.#map.set(key, entry)
    this.#newest = entry
    this.#bytes += bytes
    for (const [k, v] of this.#map) {
      if (this.#bytes <= this.#max) break
      this.#map.delete(k)
      this.#bytes -= v.bytes
    }
  }
}
