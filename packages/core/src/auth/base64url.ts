/**
 * Strict base64url (RFC 4648 section 5, no padding) for JWS segments.
 *
 * @module
 * @internal
 */

const B64URL_RE = /^[A-Za-z0-9_-]*$/

/**
 * Decodes a strict, canonical, unpadded base64url string; `undefined` when `s` has characters
 * outside the alphabet, padding, an impossible length, or non-zero trailing bits (so that every
 * byte string has exactly one accepted encoding).
 */
export function decodeBase64url(s: string): Buffer | undefined {
  if (!B64URL_RE.test(s) || s.length % 4 === 1) return undefined
  const buf = Buffer.from(s, 'base64url')
  // Canonical check: re-encoding must round-trip (rejects stray low bits in the last char).
  if (buf.toString('base64url') !== s) return undefined
  return buf
}

/** Encodes bytes or a UTF-8 string as unpadded base64url. */
export function encodeBase64url(data: Uint8Array | string): string {
  return (typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength)).toString('base64url')
}
