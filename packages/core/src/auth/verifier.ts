/**
 * Local verification of capability tokens (SPEC.md section 5): compact JWS, `alg` pinned to
 * EdDSA, Ed25519 through `node:crypto`, revocation before signature work, typed failure reasons.
 *
 * @module
 */

import { verify as cryptoVerify } from 'node:crypto'
import { z } from 'zod'
import { systemClock, type Clock } from '../clock.js'
import { ForbiddenError, UnauthorizedError } from '../errors.js'
import { decodeBase64url } from './base64url.js'
import type { KeySource } from './key-source.js'
import type { RevocationCheck } from './revocation.js'
import type { Caveats, Claims, TokenVerifier } from './types.js'

/** Why a token was rejected with 401 (`details.reason` of {@link UnauthorizedError}). */
export type UnauthorizedReason =
  | 'missing'
  | 'malformed'
  | 'bad_alg'
  | 'unknown_kid'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_audience'
  | 'revoked'

/** Why a valid token was rejected with 403 (`details.reason` of {@link ForbiddenError}). */
export type ForbiddenReason = 'missing_scope' | 'caveat'

/** What the caller requires of a token. */
export interface TokenRequirement {
  /** This service's id; the token's `aud` must contain it. */
  audience: string
  /** A scope the token's `scope` must contain, e.g. `storage:write`. */
  scope?: string
}

/** Options of {@link createTokenVerifier}. */
export interface TokenVerifierOptions {
  /** Issuer public keys by `kid`. */
  keys: KeySource
  /** Revoked `jti`s, checked before signature work. @default none */
  revocations?: RevocationCheck
  /** Allowed clock skew for `exp` and `nbf`, in seconds. @default 30 */
  clockToleranceSec?: number
  /** @default systemClock */
  clock?: Clock
  /**
   * Extra checks on a token that passed everything else; throw a {@link ForbiddenError} with
   * `details.reason: 'caveat'` to refuse it.
   * @default none
   */
  caveats?: (claims: Claims, required: TokenRequirement) => void
  /** Tokens longer than this (characters) are refused as malformed without parsing. @default 8192 */
  maxTokenBytes?: number
  /**
   * When set, the token's `iss` must equal it; a mismatch is reported as `wrong_audience`.
   * @default any issuer
   */
  issuer?: string
}

const B64URL_RE = /^[A-Za-z0-9_-]+$/
// The signature may be empty on the wire (alg none); it then fails as bad_alg or bad_signature.
const B64URL_OR_EMPTY_RE = /^[A-Za-z0-9_-]*$/

// RFC 7519 section 5.1: "JWT" is recommended; media types compare case-insensitively.
const TYP_RE = /^(application\/)?jwt$/i

const numericDate = z.number().finite()
const caveatsSchema = z.looseObject({
  maxBytes: z.number().int().nonnegative().optional(),
  pathPrefix: z.string().optional(),
  methods: z.array(z.string()).optional(),
})
const claimsSchema = z.object({
  iss: z.string(),
  sub: z.string(),
  aud: z.union([z.string().min(1), z.array(z.string()).min(1)]),
  scope: z.string(),
  iat: numericDate,
  nbf: numericDate.optional(),
  exp: numericDate,
  jti: z.string().min(1),
  prf: z.string().optional(),
  ron: caveatsSchema.optional(),
})

function unauthorized(reason: UnauthorizedReason, message: string, extra: Record<string, unknown> = {}): UnauthorizedError {
  return new UnauthorizedError(message, { details: { reason, ...extra } })
}

function parseJsonSegment(seg: string): unknown {
  const bytes = decodeBase64url(seg)
  if (bytes === undefined) return undefined
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown
  } catch {
    return undefined
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * Builds the {@link TokenVerifier} every service uses. Checks, in order: size cap; exactly three
 * strict base64url segments; header (`alg` exactly `EdDSA`, `typ` `JWT` if present, no `crit`,
 * `kid` required); claim shapes; revocation of `jti` (before any signature work); key lookup by
 * `kid`; the Ed25519 signature (64 bytes); `exp`/`nbf` with tolerance; `iss` if pinned; `aud`
 * contains the audience; `scope` contains the required scope; the caveat hook.
 *
 * @throws (from `verify`) {@link UnauthorizedError} with `details.reason` one of
 * {@link UnauthorizedReason}; {@link ForbiddenError} with `details.reason` `missing_scope` or
 * `caveat`; {@link NotReadyError} when a remote key set is unavailable.
 * @example
 * ```ts
 * const verifier = createTokenVerifier({ keys: remoteKeySource({ transport }), revocations })
 * const claims = await verifier.verify(bearerToken(req.headers) ?? '', { audience: 'storage', scope: 'storage:write' })
 * ```
 */
export function createTokenVerifier(opts: TokenVerifierOptions): TokenVerifier {
  const { keys, revocations, caveats, issuer } = opts
  const tolerance = opts.clockToleranceSec ?? 30
  const clock = opts.clock ?? systemClock
  const maxTokenBytes = opts.maxTokenBytes ?? 8192

  async function verify(token: string, required: TokenRequirement): Promise<Claims> {
    if (typeof token !== 'string' || token.length === 0) throw unauthorized('missing', 'missing token')
    if (token.length > maxTokenBytes) throw unauthorized('malformed', 'token too large', { maxTokenBytes })

    const first = token.indexOf('.')
    const second = first < 0 ? -1 : token.indexOf('.', first + 1)
    if (second < 0 || token.indexOf('.', second + 1) >= 0) throw unauthorized('malformed', 'token must have three segments')
    const h = token.slice(0, first)
    const p = token.slice(first + 1, second)
    const s = token.slice(second + 1)
    if (!B64URL_RE.test(h) || !B64URL_RE.test(p) || !B64URL_OR_EMPTY_RE.test(s)) throw unauthorized('malformed', 'token segments must be base64url')

    const header = parseJsonSegment(h)
    if (!isObject(header)) throw unauthorized('malformed', 'token header is not a JSON object')
    if (header['alg'] !== 'EdDSA') throw unauthorized('bad_alg', 'token alg must be EdDSA', { alg: typeof header['alg'] === 'string' ? header['alg'] : null })
    const typ = header['typ']
    if (typ !== undefined && (typeof typ !== 'string' || !TYP_RE.test(typ))) throw unauthorized('malformed', 'token typ must be JWT')
    if (header['crit'] !== undefined) throw unauthorized('malformed', 'token header crit is not supported')
    const kid = header['kid']
    if (typeof kid !== 'string' || kid.length === 0) throw unauthorized('malformed', 'token header has no kid')

    const parsed = claimsSchema.safeParse(parseJsonSegment(p))
    if (!parsed.success) {
      const field = parsed.error.issues[0]?.path.join('.')
      throw unauthorized('malformed', 'token claims are malformed', field ? { field } : {})
    }
    const raw = parsed.data

    // Revocation before any signature work: cheap, and a revoked token never costs a verify.
    if (revocations?.isRevoked(raw.jti)) throw unauthorized('revoked', 'token revoked')

    const key = await keys.getKey(kid)
    if (key === undefined) throw unauthorized('unknown_kid', 'token signed by an unknown key', { kid })
    if (key.asymmetricKeyType !== 'ed25519') throw unauthorized('bad_alg', 'key is not Ed25519', { kid })

    const sig = decodeBase64url(s)
    if (sig?.length !== 64) throw unauthorized('bad_signature', 'token signature is not 64 bytes')
    const data = Buffer.from(token.slice(0, second), 'latin1')
    if (!cryptoVerify(null, data, key, sig)) throw unauthorized('bad_signature', 'token signature does not verify')

    const now = clock.now() / 1000
    if (now > raw.exp + tolerance) throw unauthorized('expired', 'token expired', { exp: raw.exp })
    if (raw.nbf !== undefined && now + tolerance < raw.nbf) throw unauthorized('not_yet_valid', 'token not yet valid', { nbf: raw.nbf })
    if (issuer !== undefined && raw.iss !== issuer) throw unauthorized('wrong_audience', 'token from another issuer', { iss: raw.iss })

    const aud = typeof raw.aud === 'string' ? [raw.aud] : raw.aud
    if (!aud.includes(required.audience)) throw unauthorized('wrong_audience', `token is not for ${required.audience}`, { audience: required.audience })

    const scope = raw.scope.split(' ').filter((x) => x.length > 0)
    if (required.scope !== undefined && !scope.includes(required.scope)) {
      throw new ForbiddenError(`token lacks scope ${required.scope}`, { details: { reason: 'missing_scope', scope: required.scope } })
    }

    const claims: Claims = {
      iss: raw.iss,
      sub: raw.sub,
      aud,
      scope,
      iat: raw.iat,
      exp: raw.exp,
      jti: raw.jti,
      ...(raw.nbf === undefined ? {} : { nbf: raw.nbf }),
      ...(raw.prf === undefined ? {} : { prf: raw.prf }),
      ...(raw.ron === undefined ? {} : { ron: raw.ron as Caveats }),
    }
    caveats?.(claims, required)
    return claims
  }

  return { verify }
}
