/**
 * The put pipeline shared by every backend: pull the source, enforce `maxBytes` and cancellation,
 * hash into the address and the chunk table, hand every piece to the backend's sink, and check
 * `expect` at the end.
 *
 * @module
 */

import { IntegrityFailedError, MalformedError, OverLimitError, abortReason } from '@ron/core'
import type { Address } from '@ron/core'
import { ChunkTableBuilder } from './integrity.js'
import type { ChunkTable } from './integrity.js'

/** Runs `fn`, turning a synchronous throw into a rejection (methods never throw synchronously). */
export function attempt<T>(fn: () => T | Promise<T>): Promise<T> {
  // A throw inside the executor rejects the promise; a returned promise is adopted.
  return new Promise<T>((resolve) => resolve(fn()))
}

/**
 * Races one promise at a time against an abort signal with a single listener for the whole
 * stream. Deliberately not `Promise.race` per piece against a long-lived promise (each race would
 * leave a reaction on it that keeps the piece alive), nor an add/removeEventListener per piece.
 */
class AbortWatch {
  #wake: ((e: unknown) => void) | undefined
  readonly #signal: AbortSignal | undefined
  readonly #onAbort = (): void => {
    this.#wake?.(abortReason(this.#signal!))
  }

  constructor(signal: AbortSignal | undefined) {
    this.#signal = signal
    signal?.addEventListener('abort', this.#onAbort, { once: true })
  }

  race<T>(p: Promise<T>): Promise<T> {
    const signal = this.#signal
    if (signal === undefined) return p
    if (signal.aborted) {
      p.catch(() => undefined)
      return Promise.reject(abortReason(signal))
    }
    return new Promise<T>((resolve, reject) => {
      this.#wake = reject
      p.then(resolve, reject)
    })
  }

  dispose(): void {
    this.#wake = undefined
    this.#signal?.removeEventListener('abort', this.#onAbort)
  }
}

/** What {@link pump} needs to know. */
export interface PumpOptions {
  maxBytes?: number | undefined
  signal?: AbortSignal | undefined
}

/** What {@link ingest} needs to know. */
export interface IngestOptions extends PumpOptions {
  chunkSize: number
  expect?: Address | undefined
}

/**
 * Streams `source` into `sink`, hashing as it goes: one pass yields both the address and the
 * chunk table. The sink sees every byte exactly once, in order; when it returns a promise, the
 * next piece is pulled once that settles (a sink that returns nothing is synchronous). Rejects (after releasing the source) on abort, on
 * crossing `maxBytes` (before the offending piece reaches the sink) and on an `expect` mismatch.
 *
 * @throws {@link OverLimitError} details `{ limit }`.
 * @throws {@link IntegrityFailedError} details `{ expected, actual }`.
 * @throws {@link MalformedError} when the source yields something other than bytes.
 * @throws `CanceledError` (or the signal's reason) on abort.
 */
export async function ingest(
  source: AsyncIterable<Uint8Array>,
  opts: IngestOptions,
  sink: (piece: Uint8Array) => Promise<void> | void,
): Promise<ChunkTable> {
  const builder = new ChunkTableBuilder(opts.chunkSize)
  await pump(source, opts, (piece) => {
    builder.update(piece)
    return sink(piece)
  })
  return expectAddress(builder.finish(), opts.expect)
}

/**
 * Rejects with {@link IntegrityFailedError} (details `{ expected, actual }`) when `expect` is
 * given and is not `table`'s address; returns `table` otherwise.
 */
export function expectAddress(table: ChunkTable, expect: Address | undefined): ChunkTable {
  if (expect !== undefined && expect !== table.address) {
    throw new IntegrityFailedError('content does not match the expected address', {
      details: { expected: expect, actual: table.address },
    })
  }
  return table
}

/**
 * The loop of {@link ingest} without the hashing, for a sink that hashes what it stores itself
 * (the filesystem backend hashes the blocks it gathers: fewer native calls than per piece, and
 * the address is computed from the very bytes that are written). Pulls `source` into `sink`, every
 * byte once, in order, waiting on the sink's promise when it returns one; enforces `maxBytes`
 * (before the offending piece reaches the sink), the signal and the piece type. Resolves to the
 * number of bytes taken.
 *
 * @throws {@link OverLimitError} details `{ limit }`.
 * @throws {@link MalformedError} when the source yields something other than bytes.
 * @throws `CanceledError` (or the signal's reason) on abort.
 */
export async function pump(source: AsyncIterable<Uint8Array>, opts: PumpOptions, sink: (piece: Uint8Array) => Promise<void> | void): Promise<number> {
  const { signal, maxBytes } = opts
  if (signal?.aborted) throw abortReason(signal)
  if (maxBytes !== undefined && !(maxBytes >= 0)) {
    throw new MalformedError('maxBytes must be a non-negative number', { details: { field: 'maxBytes' } })
  }
  let size = 0
  const it = source[Symbol.asyncIterator]()
  const watch = new AbortWatch(signal)
  let done = false
  try {
    for (;;) {
      const r = await watch.race(it.next())
      if (r.done) {
        done = true
        break
      }
      const piece: unknown = r.value
      if (!(piece instanceof Uint8Array)) {
        throw new MalformedError('put source must yield Uint8Array chunks', { details: { field: 'body' } })
      }
      if (piece.length === 0) continue
      if (maxBytes !== undefined && size + piece.length > maxBytes) {
        throw new OverLimitError(`object exceeds ${maxBytes} bytes`, { details: { limit: maxBytes } })
      }
      size += piece.length
      const w = sink(piece)
      if (w !== undefined) await w
      if (signal?.aborted) throw abortReason(signal)
    }
  } finally {
    watch.dispose()
    // Release the producer (close its stream) when we stop early. Not awaited: a generator that is
    // suspended in a pending next() only runs return() once that settles, which may be never.
    if (!done && typeof it.return === 'function') {
      try {
        void Promise.resolve(it.return()).catch(() => undefined)
      } catch {
        // a throwing return() must not mask the original error
      }
    }
  }
  return size
}
