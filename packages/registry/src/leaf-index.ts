/**
 * Lookup of a leaf by its hash (RFC 6962's get-proof-by-hash): an open-addressing table of leaf
 * indexes keyed by the first 4 bytes of the leaf hash, confirmed against the tree's own copy of
 * the hash. About 8 bytes per leaf, beside the 64 the tree keeps.
 *
 * @module
 * @internal
 */

/** Leaf index by leaf hash. */
export class LeafIndex {
  readonly #hashAt: (index: number) => Uint8Array
  /** Leaf index + 1, 0 for an empty slot. */
  #slots = new Int32Array(1024)
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
    this.#put(this.#slots, index, hash)
    this.#count++
  }

  /** The index of the leaf whose hash is `hash`, if any. */
  find(hash: Uint8Array): number | undefined {
    if (hash.length !== 32) return undefined
    const mask = this.#slots.length - 1
    for (let s = key(hash) & mask; ; s = (s + 1) & mask) {
      const v = this.#slots[s]!
      if (v === 0) return undefined
      if (Buffer.compare(this.#hashAt(v - 1), hash) === 0) return v - 1
    }
  }

  #put(slots: Int32Array, index: number, hash: Uint8Array): void {
    const mask = slots.length - 1
    let s = key(hash) & mask
    while (slots[s] !== 0) s = (s + 1) & mask
    slots[s] = index + 1
  }

  #grow(): void {
    const old = this.#slots
    const next = new Int32Array(old.length * 2)
    for (const v of old) if (v !== 0) this.#put(next, v - 1, this.#hashAt(v - 1))
    this.#slots = next
  }
}

function key(hash: Uint8Array): number {
  return ((hash[0]! << 24) | (hash[1]! << 16) | (hash[2]! << 8) | hash[3]!) >>> 0
}
