/**
 * Small helpers of the BlobStore compliance suite (and of the store tests): deterministic bytes,
 * chunked sources, collectors.
 *
 * @module
 */
import type { Address } from '@ron/core'

/** Deterministic pseudo-random bytes (xorshift32), different per seed. */
export function bytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n)
  let x = (seed * 2654435761) >>> 0 || 1
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    out[i] = x & 0xff
  }
  return out
}

/** A seeded generator of integers in [lo, hi]. */
export function rng(seed: number): (lo: number, hi: number) => number {
  let x = seed >>> 0 || 1
  return (lo, hi) => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return lo + (x % (hi - lo + 1))
  }
}

/** Yields `data` in pieces of random sizes in [1, maxPiece] (copies, like a socket would). */
export async function* chunked(data: Uint8Array, seed = 7, maxPiece = 100_000): AsyncGenerator<Uint8Array> {
  const r = rng(seed)
  let off = 0
  while (off < data.length) {
    const n = Math.min(r(1, maxPiece), data.length - off)
    yield data.slice(off, off + n)
    off += n
    await Promise.resolve()
  }
}

/** Yields `data` as one piece. */
export async function* once(data: Uint8Array): AsyncGenerator<Uint8Array> {
  await Promise.resolve()
  yield data
}

/** Concatenates everything an async iterable yields, also recording each piece's length. */
export async function collect(it: AsyncIterable<Uint8Array>): Promise<{ data: Uint8Array; pieces: number[] }> {
  const parts: Uint8Array[] = []
  for await (const p of it) parts.push(p)
  return { data: concat(parts), pieces: parts.map((p) => p.length) }
}

/** Concatenation of byte arrays. */
export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let off = 0
  for (const p of parts) {
    out.set(p, off)
    off += p.length
  }
  return out
}

/** Collects a listing into a sorted array. */
export async function listAll(it: AsyncIterable<Address>): Promise<Address[]> {
  const out: Address[] = []
  for await (const a of it) out.push(a)
  return out.sort()
}

/** Rejection of `p`, failing the test when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection')
}

/** Iterates `it` until it throws; returns what was yielded before and the error. */
export async function readUntilError(it: AsyncIterable<Uint8Array>): Promise<{ data: Uint8Array; error: unknown }> {
  const parts: Uint8Array[] = []
  try {
    for await (const p of it) parts.push(p)
  } catch (error) {
    return { data: concat(parts), error }
  }
  return { data: concat(parts), error: undefined }
}
