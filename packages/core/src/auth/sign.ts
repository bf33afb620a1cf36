/**
 * Minting capability tokens (compact JWS, EdDSA). Passport is the real issuer; this minimal
 * signer is what the CLI uses for its admin token and what tests use through the test issuer.
 *
 * @module
 */

import { randomBytes, sign } from 'node:crypto'
import { systemClock, type Clock } from '../clock.js'
import { MalformedError } from '../errors.js'
import { encodeBase64url } from './base64url.js'
import type { IssuerKey } from './issuer-key.js'
import type { Caveats } from './types.js'

/** Input claims for {@link signToken}. Exactly one of `ttlSec` / `exp` is required. */
export interface TokenClaimsInput {
  /** Issuer. @default 'passport' */
  iss?: string
  /** Subject (who holds the token). */
  sub: string
  /** Service ids this token is for. */
  aud: string | string[]
  /** Scopes, as an array or a space-separated string. */
  scope: string | string[]
  /** Lifetime in seconds from `iat`. */
  ttlSec?: number
  /** Absolute expiry, seconds since the epoch. */
  exp?: number
  /** Not-before, seconds since the epoch. @default omitted */
  nbf?: number
  /** Issued-at, seconds since the epoch. @default the clock's now */
  iat?: number
  /** Revocation id. @default 16 random bytes, base64url */
  jti?: string
  /** Parent `jti` for an attenuated token. */
  prf?: string
  /** Caveats (`maxBytes`, `pathPrefix`, `methods`, ...). */
  ron?: Caveats
}

/** Options of {@link signToken}. */
export interface SignTokenOptions {
  /** Source of `iat`. @default systemClock */
  clock?: Clock
}

/** Normalises scopes to the wire form: one space-separated string. */
function scopeString(scope: string | string[]): string {
  const list = (Array.isArray(scope) ? scope : scope.split(' ')).filter((s) => s.length > 0)
  for (const s of list) {
    if (/\s/.test(s)) throw new MalformedError(`scope ${JSON.stringify(s)} contains whitespace`, { details: { field: 'scope' } })
  }
  return list.join(' ')
}

/**
 * Signs a capability token with `key`: header `{alg:'EdDSA', typ:'JWT', kid}`, claims as in
 * SPEC.md section 5 (`aud` always an array, `scope` a space-separated string).
 *
 * @throws {@link MalformedError} when neither `ttlSec` nor `exp` is given, or `aud` is empty.
 * @example
 * ```ts
 * const key = generateIssuerKey()
 * const token = signToken(key, { sub: 'admin', aud: ['storage', 'registry'], scope: ['storage:write'], ttlSec: 3600 })
 * ```
 */
export function signToken(key: IssuerKey, claims: TokenClaimsInput, opts: SignTokenOptions = {}): string {
  const clock = opts.clock ?? systemClock
  const iat = claims.iat ?? Math.floor(clock.now() / 1000)
  let exp: number
  if (claims.exp !== undefined) exp = claims.exp
  else if (claims.ttlSec !== undefined) exp = iat + claims.ttlSec
  else throw new MalformedError('token needs ttlSec or exp', { details: { field: 'exp' } })
  if (!Number.isFinite(exp)) throw new MalformedError('token exp must be finite', { details: { field: 'exp' } })
  const aud = Array.isArray(claims.aud) ? [...claims.aud] : [claims.aud]
  if (aud.length === 0 || aud.some((a) => a.length === 0)) throw new MalformedError('token aud must name at least one service', { details: { field: 'aud' } })

  const payload: Record<string, unknown> = {
    iss: claims.iss ?? 'passport',
    sub: claims.sub,
    aud,
    scope: scopeString(claims.scope),
    iat,
    ...(claims.nbf === undefined ? {} : { nbf: claims.nbf }),
    exp,
    jti: claims.jti ?? newTokenId(),
    ...(claims.prf === undefined ? {} : { prf: claims.prf }),
    ...(claims.ron === undefined ? {} : { ron: claims.ron }),
  }
  const header = encodeBase64url(JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid: key.kid }))
  const body = encodeBase64url(JSON.stringify(payload))
  const input = `${header}.${body}`
  const sig = sign(null, Buffer.from(input, 'ascii'), key.privateKey)
  return `${input}.${sig.toString('base64url')}`
}

/**
 * A fresh token id (`jti`): 128 random bits in base64url (22 characters) that never begins with
 * `-`, so the id can be passed as a command-line argument (`ron-node token revoke <jti>`) without
 * being read as an option. About one id in 64 would otherwise start with `-`; such a draw is
 * replaced by a new one, which leaves the id uniform over the ids that do not.
 *
 * @param random - the source of random bytes (default `crypto.randomBytes`).
 */
export function newTokenId(random: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const id = random(16).toString('base64url')
    if (id.charCodeAt(0) !== 0x2d) return id
  }
}
