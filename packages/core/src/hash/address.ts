/**
 * Content addresses: `b3:` followed by the 64 lowercase hex digits of a BLAKE3-256 digest
 * (SPEC.md section 4). Anything else is `400 Malformed`.
 *
 * @module
 */

import { MalformedError } from '../errors.js'
import { blake3 } from './blake3.js'

/** A well-formed content address: `b3:` + 64 lowercase hex digits. */
export type Address = `b3:${string}`

const ADDRESS_RE = /^b3:[0-9a-f]{64}$/

/**
 * The address of a 32-byte digest.
 * @throws {@link MalformedError} when `digest` is not 32 bytes.
 */
export function toAddress(digest: Uint8Array): Address {
  if (digest.length !== 32) {
    throw new MalformedError(`digest must be 32 bytes, got ${digest.length}`, { details: { field: 'digest', length: digest.length } })
  }
  // One native hex encoding into a flat string (not 32 appends building a rope to flatten later).
  return `b3:${Buffer.from(digest.buffer, digest.byteOffset, 32).toString('hex')}`
}

/**
 * The address of `data` (BLAKE3-256 of the whole content).
 * @example
 * ```ts
 * addressOf(new Uint8Array()) // 'b3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262'
 * ```
 */
export function addressOf(data: Uint8Array): Address {
  return toAddress(blake3(data))
}

/** True when `s` is a well-formed {@link Address}. */
export function isAddress(s: unknown): s is Address {
  return typeof s === 'string' && ADDRESS_RE.test(s)
}

/**
 * Validates `s` as an {@link Address}: exactly `b3:` + 64 lowercase hex digits, nothing trimmed
 * or case-folded.
 *
 * @param field - names the input in the error's `details.field` (e.g. `'address'`).
 * @throws {@link MalformedError} with `details` `{ field?, value }` (value truncated to 80 chars).
 */
export function parseAddress(s: string, field?: string): Address {
  if (isAddress(s)) return s
  const value = typeof s === 'string' ? (s.length > 80 ? `${s.slice(0, 80)}…` : s) : String(typeof s)
  const details: Record<string, unknown> = field === undefined ? { value } : { field, value }
  throw new MalformedError('malformed address: expected "b3:" followed by 64 lowercase hex digits', { details })
}

/**
 * The 32-byte digest named by an address.
 * @throws {@link MalformedError} when `a` is not a well-formed address.
 */
export function addressToDigest(a: string): Uint8Array {
  const s = parseAddress(a)
  return new Uint8Array(Buffer.from(s.slice(3), 'hex'))
}
