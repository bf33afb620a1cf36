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

/** Two base-36 digits, zero-padded, for every value below 36²: the low digits of the counter. */
const LOW = 36 * 36
let lowDigits: readonly string[] | undefined

/**
 * Correlation ids for one process: `<6 random base-36 characters>-<base-36 counter>`, at most
 * 12 characters. Generation is on the hot path: a random prefix plus a counter is unique enough
 * for correlating logs and costs no syscall or crypto per request. The counter's two low base-36
 * digits come from a table and the rest is kept as a string that changes every 1296 ids, so an id
 * is one short concatenation instead of a `toString(36)` (a call into the runtime) per request. @internal
 */
export class CorrIdGenerator {
  #prefix: string
  #counter: number
  /** `<prefix>-<counter's high digits>`, for the counter's current block of 1296. */
  #head = ''
  #block = -1

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
      this.#block = -1
    }
    const n = this.#counter
    // The first block has no high digits: its ids keep the short, unpadded form.
    if (n < LOW) return `${this.#prefix}-${n.toString(36)}`
    const block = Math.floor(n / LOW)
    if (block !== this.#block) {
      this.#block = block
      this.#head = `${this.#prefix}-${block.toString(36)}`
    }
    lowDigits ??= Array.from({ length: LOW }, (_, i) => i.toString(36).padStart(2, '0'))
    return this.#head + lowDigits[n - block * LOW]!
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
