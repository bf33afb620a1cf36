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

/**
 * The young-generation growth factor `ron-node` sets unless told otherwise (see
 * {@link setYoungGenerationGrowth}): 1, the young generation keeps V8's initial size.
 */
export const SERVER_YOUNG_GENERATION_GROWTH = 1

/**
 * Sets by how much V8 grows the young generation (its two semi-spaces) each time a scavenge finds
 * it too small (`--semi-space-growth-factor`): 1 keeps it at the size it has when this is called
 * (V8's initial 1 MiB semi-spaces if called at process start), `'auto'` gives V8's own factor
 * (2, up to 16 MiB semi-spaces) back. Process-wide; applies from the next scavenge on. V8 may still
 * shrink the young generation when the process goes idle.
 *
 * Why a streaming server wants 1: loading a service's code and then a stream of uploads grow
 * the semi-spaces to V8's 16 MiB maximum (32 MiB committed), and request-body ArrayBuffers, whose
 * memory is outside V8's heap, are freed only by the collection that finds them dead: with large
 * semi-spaces more dead bodies wait between scavenges, and the allocator keeps the high-water
 * mark. A process cannot cap the young generation once it runs (V8 reads `--max-semi-space-size`
 * only when the heap is created, and clamps a factor below 2 given on the command line), only
 * stop its growth, which is what this does. Measured on the storage service
 * (`bench/tools/soak.ts`, 15 or 30 uploads of 64 MiB, idle RSS): 131–137 MiB with 1 against
 * 139–147 MiB on V8's factor, for about twice the scavenges (see the storage package's DESIGN.md).
 *
 * @param factor - An integer in `[1, 8]`, or `'auto'` for V8's default.
 * @throws {@link MalformedError} for any other value (details `{ field: 'factor' }`).
 * @example
 * ```ts
 * import { SERVER_YOUNG_GENERATION_GROWTH, setYoungGenerationGrowth } from '@ron/core'
 * setYoungGenerationGrowth(SERVER_YOUNG_GENERATION_GROWTH) // at process start, before loading much
 * ```
 */
export function setYoungGenerationGrowth(factor: number | 'auto'): void {
  if (factor !== 'auto' && !(Number.isInteger(factor) && factor >= 1 && factor <= 8)) {
    throw new MalformedError(`young generation growth factor must be an integer in [1, 8] or "auto", got ${String(factor)}`, {
      details: { field: 'factor' },
    })
  }
  setFlagsFromString(`--semi-space-growth-factor=${factor === 'auto' ? V8_SEMI_SPACE_GROWTH_FACTOR : factor}`)
}

/** V8's default `--semi-space-growth-factor` (what `'auto'` restores). */
const V8_SEMI_SPACE_GROWTH_FACTOR = 2
