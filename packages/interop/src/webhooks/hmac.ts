/**
 * HMAC-SHA256 and constant-time comparison helpers shared by the provider schemes (SPEC.md §7:
 * HMAC through `node:crypto`).
 *
 * @module
 */

import { createHmac, timingSafeEqual } from 'node:crypto'

/** HMAC-SHA256 of `parts` (concatenated) under `key`. */
export function hmacSha256(key: string | Uint8Array, ...parts: Array<string | Uint8Array>): Buffer {
  const h = createHmac('sha256', key)
  for (const p of parts) h.update(p)
  return h.digest()
}

/**
 * Compares `expected` with `candidate` in constant time for equal lengths. Lengths are public
 * (a SHA-256 MAC is always 32 bytes), so unequal lengths return false at once.
 */
export function constantTimeEqual(expected: Uint8Array, candidate: Uint8Array): boolean {
  if (expected.byteLength !== candidate.byteLength) return false
  return timingSafeEqual(expected, candidate)
}

const HEX64 = /^[0-9a-fA-F]{64}$/
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Decodes 64 hex digits (a SHA-256 MAC) or returns undefined. */
export function decodeHex32(s: string): Buffer | undefined {
  return HEX64.test(s) ? Buffer.from(s, 'hex') : undefined
}

/** Decodes strict standard base64 or returns undefined (no lenient skipping of bad characters). */
export function decodeBase64Strict(s: string): Buffer | undefined {
  if (s.length === 0 || s.length % 4 !== 0 || !BASE64.test(s)) return undefined
  return Buffer.from(s, 'base64')
}
