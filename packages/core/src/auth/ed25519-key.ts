/**
 * Ed25519 key generation ({@link generateEd25519KeyPair}) and public-key strength (RFC 8032
 * section 5.1): whether 32 bytes are a canonical encoding of a curve point outside the
 * small-order subgroup. `node:crypto` (OpenSSL) verifies against any 32 bytes that decode,
 * including the eight small-order points, and for those one signature (R = identity, S = 0 with
 * the identity key) verifies for every message: a key like that in an issuer key set or a signer
 * set would let anyone forge. Plain bigint arithmetic over
 * GF(2^255 - 19), run once per key import.
 *
 * @module
 */

import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto'

const P = (1n << 255n) - 19n
const mod = (a: bigint): bigint => {
  const r = a % P
  return r < 0n ? r + P : r
}
function pow(b: bigint, e: bigint): bigint {
  let r = 1n
  b = mod(b)
  while (e > 0n) {
    if (e & 1n) r = (r * b) % P
    b = (b * b) % P
    e >>= 1n
  }
  return r
}
const inv = (a: bigint): bigint => pow(a, P - 2n)
const D = mod(-121665n * inv(121666n))
const SQRT_M1 = pow(2n, (P - 1n) / 4n)

/** The affine point of an encoded key, or undefined when the encoding is not canonical or not on the curve. */
function decodePoint(bytes: Uint8Array): { x: bigint; y: bigint } | undefined {
  if (bytes.length !== 32) return undefined
  let y = 0n
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? bytes[i]! & 0x7f : bytes[i]!)
  const sign = bytes[31]! >> 7
  if (y >= P) return undefined // non-canonical y
  const u = mod(y * y - 1n)
  const v = mod(D * y * y + 1n)
  let x = mod(u * pow(v, 3n) * pow(u * pow(v, 7n), (P - 5n) / 8n))
  const vx2 = mod(v * x * x)
  if (vx2 === mod(-u)) x = mod(x * SQRT_M1)
  else if (vx2 !== u) return undefined // not on the curve
  if (x === 0n && sign === 1) return undefined // non-canonical: -0
  if (Number(x & 1n) !== sign) x = P - x
  return { x, y }
}

function add(a: { x: bigint; y: bigint }, b: { x: bigint; y: bigint }): { x: bigint; y: bigint } {
  // Complete twisted Edwards addition (a = -1; d is not a square, so no exceptional cases).
  const t = mod(D * a.x * b.x * a.y * b.y)
  return { x: mod((a.x * b.y + a.y * b.x) * inv(1n + t)), y: mod((a.y * b.y + a.x * b.x) * inv(1n - t)) }
}

/**
 * True when `raw` (32 bytes) is a canonical encoding of a curve point outside the small-order
 * subgroup (8·P is not the identity). Keys that fail are refused wherever RON imports a public
 * key: issuer keys ({@link publicKeyFromJwk}) and registry signer keys.
 *
 * @example
 * ```ts
 * isStrongEd25519Key(Buffer.from(jwk.x, 'base64url')) // false for the identity point 01 00…00
 * ```
 */
export function isStrongEd25519Key(raw: Uint8Array): boolean {
  const pt = decodePoint(raw)
  if (pt === undefined) return false
  let q = pt
  for (let i = 0; i < 3; i++) q = add(q, q) // 8·P
  return !(q.x === 0n && q.y === 1n)
}


/** The PKCS #8 (RFC 8410) DER prefix of an Ed25519 private key; the 32-byte seed follows. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/**
 * A fresh Ed25519 key pair, from 32 random bytes (`randomBytes`) imported as PKCS #8: what RON
 * generates every issuer, log and signer key with.
 *
 * Why not `generateKeyPairSync('ed25519')`: on Node 20 its key-generation job stays alive until a
 * garbage collection, and the job's destructor takes the key's lock. Exporting the key (to JWK, as
 * RON does to write and publish keys) holds that lock while it allocates; when that allocation
 * runs the collection, the process deadlocks on itself: a CI run hung that way in a registry
 * test, and `node --gc-interval=97` with a loop generating a pair and exporting both halves hangs
 * within ~15,000 iterations (main thread in a futex under `~KeyGenJob`, from
 * `ExportJWKEdKey`). A key imported from its seed has no such job.
 *
 * @example
 * ```ts
 * import { generateEd25519KeyPair } from '@ron/core'
 * const { privateKey, publicKey } = generateEd25519KeyPair()
 * const jwk = publicKey.export({ format: 'jwk' })
 * ```
 */
export function generateEd25519KeyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, randomBytes(32)]), format: 'der', type: 'pkcs8' })
  return { privateKey, publicKey: createPublicKey(privateKey) }
}
