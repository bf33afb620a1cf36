/**
 * Ed25519 issuer keys for capability tokens: generation, JWK form, and storage form.
 *
 * @module
 */

import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { generateEd25519KeyPair, isStrongEd25519Key } from './ed25519-key.js'
import { MalformedError } from '../errors.js'

/** An Ed25519 JSON Web Key (RFC 8037). `d` is present only in private keys. */
export interface Jwk {
  kty: 'OKP'
  crv: 'Ed25519'
  /** Public key, base64url. */
  x: string
  /** Private key seed, base64url (private JWKs only). */
  d?: string
  kid?: string
  alg?: 'EdDSA'
  use?: 'sig'
}

/** A JWKS document: what passport serves at `GET /v1/passport/keys`. */
export interface Jwks {
  keys: Jwk[]
}

/** An issuer's signing key and its public half. */
export interface IssuerKey {
  /** Key id put in every token header: `<thumbprint>#<epoch>` (see {@link generateIssuerKey}). */
  readonly kid: string
  readonly privateKey: KeyObject
  readonly publicKey: KeyObject
  /** The public key as a JWK with `kid`, `alg: 'EdDSA'` and `use: 'sig'`, ready for a JWKS. */
  readonly publicJwk: Jwk
}

/** Options of {@link generateIssuerKey}. */
export interface GenerateIssuerKeyOptions {
  /** Explicit key id. @default `<thumbprint>#<epoch>` */
  kid?: string
  /** Key epoch (rotation counter) used in the default kid. @default 1 */
  epoch?: number
}

/**
 * The RFC 7638 JWK thumbprint of an Ed25519 public key (SHA-256 over the canonical
 * `{"crv","kty","x"}` members, base64url).
 */
export function jwkThumbprint(jwk: Pick<Jwk, 'crv' | 'kty' | 'x'>): string {
  const canonical = `{"crv":"${jwk.crv}","kty":"${jwk.kty}","x":"${jwk.x}"}`
  return createHash('sha256').update(canonical).digest('base64url')
}

function publicJwkOf(publicKey: KeyObject, kid: string): Jwk {
  const j = publicKey.export({ format: 'jwk' }) as { kty?: string; crv?: string; x?: string }
  if (j.kty !== 'OKP' || j.crv !== 'Ed25519' || typeof j.x !== 'string') {
    throw new MalformedError('issuer key must be Ed25519', { details: { field: 'key' } })
  }
  return { kty: 'OKP', crv: 'Ed25519', x: j.x, kid, alg: 'EdDSA', use: 'sig' }
}

/**
 * Generates a fresh Ed25519 issuer key.
 *
 * The default `kid` is `<RFC 7638 thumbprint>#<epoch>`: the thumbprint names the key material,
 * the epoch its place in the rotation sequence, so verifiers can tell epochs apart at a glance.
 *
 * @example
 * ```ts
 * const key = generateIssuerKey({ epoch: 1 })
 * const token = signToken(key, { sub: 'admin', aud: ['storage'], scope: 'storage:write', ttlSec: 3600 })
 * ```
 */
export function generateIssuerKey(opts: GenerateIssuerKeyOptions = {}): IssuerKey {
  const { privateKey, publicKey } = generateEd25519KeyPair()
  return issuerKeyFrom(privateKey, publicKey, opts)
}

function issuerKeyFrom(privateKey: KeyObject, publicKey: KeyObject, opts: GenerateIssuerKeyOptions): IssuerKey {
  const base = publicJwkOf(publicKey, '')
  const kid = opts.kid ?? `${jwkThumbprint(base)}#${opts.epoch ?? 1}`
  return Object.freeze({ kid, privateKey, publicKey, publicJwk: Object.freeze({ ...base, kid }) })
}

/**
 * Serialises an issuer key (private part included) as JSON: a private JWK with its `kid`.
 * Store it in a file with mode 0600; it is a secret.
 */
export function exportIssuerKey(key: IssuerKey): string {
  const j = key.privateKey.export({ format: 'jwk' }) as { d?: string }
  if (typeof j.d !== 'string') throw new MalformedError('issuer key has no private part', { details: { field: 'key' } })
  const jwk: Jwk = { ...key.publicJwk, d: j.d }
  return `${JSON.stringify(jwk, null, 2)}\n`
}

/**
 * Reads a key written by {@link exportIssuerKey} (a private Ed25519 JWK with a `kid`).
 * @throws {@link MalformedError} when the text is not such a JWK or its `x` does not match `d`.
 */
export function importIssuerKey(text: string): IssuerKey {
  let jwk: Partial<Jwk>
  try {
    jwk = JSON.parse(text) as Partial<Jwk>
  } catch (e) {
    throw new MalformedError('issuer key file is not JSON', { details: { field: 'key' }, cause: e })
  }
  if (jwk === null || typeof jwk !== 'object' || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string' || typeof jwk.d !== 'string') {
    throw new MalformedError('issuer key must be a private Ed25519 JWK (kty OKP, crv Ed25519, x, d)', { details: { field: 'key' } })
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk.d }, format: 'jwk' })
  } catch (e) {
    throw new MalformedError('issuer key is not a valid Ed25519 key', { details: { field: 'key' }, cause: e })
  }
  const publicKey = createPublicKey(privateKey)
  const derived = publicJwkOf(publicKey, '')
  if (derived.x !== jwk.x) throw new MalformedError('issuer key: public part does not match private part', { details: { field: 'key.x' } })
  return issuerKeyFrom(privateKey, publicKey, typeof jwk.kid === 'string' ? { kid: jwk.kid } : {})
}

/**
 * Imports a public Ed25519 JWK as a `KeyObject`; `undefined` when it is not one (other key types
 * in a JWKS are ignored rather than failing the whole set), or when its `x` is a small-order point
 * or a non-canonical encoding ({@link isStrongEd25519Key}).
 */
export function publicKeyFromJwk(jwk: unknown): KeyObject | undefined {
  const j = jwk as Partial<Jwk> | null
  if (j === null || typeof j !== 'object' || j.kty !== 'OKP' || j.crv !== 'Ed25519' || typeof j.x !== 'string') return undefined
  if (j.alg !== undefined && j.alg !== 'EdDSA') return undefined
  // A small-order or non-canonically encoded key would verify forged signatures (see isStrongEd25519Key).
  if (!/^[A-Za-z0-9_-]{43}$/.test(j.x) || !isStrongEd25519Key(Buffer.from(j.x, 'base64url'))) return undefined
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: j.x }, format: 'jwk' })
  } catch {
    return undefined
  }
}
