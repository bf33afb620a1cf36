/**
 * Exponential backoff with jitter, shared by the supervisor and retry.
 *
 * @module
 */

import type { Random } from '../random.js'

/** Jitter strategy: `full` draws in `[0, d)`, `equal` in `[d/2, d)`, `none` returns `d`. */
export type Jitter = 'full' | 'equal' | 'none'

/**
 * The delay before retry number `attempt` (0-based): `min(capMs, baseMs * 2^attempt)` with jitter.
 *
 * @example
 * ```ts
 * backoffDelay(3, { baseMs: 100, capMs: 5000, jitter: 'equal' }, systemRandom) // in [400, 800)
 * ```
 */
export function backoffDelay(attempt: number, options: { baseMs: number; capMs: number; jitter?: Jitter }, random: Random): number {
  const exp = Math.min(options.capMs, options.baseMs * 2 ** Math.max(0, attempt))
  switch (options.jitter ?? 'equal') {
    case 'full':
      return random.next() * exp
    case 'none':
      return exp
    case 'equal':
      return exp / 2 + (random.next() * exp) / 2
  }
}
