/**
 * An RFC 6962 (Certificate Transparency) Merkle tree with a pluggable hash: BLAKE3 by default,
 * SHA-256 so the published RFC 6962 vectors run. Leaf `i` hashes as `H(0x00 || data)`, an inner
 * node as `H(0x01 || left || right)`, the empty tree as `H()`. Inclusion and consistency proofs
 * follow RFC 6962 section 2.1; the verifiers follow RFC 9162 sections 2.1.3.2 and 2.1.4.2.
 *
 * @module
 */

import { hash } from 'node:crypto'
import { blake3 } from '@ron/core'

/** The hash a tree uses. */
export type TreeHashName = 'blake3' | 'sha256'

/** Hash functions of one tree flavour (32-byte digests). */
export interface TreeHasher {
  readonly name: TreeHashName
  /** Digest of the empty tree. */
  readonly emptyRoot: Uint8Array
  /** `H(0x00 || data)`. */
  leaf(data: Uint8Array): Uint8Array
  /** `H(0x01 || left || right)`. */
  node(left: Uint8Array, right: Uint8Array): Uint8Array
}

/** Digest size of every supported hash. */
export const HASH_SIZE = 32

function makeHasher(name: TreeHashName, h: (data: Uint8Array) => Uint8Array): TreeHasher {
  const one = new Uint8Array(1 + 2 * HASH_SIZE)
  one[0] = 1
  return {
    name,
    emptyRoot: h(new Uint8Array(0)),
    leaf(data) {
      const buf = new Uint8Array(1 + data.length)
      buf.set(data, 1)
      return h(buf)
    },
    node(left, right) {
      if (left.length !== HASH_SIZE || right.length !== HASH_SIZE) {
        const buf = new Uint8Array(1 + left.length + right.length)
        buf[0] = 1
        buf.set(left, 1)
        buf.set(right, 1 + left.length)
        return h(buf)
      }
      one.set(left, 1)
      one.set(right, 1 + HASH_SIZE)
      return h(one)
    },
  }
}

// One-shot `crypto.hash` (Node ≥ 20.12): no Hash object per call; a commit hashes a leaf, its
// interior nodes and the root's merges, each a few dozen bytes.
const sha256 = (d: Uint8Array): Uint8Array => hash('sha256', d, 'buffer')
const b3 = (d: Uint8Array): Uint8Array => blake3(d)

/** BLAKE3 tree hashing (the registry's default). */
export const blake3TreeHasher: TreeHasher = makeHasher('blake3', b3)
/** SHA-256 tree hashing, exactly RFC 6962. */
export const sha256TreeHasher: TreeHasher = makeHasher('sha256', sha256)

/** The hasher named `name`. */
export function treeHasher(name: TreeHashName): TreeHasher {
  return name === 'sha256' ? sha256TreeHasher : blake3TreeHasher
}

/** Largest power of two strictly below `n` (n ≥ 2). */
function splitPoint(n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/** A growable array of 32-byte slots in one buffer (no object per hash). */
class HashColumn {
  #buf = Buffer.alloc(HASH_SIZE * 64)
  #len = 0
  get length(): number {
    return this.#len
  }
  push(h: Uint8Array): void {
    if ((this.#len + 1) * HASH_SIZE > this.#buf.length) {
      const next = Buffer.alloc(this.#buf.length * 2)
      this.#buf.copy(next, 0, 0, this.#len * HASH_SIZE)
      this.#buf = next
    }
    this.#buf.set(h, this.#len * HASH_SIZE)
    this.#len++
  }
  get(i: number): Uint8Array {
    return this.#buf.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE)
  }
  /** A copy of slots [start, start + count) (the buffer is reallocated as it grows). */
  copy(start: number, count: number): Buffer {
    return Buffer.from(this.#buf.subarray(start * HASH_SIZE, (start + count) * HASH_SIZE))
  }
  truncate(n: number): void {
    this.#len = Math.min(this.#len, n)
  }
}

/**
 * An append-only RFC 6962 tree over leaf hashes. It keeps every complete aligned subtree hash
 * (about two hashes per leaf, 64 MB for a million leaves), so a root or a proof costs O(log n)
 * hashes at any tree size up to the current one.
 *
 * @example
 * ```ts
 * const t = new MerkleTree(sha256TreeHasher)
 * t.appendData(new TextEncoder().encode('a'))
 * t.appendData(new TextEncoder().encode('b'))
 * const proof = t.inclusionProof(0, 2)
 * verifyInclusion(sha256TreeHasher, 0, 2, t.leafHash(0), proof, t.root(2)) // true
 * ```
 */
export class MerkleTree {
  readonly hasher: TreeHasher
  readonly #levels: HashColumn[] = [new HashColumn()]

  constructor(hasher: TreeHasher = blake3TreeHasher) {
    this.hasher = hasher
  }

  /** Number of leaves. */
  get size(): number {
    return this.#levels[0]!.length
  }

  /** Appends a leaf by its data (hashed as a leaf). Returns the leaf hash. */
  appendData(data: Uint8Array): Uint8Array {
    const h = this.hasher.leaf(data)
    this.append(h)
    return h
  }

  /** Appends a leaf by its (already computed) leaf hash. */
  append(leafHash: Uint8Array): void {
    if (leafHash.length !== HASH_SIZE) throw new Error(`leaf hash must be ${HASH_SIZE} bytes`)
    const n = this.size // index of the new leaf
    this.#levels[0]!.push(leafHash)
    let level = 0
    let idx = n
    while (idx % 2 === 1) {
      const col = this.#levels[level]!
      const parent = this.hasher.node(col.get(idx - 1), col.get(idx))
      level++
      if (this.#levels.length === level) this.#levels.push(new HashColumn())
      this.#levels[level]!.push(parent)
      idx = (idx - 1) / 2
    }
  }

  /** Forgets leaves from `size` on (recovery of a torn tail only). */
  truncate(size: number): void {
    for (let level = 0; level < this.#levels.length; level++) this.#levels[level]!.truncate(Math.floor(size / 2 ** level))
  }

  /** The leaf hash at `index`. @throws RangeError when out of range */
  leafHash(index: number): Uint8Array {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) throw new RangeError(`leaf ${index} out of range`)
    return this.#levels[0]!.get(index)
  }

  /**
   * The hashes of complete subtrees of `2 ** height` leaves, `count` of them from the one at
   * `start` (its leaves are `[start · 2^height, (start + 1) · 2^height)`), concatenated: what a
   * C2SP tile holds (height 8 · level).
   * @returns the bytes, or `undefined` when the tree has fewer such subtrees
   */
  subtreeHashes(height: number, start: number, count: number): Buffer | undefined {
    const col = this.#levels[height]
    if (col === undefined || !Number.isSafeInteger(start) || start < 0 || count < 0 || start + count > col.length) return undefined
    return col.copy(start, count)
  }

  /** Root hash of the first `size` leaves (default: all). @throws RangeError when `size` exceeds the tree */
  root(size: number = this.size): Uint8Array {
    this.#checkSize(size)
    if (size === 0) return this.hasher.emptyRoot
    return this.#mth(0, size)
  }

  /**
   * Audit path of leaf `index` in the tree of the first `size` leaves (RFC 6962 2.1.1).
   * @throws RangeError unless `0 ≤ index < size ≤ this.size`
   */
  inclusionProof(index: number, size: number): Uint8Array[] {
    this.#checkSize(size)
    if (!Number.isInteger(index) || index < 0 || index >= size) throw new RangeError(`leaf ${index} is not in a tree of size ${size}`)
    const out: Uint8Array[] = []
    this.#path(index, 0, size, out)
    return out
  }

  /**
   * Consistency proof between the trees of the first `from` and `to` leaves (RFC 6962 2.1.2);
   * empty when `from` is 0 or equal to `to`.
   * @throws RangeError unless `0 ≤ from ≤ to ≤ this.size`
   */
  consistencyProof(from: number, to: number): Uint8Array[] {
    this.#checkSize(to)
    if (!Number.isInteger(from) || from < 0 || from > to) throw new RangeError(`cannot prove ${from} → ${to}`)
    const out: Uint8Array[] = []
    if (from === 0 || from === to) return out
    this.#subproof(from, 0, to, true, out)
    return out
  }

  #checkSize(size: number): void {
    if (!Number.isInteger(size) || size < 0 || size > this.size) throw new RangeError(`tree size ${size} out of range (size ${this.size})`)
  }

  /** MTH of leaves [start, start + n), n ≥ 1. */
  #mth(start: number, n: number): Uint8Array {
    if ((n & (n - 1)) === 0 && start % n === 0) {
      const level = Math.log2(n)
      const col = this.#levels[level]
      if (col !== undefined && start / n < col.length) return col.get(start / n)
    }
    const k = splitPoint(n)
    return this.hasher.node(this.#mth(start, k), this.#mth(start + k, n - k))
  }

  #path(m: number, start: number, n: number, out: Uint8Array[]): void {
    if (n === 1) return
    const k = splitPoint(n)
    if (m < k) {
      this.#path(m, start, k, out)
      out.push(this.#mth(start + k, n - k))
    } else {
      this.#path(m - k, start + k, n - k, out)
      out.push(this.#mth(start, k))
    }
  }

  #subproof(m: number, start: number, n: number, complete: boolean, out: Uint8Array[]): void {
    if (m === n) {
      if (!complete) out.push(this.#mth(start, n))
      return
    }
    const k = splitPoint(n)
    if (m <= k) {
      this.#subproof(m, start, k, complete, out)
      out.push(this.#mth(start + k, n - k))
    } else {
      this.#subproof(m - k, start + k, n - k, false, out)
      out.push(this.#mth(start, k))
    }
  }
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0
}

function allHashes(proof: readonly Uint8Array[]): boolean {
  return proof.every((p) => p.length === HASH_SIZE)
}

/**
 * Recomputes the root from an inclusion proof (RFC 9162 2.1.3.2).
 * @returns the root, or `undefined` when the proof cannot belong to `index` in a tree of `size`.
 */
export function rootFromInclusionProof(hasher: TreeHasher, index: number, size: number, leafHash: Uint8Array, proof: readonly Uint8Array[]): Uint8Array | undefined {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return undefined
  if (leafHash.length !== HASH_SIZE || !allHashes(proof)) return undefined
  let fn = BigInt(index)
  let sn = BigInt(size - 1)
  let r = leafHash
  for (const p of proof) {
    if (sn === 0n) return undefined
    if ((fn & 1n) === 1n || fn === sn) {
      r = hasher.node(p, r)
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n
          sn >>= 1n
        }
      }
    } else {
      r = hasher.node(r, p)
    }
    fn >>= 1n
    sn >>= 1n
  }
  return sn === 0n ? r : undefined
}

/** True when `proof` shows leaf `index` with hash `leafHash` is in the tree of `size` leaves with `root`. */
export function verifyInclusion(hasher: TreeHasher, index: number, size: number, leafHash: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  const r = rootFromInclusionProof(hasher, index, size, leafHash, proof)
  return r !== undefined && equal(r, root)
}

/**
 * True when `proof` shows the tree of `size1` leaves with `root1` is a prefix of the tree of
 * `size2` leaves with `root2` (RFC 9162 2.1.4.2).
 */
export function verifyConsistency(hasher: TreeHasher, size1: number, size2: number, proof: readonly Uint8Array[], root1: Uint8Array, root2: Uint8Array): boolean {
  if (!Number.isSafeInteger(size1) || !Number.isSafeInteger(size2) || size1 < 0 || size2 < size1) return false
  if (size1 === size2) return proof.length === 0 && equal(root1, root2)
  if (size1 === 0) return proof.length === 0
  if (proof.length === 0 || !allHashes(proof) || root1.length !== HASH_SIZE || root2.length !== HASH_SIZE) return false
  const path = (size1 & (size1 - 1)) === 0 ? [root1, ...proof] : [...proof]
  let fn = BigInt(size1 - 1)
  let sn = BigInt(size2 - 1)
  while ((fn & 1n) === 1n) {
    fn >>= 1n
    sn >>= 1n
  }
  let fr = path[0]!
  let sr = path[0]!
  for (const c of path.slice(1)) {
    if (sn === 0n) return false
    if ((fn & 1n) === 1n || fn === sn) {
      fr = hasher.node(c, fr)
      sr = hasher.node(c, sr)
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n
          sn >>= 1n
        }
      }
    } else {
      sr = hasher.node(sr, c)
    }
    fn >>= 1n
    sn >>= 1n
  }
  return sn === 0n && equal(fr, root1) && equal(sr, root2)
}
