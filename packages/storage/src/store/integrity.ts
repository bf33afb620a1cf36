/**
 * Per-object integrity data: the chunk table. Written at put time from the same bytes that are
 * hashed into the address, stored beside the object, and checked by every read before a byte of a
 * chunk is served. See the threat model in `types.ts`.
 *
 * Binary layout (version 1, little endian):
 *
 * | offset | size     | field                                                     |
 * |-------:|---------:|-----------------------------------------------------------|
 * | 0      | 8        | magic `RONB3CT` + version byte `0x01`                     |
 * | 8      | 4        | chunk size (u32)                                          |
 * | 12     | 8        | object size (u64)                                         |
 * | 20     | 32       | object digest (BLAKE3-256 of the whole object)            |
 * | 52     | 4        | chunk count (u32) = ceil(size / chunk size)               |
 * | 56     | 32·count | BLAKE3-256 of each chunk                                  |
 * | end-32 | 32       | BLAKE3-256 of everything above (table checksum)           |
 *
 * The filesystem backend (format 2) stores the table as a **trailer** in the object's own file:
 * `[object bytes][table][footer]`, the footer being 16 bytes: the table's byte length (u32), four
 * zero bytes, and the magic `RONOBJ` + `0x00 0x02`. One file, one fsync, one rename per object.
 *
 * @module
 */

import { MalformedError, addressToDigest, blake3, createBlake3, toAddress } from '@ron/core'
import type { Address, Blake3Hasher } from '@ron/core'

const MAGIC = new Uint8Array([0x52, 0x4f, 0x4e, 0x42, 0x33, 0x43, 0x54, 0x01]) // "RONB3CT" v1
const HEADER_BYTES = 56
const HASH_BYTES = 32

/** Default chunk size of the integrity data: 64 KiB. */
export const DEFAULT_CHUNK_SIZE = 65536
/** Smallest accepted chunk size. */
export const MIN_CHUNK_SIZE = 16
/** Largest accepted chunk size (16 MiB): a chunk is buffered whole while it is verified. */
export const MAX_CHUNK_SIZE = 16 * 1024 * 1024

/** Why a table was rejected. */
export type TableProblem = 'table_missing' | 'table_corrupt' | 'table_mismatch'

/**
 * A decoded, checksum-verified chunk table.
 * @internal
 */
export class ChunkTable {
  /** The object's address (bound by the header). */
  readonly address: Address
  /** Object size in bytes. */
  readonly size: number
  /** Chunk size in bytes. */
  readonly chunkSize: number
  /** Number of chunks. */
  readonly count: number
  readonly #hashes: Uint8Array

  constructor(address: Address, size: number, chunkSize: number, hashes: Uint8Array) {
    this.address = address
    this.size = size
    this.chunkSize = chunkSize
    this.count = hashes.length / HASH_BYTES
    this.#hashes = hashes
  }

  /** Byte length of chunk `i` (the last one may be short). */
  chunkLength(i: number): number {
    return Math.min(this.chunkSize, this.size - i * this.chunkSize)
  }

  /** True when `bytes` is exactly chunk `i` as recorded at put time. */
  verifyChunk(i: number, bytes: Uint8Array): boolean {
    if (i < 0 || i >= this.count || bytes.length !== this.chunkLength(i)) return false
    const d = blake3(bytes)
    const off = i * HASH_BYTES
    let diff = 0
    for (let k = 0; k < HASH_BYTES; k++) diff |= d[k]! ^ this.#hashes[off + k]!
    return diff === 0
  }

  /**
   * Checks the chunks `first, first+1, …` laid end to end in `block` (the last may be cut short
   * by the end of `block`, then it fails). Returns how many verify in a row from `first`.
   */
  verifyRun(first: number, block: Uint8Array): number {
    let ok = 0
    for (let i = first, off = 0; off < block.length; i++) {
      const len = this.chunkLength(i)
      if (!this.verifyChunk(i, block.subarray(off, off + len))) break
      ok++
      off += len
    }
    return ok
  }

  /**
   * Like {@link ChunkTable.verifyRun}, for a `block` already hashed elsewhere: `digests` holds the
   * BLAKE3 digest of each `chunkSize` piece of `block` (the last piece may be short), in order.
   * A piece counts only when its length is the chunk's and its digest is the recorded one.
   */
  matchRun(first: number, block: Uint8Array, digests: Uint8Array): number {
    let ok = 0
    for (let i = first, k = 0, off = 0; off < block.length; i++, k++, off += this.chunkSize) {
      if (i >= this.count) break
      const piece = Math.min(this.chunkSize, block.length - off)
      if (piece !== this.chunkLength(i) || digests.length < (k + 1) * HASH_BYTES) break
      const d = k * HASH_BYTES
      const h = i * HASH_BYTES
      let diff = 0
      for (let b = 0; b < HASH_BYTES; b++) diff |= digests[d + b]! ^ this.#hashes[h + b]!
      if (diff !== 0) break
      ok++
    }
    return ok
  }

  /** The encoded form (header, hashes, checksum). */
  encode(): Uint8Array {
    return encodeTable(addressToDigest(this.address), this.size, this.chunkSize, this.#hashes)
  }
}

/** Byte length of the fs backend's footer (see the module doc). */
export const FOOTER_BYTES = 16
const FOOTER_MAGIC = new Uint8Array([0x52, 0x4f, 0x4e, 0x4f, 0x42, 0x4a, 0x00, 0x02]) // "RONOBJ" 0 2

/** Encoded table length of an object of `size` bytes in `chunkSize` chunks. @internal */
export function tableBytes(size: number, chunkSize: number): number {
  return HEADER_BYTES + chunkCount(size, chunkSize) * HASH_BYTES + HASH_BYTES
}

/** The trailer appended to an object's bytes in its file: encoded table + footer. @internal */
export function encodeTrailer(table: ChunkTable): Uint8Array {
  const t = table.encode()
  const out = new Uint8Array(t.length + FOOTER_BYTES)
  out.set(t, 0)
  new DataView(out.buffer).setUint32(t.length, t.length, true)
  out.set(FOOTER_MAGIC, t.length + 8)
  return out
}

/**
 * Reads a footer (the last {@link FOOTER_BYTES} of a file of `fileSize` bytes): the table's
 * length, or `'table_corrupt'` when the footer is not ours or does not fit the file.
 * @internal
 */
export function decodeFooter(footer: Uint8Array, fileSize: number): number | 'table_corrupt' {
  if (footer.length !== FOOTER_BYTES) return 'table_corrupt'
  for (let k = 0; k < FOOTER_MAGIC.length; k++) if (footer[8 + k] !== FOOTER_MAGIC[k]) return 'table_corrupt'
  const dv = new DataView(footer.buffer, footer.byteOffset, footer.byteLength)
  const len = dv.getUint32(0, true)
  if (dv.getUint32(4, true) !== 0 || len < HEADER_BYTES + HASH_BYTES || len + FOOTER_BYTES > fileSize) return 'table_corrupt'
  return len
}

function chunkCount(size: number, chunkSize: number): number {
  return Math.ceil(size / chunkSize)
}

function encodeTable(digest: Uint8Array, size: number, chunkSize: number, hashes: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + hashes.length + HASH_BYTES)
  const dv = new DataView(out.buffer)
  out.set(MAGIC, 0)
  dv.setUint32(8, chunkSize, true)
  dv.setBigUint64(12, BigInt(size), true)
  out.set(digest, 20)
  dv.setUint32(52, hashes.length / HASH_BYTES, true)
  out.set(hashes, HEADER_BYTES)
  out.set(blake3(out.subarray(0, HEADER_BYTES + hashes.length)), HEADER_BYTES + hashes.length)
  return out
}

/**
 * Decodes and checks an encoded table: magic, lengths, checksum, and that it is bound to
 * `expected` (address, and size when given). Returns the problem instead of throwing so callers
 * can build the right error.
 * @internal
 */
export function decodeTable(bytes: Uint8Array, expected: { address: Address; size?: number }): ChunkTable | TableProblem {
  if (bytes.length < HEADER_BYTES + HASH_BYTES) return 'table_corrupt'
  for (let k = 0; k < MAGIC.length; k++) if (bytes[k] !== MAGIC[k]) return 'table_corrupt'
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const chunkSize = dv.getUint32(8, true)
  const bigSize = dv.getBigUint64(12, true)
  const count = dv.getUint32(52, true)
  if (bytes.length !== HEADER_BYTES + count * HASH_BYTES + HASH_BYTES) return 'table_corrupt'
  const body = bytes.subarray(0, bytes.length - HASH_BYTES)
  const sum = blake3(body)
  for (let k = 0; k < HASH_BYTES; k++) if (sum[k] !== bytes[body.length + k]) return 'table_corrupt'
  // Checksum is good from here on: any disagreement below is a table for another object.
  if (chunkSize < 1 || bigSize > BigInt(Number.MAX_SAFE_INTEGER)) return 'table_mismatch'
  const size = Number(bigSize)
  if (count !== chunkCount(size, chunkSize)) return 'table_mismatch'
  if (toAddress(bytes.subarray(20, 52)) !== expected.address) return 'table_mismatch'
  if (expected.size !== undefined && expected.size !== size) return 'table_mismatch'
  return new ChunkTable(expected.address, size, chunkSize, bytes.slice(HEADER_BYTES, HEADER_BYTES + count * HASH_BYTES))
}

/**
 * The hashers of a {@link ChunkTableBuilder} are fed in runs aligned on this many bytes of the
 * object: 16 BLAKE3 chunks, the widest SIMD degree (AVX-512).
 */
const HASH_ALIGN = 16 * 1024

/**
 * Hashes a stream as it arrives: the whole-object digest (the address) and, aligned on
 * `chunkSize` boundaries whatever the input chunking, the digest of every chunk.
 *
 * Two BLAKE3 passes over every byte: the chunk digests are hashes of each chunk on its own, which
 * share no work with the whole-object hash (BLAKE3 numbers the 1 KiB blocks of a chunk from 0 in
 * one and from the chunk's offset in the other). Folding them into one pass needs chunk hashes
 * that are subtrees of the address's tree (a bao outboard table) and a binding that exposes
 * subtree chaining values. What it saves today: an object of at most one chunk has the address
 * of its only chunk, so with `keepsInput` (the caller never changes bytes it fed) the whole-object
 * hasher starts only once the input crosses the first chunk, fed first with the pieces of that
 * chunk (held by reference until then), and an object of one chunk is hashed once.
 * @internal
 */
export class ChunkTableBuilder {
  readonly chunkSize: number
  #whole: Blake3Hasher | undefined
  #chunk: Blake3Hasher
  readonly #newHasher: () => Blake3Hasher
  #inChunk = 0
  #size = 0
  #hashes: Uint8Array[] = []
  /** The pieces fed so far while the whole-object hasher waits (all within the first chunk). */
  #first: Uint8Array[] | undefined
  /** Bytes handed to the hashers (the others wait in the carry buffer). */
  #fed = 0
  #carry: Uint8Array | undefined
  #carried = 0

  /**
   * @param keepsInput the bytes fed are never changed afterwards (pieces handed over), so the
   *   builder may hold them by reference until it knows whether the object is one chunk.
   * @param newHasher where its hashers come from (tests count them).
   */
  constructor(chunkSize: number, keepsInput = false, newHasher: () => Blake3Hasher = createBlake3) {
    this.chunkSize = chunkSize
    this.#newHasher = newHasher
    this.#chunk = newHasher()
    if (keepsInput) this.#first = []
    else this.#whole = newHasher()
  }

  /** Bytes fed so far. */
  get size(): number {
    return this.#size
  }

  /**
   * Feeds the next bytes of the object. The hashers are fed in runs that start and end on
   * {@link HASH_ALIGN} boundaries of the object (a piece's ragged ends are gathered in a small
   * carry buffer): BLAKE3 hashes a run in wide SIMD subtrees only from such a boundary on, and
   * request bodies arrive in socket-sized pieces that fall anywhere (hashing them as they come cost
   * 16% more instructions than aligned blocks).
   */
  update(data: Uint8Array): void {
    this.#size += data.length
    let off = 0
    if (this.#carried > 0) {
      const carry = this.#carry!
      off = Math.min(HASH_ALIGN - this.#carried, data.length)
      carry.set(off === data.length ? data : data.subarray(0, off), this.#carried)
      this.#carried += off
      if (this.#carried < HASH_ALIGN) return
      this.#feed(carry, true)
      this.#carried = 0
    }
    const rest = data.length - off
    const aligned = rest - (rest % HASH_ALIGN)
    if (aligned > 0) this.#feed(off === 0 && aligned === data.length ? data : data.subarray(off, off + aligned), false)
    if (aligned < rest) {
      this.#carry ??= new Uint8Array(HASH_ALIGN)
      this.#carry.set(data.subarray(off + aligned), 0)
      this.#carried = rest - aligned
    }
  }

  /** Hashes `data` (the next bytes, from an aligned offset); `transient`: its buffer is reused. */
  #feed(data: Uint8Array, transient: boolean): void {
    const first = this.#first
    if (first === undefined) this.#whole!.update(data)
    else if (this.#fed + data.length <= this.chunkSize) first.push(transient ? data.slice() : data)
    else {
      // More than one chunk after all: the address needs its own pass, from the first byte.
      const whole = this.#newHasher()
      for (const p of first) whole.update(p)
      whole.update(data)
      this.#whole = whole
      this.#first = undefined
    }
    this.#fed += data.length
    let off = 0
    while (off < data.length) {
      const take = Math.min(this.chunkSize - this.#inChunk, data.length - off)
      this.#chunk.update(off === 0 && take === data.length ? data : data.subarray(off, off + take))
      this.#inChunk += take
      off += take
      if (this.#inChunk === this.chunkSize) {
        // One hasher for every chunk: a new native hasher per 64 KiB chunk cost as much CPU as
        // hashing the chunk (its object is created and collected), about 0.2 ms per MiB put.
        this.#hashes.push(this.#chunk.digest())
        this.#chunk.reset()
        this.#inChunk = 0
      }
    }
  }

  /** Finishes hashing; the builder cannot be used afterwards. */
  finish(): ChunkTable {
    // The last bytes: the carry is not written again, so it may be held as it is.
    if (this.#carried > 0) this.#feed(this.#carry!.subarray(0, this.#carried), false)
    this.#carried = 0
    if (this.#inChunk > 0) this.#hashes.push(this.#chunk.digest())
    const hashes = new Uint8Array(this.#hashes.length * HASH_BYTES)
    for (const [i, h] of this.#hashes.entries()) hashes.set(h, i * HASH_BYTES)
    // One chunk at most (and the whole hasher never started): the address is that chunk's hash.
    const digest = this.#whole !== undefined ? this.#whole.digest() : this.#hashes.length === 1 ? this.#hashes[0]! : blake3(new Uint8Array(0))
    this.#hashes = []
    this.#first = undefined
    return new ChunkTable(toAddress(digest), this.#size, this.chunkSize, hashes)
  }
}

/**
 * Validates a chunk size option.
 * @throws {@link MalformedError} (details `{ field: 'chunkSize' }`) when out of bounds.
 * @internal
 */
export function checkChunkSize(chunkSize: number): number {
  if (!Number.isInteger(chunkSize) || chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) {
    throw new MalformedError(`chunkSize must be an integer in [${MIN_CHUNK_SIZE}, ${MAX_CHUNK_SIZE}], got ${chunkSize}`, {
      details: { field: 'chunkSize', value: chunkSize },
    })
  }
  return chunkSize
}
