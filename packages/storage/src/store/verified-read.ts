/**
 * Verified chunk streaming shared by every backend: read each chunk covering a range whole, check
 * it against the chunk table, and only then yield the requested part of it. One chunk is read
 * ahead while the current one is consumed, so at most two chunks are buffered.
 *
 * @module
 */

import { IntegrityFailedError, RangeNotSatisfiableError, abortReason } from '@ron/core'
import type { ChunkTable } from './integrity.js'
import type { ByteRange, VerifyResult } from './types.js'

/**
 * Reads chunk `index` (`length` bytes at `index * chunkSize`) into a fresh buffer. Returns fewer
 * bytes when the data ends early (a truncated file); that chunk then fails verification.
 */
export type ChunkSource = (index: number, length: number) => Promise<Uint8Array>

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
 * Yields the verified bytes of `range` (inclusive). Throws {@link IntegrityFailedError} with
 * details `{ address, chunk }` before yielding anything of a chunk that does not verify.
 * `isOpen` is consulted between chunks so a closed reader stops promptly.
 */
export async function* readVerified(
  table: ChunkTable,
  range: ByteRange | undefined,
  signal: AbortSignal | undefined,
  readChunk: ChunkSource,
  checkOpen: () => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  checkOpen()
  if (signal?.aborted) throw abortReason(signal)
  const r = resolveRange(range, table.size)
  if (r === undefined) return
  const cs = table.chunkSize
  const first = Math.floor(r.start / cs)
  const last = Math.floor(r.end / cs)
  let pending: Promise<Uint8Array> | undefined = readChunk(first, table.chunkLength(first))
  try {
    for (let i = first; i <= last; i++) {
      const bytes: Uint8Array = await pending!
      pending = i < last ? readChunk(i + 1, table.chunkLength(i + 1)) : undefined
      if (!table.verifyChunk(i, bytes)) {
        throw new IntegrityFailedError(`chunk ${i} of ${table.address} failed verification`, {
          details: { address: table.address, chunk: i },
        })
      }
      const base = i * cs
      const from = Math.max(r.start - base, 0)
      const to = Math.min(r.end - base + 1, bytes.length)
      yield from === 0 && to === bytes.length ? bytes : bytes.subarray(from, to)
      checkOpen()
      if (signal?.aborted) throw abortReason(signal)
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
  for (let i = 0; i < table.count; i++) {
    if (signal?.aborted) throw abortReason(signal)
    let bytes: Uint8Array
    try {
      bytes = await readChunk(i, table.chunkLength(i))
    } catch (e) {
      if (e instanceof IntegrityFailedError) {
        badChunks.push(i)
        continue
      }
      throw e
    }
    if (!table.verifyChunk(i, bytes)) badChunks.push(i)
  }
  return { ok: badChunks.length === 0, size: table.size, badChunks }
}
