/**
 * HMAC-SHA256 and constant-time comparison helpers shared by the provider schemes (SPEC.md §7:
 * HMAC through `node:crypto`).
 *
 * @module
 */

import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto'

/** Most secret strings whose key objects are kept (a few per provider are configured). */
export const KEY_CACHE_MAX = 64
/**
 * Key objects by secret string, one map per encoding (keyed by the secret itself, not a prefixed
 * copy: the configured string's hash is computed once, a key built per request would be hashed
 * on every lookup).
 */
const utf8Keys = new Map<string, KeyObject>()
const base64Keys = new Map<string, KeyObject | null>()

/**
 * The HMAC key object of a UTF-8 secret string, built once: `createHmac` with a string key
 * converts and imports the key on every call, which is per request on the webhook path. The
 * cache is keyed by the secret itself (it can never answer for another secret) and bounded:
 * past {@link KEY_CACHE_MAX} distinct secrets (reloads rotating many) it starts over.
 */
export function hmacKey(secret: string): KeyObject {
  let k = utf8Keys.get(secret)
  if (k === undefined) {
    k = createSecretKey(Buffer.from(secret, 'utf8'))
    if (utf8Keys.size >= KEY_CACHE_MAX) utf8Keys.clear()
    utf8Keys.set(secret, k)
  }
  return k
}

/**
 * The HMAC key object of a base64 secret (Standard Webhooks, `whsec_` prefix optional), cached
 * like {@link hmacKey}; undefined when the secret is not strict base64 or decodes to nothing.
 */
export function base64HmacKey(secret: string): KeyObject | undefined {
  let k = base64Keys.get(secret)
  if (k === undefined) {
    const raw = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret
    const key = decodeBase64Strict(raw)
    k = key === undefined || key.byteLength === 0 ? null : createSecretKey(key)
    if (base64Keys.size >= KEY_CACHE_MAX) base64Keys.clear()
    base64Keys.set(secret, k)
  }
  return k ?? undefined
}

/** Number of key objects cached by {@link hmacKey} (for tests). @internal */
export function hmacKeyCacheSize(): number {
  return utf8Keys.size + base64Keys.size
}

/** HMAC-SHA256 of `parts` (concatenated) under `key` (a string secret is used as UTF-8). */
export function hmacSha256(key: string | Uint8Array | KeyObject, ...parts: Array<string | Uint8Array>): Buffer {
  const h = createHmac('sha256', typeof key === 'string' ? hmacKey(key) : key)
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

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Decodes 64 hex digits (a SHA-256 MAC) or returns undefined. */
export function decodeHex32(s: string): Buffer | undefined {
  if (s.length !== 64) return undefined
  // Node's hex decoder stops at the first pair that is not two hex digits: 32 bytes out means
  // all 64 characters were hex (no regex on the hot path).
  const b = Buffer.from(s, 'hex')
  return b.byteLength === 32 ? b : undefined
}

/**
 * Decodes 64 hex digits into `into` (32 bytes, reused by the caller: no allocation per request);
 * false when `s` is not exactly 64 hex digits (then `into` holds garbage).
 */
export function decodeHex32Into(s: string, into: Buffer): boolean {
  // As in decodeHex32: the decoder stops at the first pair that is not two hex digits.
  return s.length === 64 && into.write(s, 0, 32, 'hex') === 32
}

/** Decodes strict standard base64 or returns undefined (no lenient skipping of bad characters). */
export function decodeBase64Strict(s: string): Buffer | undefined {
  if (s.length === 0 || s.length % 4 !== 0 || !BASE64.test(s)) return undefined
  return Buffer.from(s, 'base64')
}
