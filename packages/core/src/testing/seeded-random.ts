/**
 * Deterministic random source for tests.
 *
 * @module
 */

import type { Random } from '../random.js'
import { RonUsageError } from '../errors.js'

/**
 * A seeded {@link Random} (mulberry32): the same seed yields the same sequence, so jittered
 * backoff and sampling are reproducible in tests.
 *
 * @example
 * ```ts
 * const r = seededRandom(42)
 * r.next() // always the same first value for seed 42
 * ```
 */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0
  return {
    next(): number {
      a = (a + 0x6d2b79f5) >>> 0
      let t = a
      t = Math.imul(t ^ (t >>> 15), t | 1)
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    },
  }
}

/** A {@link Random} that returns the given values in turn (cycling), for exact jitter tests. */
export function fixedRandom(...values: number[]): Random {
  if (values.length === 0) throw new RonUsageError('RON_INVALID_OPTION', 'fixedRandom needs at least one value')
  let i = 0
  return {
    next(): number {
      const v = values[i % values.length]!
      i++
      return v
    },
  }
}
