/**
 * Injectable randomness for jitter and sampling. Tests pass a seeded source
 * (`seededRandom` in `@ron/core/testing`) so that jittered schedules are reproducible.
 *
 * @module
 */

/** A source of uniformly distributed numbers in `[0, 1)`. */
export interface Random {
  next(): number
}

/** `Math.random()` as a {@link Random}. Not for keys or tokens (use `node:crypto`). */
export const systemRandom: Random = { next: () => Math.random() }
