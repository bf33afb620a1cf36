/**
 * Process-wide V8 heap tuning for servers that stream bytes. `ron-node start` applies it; an
 * application that embeds the services can call it from its own entry point.
 *
 * @module
 */

import { setFlagsFromString } from 'node:v8'
import { MalformedError } from './errors.js'

/** The growing factor `ron-node start` sets unless told otherwise (see {@link setHeapGrowingFactor}). */
export const SERVER_HEAP_GROWING_FACTOR = 4

/**
 * Fixes how far V8 lets the old generation grow past the live heap before the next full
 * (mark-compact) collection: the limit becomes `live × factor` instead of V8's own estimate.
 * Process-wide; affects every isolate's main heap from the next collection on.
 *
 * Why a streaming server wants it: V8 counts ArrayBuffer bytes allocated since the last
 * mark-compact against that limit, and Node gives every piece of a request body its own
 * ArrayBuffer. When the old generation grows slowly (a server that mostly moves bytes), V8's
 * estimate settles at its floor, about 8 MB above the live heap, so every ~8 MB of request bodies
 * starts a full collection, although a cheap young-generation collection would free those
 * buffers. Measured on the storage service (`bench/tools/put-after-get.ts`): after a phase of large GETs,
 * 1 MiB uploads ran a mark-compact about every 8 uploads on V8's estimate and a few per run with a
 * factor of 4, and their p95 latency followed. The cost is memory: up to `factor` times the live
 * heap before a full collection (V8 still caps it at half way to the heap's maximum).
 *
 * @param factor - A number in `[1.1, 8]`, or `'auto'` to give the decision back to V8.
 * @throws {@link MalformedError} for any other value (details `{ field: 'factor' }`).
 * @example
 * ```ts
 * import { SERVER_HEAP_GROWING_FACTOR, setHeapGrowingFactor } from '@ron/core'
 * setHeapGrowingFactor(SERVER_HEAP_GROWING_FACTOR) // once, at process start
 * ```
 */
export function setHeapGrowingFactor(factor: number | 'auto'): void {
  if (factor !== 'auto' && !(typeof factor === 'number' && factor >= 1.1 && factor <= 8)) {
    throw new MalformedError(`heap growing factor must be a number in [1.1, 8] or "auto", got ${String(factor)}`, {
      details: { field: 'factor' },
    })
  }
  const percent = factor === 'auto' ? 0 : Math.round((factor - 1) * 100)
  setFlagsFromString(`--heap-growing-percent=${percent}`)
}
