/**
 * Verified streaming shared by every backend: read the chunks covering a range in blocks of
 * several whole chunks (about {@link READ_BLOCK_BYTES}), check every chunk of a block against the
 * chunk table, and only then yield the requested part of the block. One block is read ahead while
 * the current one is consumed, so at most two blocks are buffered; a read is one `pread` and one
 * yield per block, not per chunk.
 *
 * @module
 */

import { IntegrityFailedError, RangeNotSatisfiableError, abortReason } from '@ron/core'
import type { ChunkTable } from './integrity.js'
import type { ByteRange, VerifyResult } from './types.js'
import type { HashedBlock } from './hash-pool.js'

/** Target size of one verified read (rounded down to whole chunks, at least one chunk). */
export const READ_BLOCK_BYTES = 1024 * 1024

/**
 * Reads chunk `index` (`length` bytes at `index * chunkSize`) into a fresh buffer. Returns fewer
 * bytes when the data ends early (a truncated file); that chunk then fails verification.
 */
export type ChunkSource = (index: number, length: number) => Promise<Uint8Array>

/**
 * Reads and hashes a block elsewhere (a worker thread): chunk `index` onwards, `length` bytes, with
 * the digest of each chunk. Returns `undefined` to have this block read by the {@link ChunkSource}
 * and hashed here instead.
 */
export type HashedSource = (index: number, length: number) => Promise<HashedBlock> | undefined

/**
 * Verified blocks shared by concurrent reads of one object file (many clients streaming the same
 * hot object read and hash each block once). Only bytes that verified are ever handed out.
 */
export interface BlockMemo {
  /** The verified block starting at chunk `first` (pending or done; `undefined` inside: not verified), if remembered. */
  get(first: number): Promise<Uint8Array | undefined> | undefined
  /** Offers the block starting at chunk `first`, `bytes` long: resolves to it once every chunk verified, else `undefined`. */
  set(first: number, block: Promise<Uint8Array | undefined>, bytes: number): void
}

interface Loaded {
  block: Uint8Array
  ok: number
}

/**
 * Checks `range` against `size` and returns it (the whole object when absent; `undefined` for an
 * empty object read without a range).
 * @throws {@link RangeNotSatisfiableError} details `{ size, start, end }`.
 */
export function resolveRange(range: ByteRange | undefined, size: number): ByteRange | undefined {
  if (range === undefined) return size === 0 ? undefined : { start: 0, end: size - 1 }
  const { start, end } = range
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end >= size) {
    throw new RangeNotSatisfiableError('range outside the object', { details: { size, start, end } })
  }
  return { start, end }
}

/**
 * Yields the verified bytes of `range` (inclusive), a block of several chunks at a time. Throws
 * {@link IntegrityFailedError} with details `{ address, chunk }` at the first chunk that does not
 * verify, after yielding the verified chunks before it and nothing of it. `checkOpen` is consulted
 * between blocks so a closed reader stops promptly.
 */
export async function* readVerified(
  table: ChunkTable,
  range: ByteRange | undefined,
  signal: AbortSignal | undefined,
  readChunk: ChunkSource,
  checkOpen: () => void,
  readHashed?: HashedSource,
  blocks?: BlockMemo,
): AsyncGenerator<Uint8Array, void, undefined> {
  checkOpen()
  if (signal?.aborted) throw abortReason(signal)
  const r = resolveRange(range, table.size)
  if (r === undefined) return
  const cs = table.chunkSize
  const per = Math.max(1, Math.floor(READ_BLOCK_BYTES / cs))
  const last = Math.floor(r.end / cs)
  /** Byte length of the block of chunks `[i, min(i + per, last + 1))`. */
  const blockLen = (i: number): number => Math.min(Math.min(i + per, last + 1) * cs, table.size) - i * cs
  /** Reads the block at chunk `k` and verifies it: `ok` chunks in a row verified. */
  const load = (k: number): Promise<Loaded> => {
    const len = blockLen(k)
    return (readHashed?.(k, len) ?? readChunk(k, len)).then((got) => {
      const block = got instanceof Uint8Array ? got : got.bytes
      return { block, ok: got instanceof Uint8Array ? table.verifyRun(k, block) : table.matchRun(k, block, got.digests) }
    })
  }
  /** Whole-object blocks (starting at a multiple of `per`, ending in range) may be shared through `blocks`. */
  const fetch = (k: number): Promise<Loaded> => {
    const want = Math.min(per, last - k + 1)
    if (blocks === undefined || k % per !== 0 || Math.min(k + per, table.count) - 1 > last) return load(k)
    const memo = blocks.get(k)
    if (memo !== undefined) return memo.then((b) => (b !== undefined ? { block: b, ok: want } : load(k)))
    const p = load(k)
    blocks.set(
      k,
      p.then(
        (l) => (l.ok === want ? l.block : undefined),
        () => undefined,
      ),
      blockLen(k),
    )
    return p
  }
  let i = Math.floor(r.start / cs)
  let pending: Promise<Loaded> | undefined = fetch(i)
  try {
    while (pending !== undefined) {
      const { block, ok }: Loaded = await pending
      const next = i + per
      pending = next <= last ? fetch(next) : undefined
      const want = Math.min(per, last - i + 1)
      const base = i * cs
      const from = Math.max(r.start - base, 0)
      if (ok < want) {
        // Serve the verified prefix, then fail at the bad chunk.
        const to = Math.min(r.end - base + 1, ok * cs)
        if (to > from) yield block.subarray(from, to)
        throw new IntegrityFailedError(`chunk ${i + ok} of ${table.address} failed verification`, {
          details: { address: table.address, chunk: i + ok },
        })
      }
      const to = Math.min(r.end - base + 1, block.length)
      yield from === 0 && to === block.length ? block : block.subarray(from, to)
      checkOpen()
      if (signal?.aborted) throw abortReason(signal)
      i = next
    }
  } finally {
    // Let an outstanding read-ahead finish before the caller releases the file handle, and keep
    // its failure (if any) from becoming an unhandled rejection.
    if (pending) await pending.catch(() => undefined)
  }
}

/**
 * Reads every chunk of an object and reports those that fail verification.
 * @internal
 */
export async function verifyChunks(
  table: ChunkTable,
  readChunk: (i: number, len: number) => Promise<Uint8Array>,
  signal: AbortSignal | undefined,
): Promise<VerifyResult> {
  const badChunks: number[] = []
  const cs = table.chunkSize
  const per = Math.max(1, Math.floor(READ_BLOCK_BYTES / cs))
  for (let i = 0; i < table.count; i += per) {
    if (signal?.aborted) throw abortReason(signal)
    const n = Math.min(per, table.count - i)
    let block: Uint8Array
    try {
      block = await readChunk(i, Math.min((i + n) * cs, table.size) - i * cs)
    } catch (e) {
      if (e instanceof IntegrityFailedError) {
        for (let k = i; k < i + n; k++) badChunks.push(k)
        continue
      }
      throw e
    }
    for (let k = 0; k < n; k++) {
      const off = k * cs
      if (!table.verifyChunk(i + k, block.subarray(off, off + table.chunkLength(i + k)))) badChunks.push(i + k)
    }
  }
  return { ok: badChunks.length === 0, size: table.size, badChunks }
}
