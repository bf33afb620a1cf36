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
  const fetch = (k: number): Promise<Uint8Array | HashedBlock> => {
    const len = blockLen(k)
    return readHashed?.(k, len) ?? readChunk(k, len)
  }
  let i = Math.floor(r.start / cs)
  let pending: Promise<Uint8Array | HashedBlock> | undefined = fetch(i)
  try {
    while (pending !== undefined) {
      const got: Uint8Array | HashedBlock = await pending
      const next = i + per
      pending = next <= last ? fetch(next) : undefined
      const want = Math.min(per, last - i + 1)
      const block = got instanceof Uint8Array ? got : got.bytes
      const ok = got instanceof Uint8Array ? table.verifyRun(i, block) : table.matchRun(i, block, got.digests)
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
