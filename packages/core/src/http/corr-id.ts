/**
 * Correlation ids (SPEC.md section 4): accepted from `X-Corr-ID` when well formed, generated
 * otherwise, echoed on every response and carried into error bodies and logs.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'

/** The header carrying the correlation id (lower case, as `node:http` presents it). */
export const CORR_ID_HEADER = 'x-corr-id'

const CORR_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/

/** True when `value` is an acceptable incoming correlation id (1-128 chars of `[A-Za-z0-9._:-]`). */
export function isValidCorrId(value: unknown): value is string {
  return typeof value === 'string' && CORR_ID_RE.test(value)
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz'
const PREFIX_LENGTH = 6
/**
 * The counter restarts under a fresh prefix before it needs a sixth base-36 digit, so an id is at
 * most 12 characters. V8 builds a string that short flat; a longer one is a rope (a `ConsString`)
 * that `node:http`'s header-value check has to flatten in the runtime on every response.
 */
const COUNTER_LIMIT = 36 ** 5

function randomPrefix(random: (n: number) => Uint8Array): string {
  const bytes = random(PREFIX_LENGTH)
  let s = ''
  for (let i = 0; i < PREFIX_LENGTH; i++) s += ALPHABET[bytes[i]! % 36]
  return s
}

/**
 * Correlation ids for one process: `<6 random base-36 characters>-<base-36 counter>`, at most
 * 12 characters. Generation is on the hot path: a random prefix plus a counter is unique enough
 * for correlating logs and costs no syscall or crypto per request. @internal
 */
export class CorrIdGenerator {
  #prefix: string
  #counter: number

  /** `random(n)` returns n random bytes; `start` is the counter's value before the first id (for tests). */
  constructor(
    private readonly random: (n: number) => Uint8Array = randomBytes,
    start = 0,
  ) {
    this.#prefix = randomPrefix(random)
    this.#counter = start
  }

  next(): string {
    if (++this.#counter >= COUNTER_LIMIT) {
      this.#prefix = randomPrefix(this.random)
      this.#counter = 1
    }
    return `${this.#prefix}-${this.#counter.toString(36)}`
  }
}

const ids = new CorrIdGenerator()

/** Generates a fresh correlation id (`<6 random base-36 characters>-<base-36 counter>`, at most 12 characters). */
export function generateCorrId(): string {
  return ids.next()
}

/** The incoming id when valid, else a generated one. */
export function corrIdFrom(header: string | string[] | undefined): string {
  return isValidCorrId(header) ? header : generateCorrId()
}
