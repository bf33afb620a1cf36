/**
 * Lookup of a leaf by its hash (RFC 6962's get-proof-by-hash): an open-addressing table of leaf
 * indexes keyed by the first 4 bytes of the leaf hash, confirmed against the tree's own copy of
 * the hash. Each slot keeps its key beside the index, so growing the table never asks the tree
 * for a hash again (a view per hash: ~4k instructions per leaf rehashed, about one per append
 * over time) and a lookup asks only for slots whose key matches. About 16 bytes per leaf, beside
 * the 64 the tree keeps.
 *
 * @module
 * @internal
 */

/** Leaf index by leaf hash. */
export class LeafIndex {
  readonly #hashAt: (index: number) => Uint8Array
  /** Leaf index + 1, 0 for an empty slot. */
  #slots = new Int32Array(1024)
  /** The key (first 4 bytes of the leaf hash) of each used slot. */
  #keys = new Uint32Array(1024)
  #count = 0

  /** @param hashAt - the leaf hash at an index (the tree's) */
  constructor(hashAt: (index: number) => Uint8Array) {
    this.#hashAt = hashAt
  }

  /** Number of leaves indexed. */
  get size(): number {
    return this.#count
  }

  /** Indexes leaf `index` whose hash is `hash`. */
  add(index: number, hash: Uint8Array): void {
    if ((this.#count + 1) * 2 > this.#slots.length) this.#grow()
    this.#put(this.#slots, this.#keys, index, key(hash))
    this.#count++
  }

  /** The index of the leaf whose hash is `hash`, if any. */
  find(hash: Uint8Array): number | undefined {
    if (hash.length !== 32) return undefined
    const mask = this.#slots.length - 1
    const k = key(hash)
    for (let s = k & mask; ; s = (s + 1) & mask) {
      const v = this.#slots[s]!
      if (v === 0) return undefined
      if (this.#keys[s] === k && Buffer.compare(this.#hashAt(v - 1), hash) === 0) return v - 1
    }
  }

  #put(slots: Int32Array, keys: Uint32Array, index: number, k: number): void {
    const mask = slots.length - 1
    let s = k & mask
    while (slots[s] !== 0) s = (s + 1) & mask
    slots[s] = index + 1
    keys[s] = k
  }

  #grow(): void {
    const old = this.#slots
    const oldKeys = this.#keys
    const next = new Int32Array(old.length * 2)
    const nextKeys = new Uint32Array(old.length * 2)
    for (let s = 0; s < old.length; s++) if (old[s] !== 0) this.#put(next, nextKeys, old[s]! - 1, oldKeys[s]!)
    this.#slots = next
    this.#keys = nextKeys
  }
}

function key(hash: Uint8Array): number {
  return ((hash[0]! << 24) | (hash[1]! << 16) | (hash[2]! << 8) | hash[3]!) >>> 0
}
