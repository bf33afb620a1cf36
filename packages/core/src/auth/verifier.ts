/**
 * Local verification of capability tokens (SPEC.md section 5): compact JWS, `alg` pinned to
 * EdDSA, Ed25519 through `node:crypto`, revocation before signature work, typed failure reasons,
 * and a bounded cache of verified tokens (a service sees the same bearer token many times).
 *
 * @module
 */

import { verify as cryptoVerify, type KeyObject } from 'node:crypto'
import { z } from 'zod'
import { systemClock, type Clock } from '../clock.js'
import { ForbiddenError, NotReadyError, UnauthorizedError } from '../errors.js'
import { isValidName } from '../contracts.js'
import { decodeBase64url } from './base64url.js'
import { isNormalizedPath } from './caveats.js'
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
  | 'unknown_caveat'

/**
 * The caveat catalog (SPEC.md section 5): the `ron` caveats every verifier knows. A token carrying
 * any other caveat is refused as `unknown_caveat` (caveats fail closed). `maxBytes`, `pathPrefix`
 * and `methods` are enforced by {@link checkCaveats}; `namePrefix` by index's name writes
 * ({@link nameWithinPrefix}).
 */
export const KNOWN_CAVEATS: readonly string[] = Object.freeze(['maxBytes', 'pathPrefix', 'methods', 'namePrefix'])

/** Why a valid token was rejected with 403 (`details.reason` of {@link ForbiddenError}). */
export type ForbiddenReason = 'missing_scope' | 'caveat'

/** What the caller requires of a token. */
export interface TokenRequirement {
  /** This service's id; the token's `aud` must contain it. */
  audience: string
  /** A scope the token's `scope` must contain, e.g. `storage:write`. */
  scope?: string
  /**
   * Skip the audience check (passport's own `verify` and `attenuate` endpoints, which answer for
   * any audience). Services never set this. @default false
   */
  anyAudience?: boolean
}

/** Options of the verified-token cache of {@link createTokenVerifier}. */
export interface VerifierCacheOptions {
  /** Maximum number of tokens kept (least recently used evicted first). @default 10000 */
  maxEntries?: number
}

/** The verifier {@link createTokenVerifier} returns: a {@link TokenVerifier} with cache statistics. */
export interface CachingTokenVerifier extends TokenVerifier {
  verify(token: string, required: TokenRequirement): Promise<Claims>
  /** Tokens currently cached. */
  readonly cacheSize: number
  /** Verifications answered from the cache (signature not checked again). */
  readonly cacheHits: number
  /** Drops every cached token (e.g. after the key set changed). */
  clearCache(): void
  /**
   * True while the revocation source is stale (write and admin scopes are then refused). A host
   * reports it in readiness as a write-gating dependency (`revocations`, reason `revocation_stale`).
   */
  revocationsStale(): boolean
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
  /**
   * Cache of verified tokens, keyed by the token string, kept at most until the token expires.
   * A hit skips parsing and the signature, but revocation, expiry, `nbf`, key retirement (the
   * `kid` must still resolve to the same key), audience, scope and caveats are checked on every
   * use. `false` turns it off. @default `{ maxEntries: 10000 }`
   */
  cache?: VerifierCacheOptions | false
  /** Caveats this verifier knows; any other `ron` caveat refuses the token. @default {@link KNOWN_CAVEATS} */
  knownCaveats?: readonly string[]
  /**
   * Which required scopes are reads. While the revocation source reports itself stale
   * (`revocations.isStale()`), a request requiring any other scope (writes, admin) is refused
   * with 503 `NotReady` `details.reason: 'revocation_stale'`; reads keep working.
   * @default scopes ending in `:read`
   */
  isReadScope?: (scope: string) => boolean
}

const B64URL_RE = /^[A-Za-z0-9_-]+$/
// The signature may be empty on the wire (alg none); it then fails as bad_alg or bad_signature.
const B64URL_OR_EMPTY_RE = /^[A-Za-z0-9_-]*$/

// RFC 7519 section 5.1: "JWT" is recommended; media types compare case-insensitively.
const TYP_RE = /^(application\/)?jwt$/i

const numericDate = z.number().finite()
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
  // Parsed by parseCaveats from the raw JSON: a schema would copy the keys into an ordinary
  // object, where a caveat named `__proto__` becomes the prototype and hides from the check.
  ron: z.unknown().optional(),
})

/** The `ron` claim, parsed: known caveats into a null-prototype object, unknown names kept apart. */
interface ParsedCaveats {
  caveats: Caveats
  /** Names the verifier does not know (refused as `unknown_caveat` once the signature holds). */
  unknown: string[]
}

/**
 * Parses the `ron` claim of a token (the JSON-parsed value: `__proto__` is an own key there).
 * Returns the field at fault when a known caveat has the wrong shape.
 */
function parseCaveats(raw: unknown, known: ReadonlySet<string>): ParsedCaveats | { field: string } {
  if (!isObject(raw)) return { field: 'ron' }
  const caveats = Object.create(null) as Caveats
  const unknown: string[] = []
  for (const name of Object.keys(raw)) {
    const v = raw[name]
    // `__proto__` is never a caveat, whatever a verifier is configured to know.
    if (!known.has(name) || name === '__proto__') {
      unknown.push(name)
      continue
    }
    const shape = CAVEAT_SHAPES[name]
    if (shape !== undefined && !shape(v)) return { field: `ron.${name}` }
    caveats[name] = name === 'methods' ? Object.freeze([...(v as string[])]) : v
  }
  return { caveats: Object.freeze(caveats), unknown }
}

/** The shape of each caveat of the catalog; `pathPrefix` must be normalised (SPEC.md section 5). */
const CAVEAT_SHAPES: Readonly<Record<string, (v: unknown) => boolean>> = Object.freeze(
  Object.assign(Object.create(null) as Record<string, (v: unknown) => boolean>, {
    maxBytes: (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0,
    pathPrefix: (v: unknown) => typeof v === 'string' && isNormalizedPath(v),
    methods: (v: unknown) => Array.isArray(v) && v.every((m) => typeof m === 'string' && m.length > 0),
    namePrefix: (v: unknown) => isValidName(v),
  }),
)

/**
 * The signature step of the verifier: a strict Ed25519 check (exactly 64 signature bytes,
 * `node:crypto`, which rejects a non-canonical `S`). `node:crypto` does NOT reject small-order
 * public keys: keys are checked when imported ({@link publicKeyFromJwk}, {@link isStrongEd25519Key}).
 * Exported so conformance vectors (RFC 8032, Wycheproof) run through exactly this code.
 */
export function ed25519Verify(publicKey: KeyObject, data: Uint8Array, sig: Uint8Array): boolean {
  if (sig.length !== 64 || publicKey.asymmetricKeyType !== 'ed25519') return false
  try {
    return cryptoVerify(null, data, publicKey, sig)
  } catch {
    return false
  }
}

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

interface CacheEntry {
  readonly kid: string
  readonly key: KeyObject
  readonly claims: Claims
}

const defaultIsReadScope = (scope: string): boolean => scope.endsWith(':read')

/**
 * Builds the {@link TokenVerifier} every service uses. Checks, in order: size cap; exactly three
 * strict base64url segments; header (`alg` exactly `EdDSA`, `typ` `JWT` if present, no `crit`,
 * `kid` required); claim shapes (caveats parsed into a null-prototype object, a `pathPrefix` that
 * is not normalised is malformed); revocation staleness for non-read scopes; revocation of `jti`,
 * or of its `prf` parent with its subtree (before any signature work); key lookup by `kid`; the Ed25519 signature (64 bytes); caveats
 * known; `exp`/`nbf` with tolerance; `iss` if pinned; `aud` contains the audience; `scope`
 * contains the required scope; the caveat hook. A token seen before is answered from a bounded
 * LRU cache: only parsing and the signature are skipped.
 *
 * @throws (from `verify`) {@link UnauthorizedError} with `details.reason` one of
 * {@link UnauthorizedReason}; {@link ForbiddenError} with `details.reason` `missing_scope` or
 * `caveat`; {@link NotReadyError} when a remote key set is unavailable, or with
 * `details.reason: 'revocation_stale'` when the revocation feed is stale and the scope is not a read.
 * @example
 * ```ts
 * const revocations = createRevocationFeed({ transport })
 * const verifier = createTokenVerifier({ keys: remoteKeySource({ transport }), revocations })
 * const claims = await verifier.verify(bearerToken(req.headers) ?? '', { audience: 'storage', scope: 'storage:write' })
 * ```
 */
export function createTokenVerifier(opts: TokenVerifierOptions): CachingTokenVerifier {
  const { keys, revocations, caveats, issuer } = opts
  const tolerance = opts.clockToleranceSec ?? 30
  const clock = opts.clock ?? systemClock
  const maxTokenBytes = opts.maxTokenBytes ?? 8192
  const known = new Set(opts.knownCaveats ?? KNOWN_CAVEATS)
  const isReadScope = opts.isReadScope ?? defaultIsReadScope
  const maxEntries = opts.cache === false ? 0 : Math.max(0, opts.cache?.maxEntries ?? 10_000)
  const cache = new Map<string, CacheEntry>()
  let hits = 0

  function checkStale(required: TokenRequirement): void {
    if (required.scope === undefined || isReadScope(required.scope)) return
    if (revocations?.isStale?.() === true) {
      throw new NotReadyError('revocation feed is stale: write and admin routes are refused until it catches up', {
        details: { reason: 'revocation_stale' },
        retryAfterMs: 1000,
      })
    }
  }

  // The token itself revoked or retired; or its parent revoked with its subtree. Passport lists
  // every descendant it minted in the feed; the parent check also holds while a child's own item
  // is still on its way, and costs one lookup only for tokens that have a parent.
  function checkRevoked(jti: string, prf: string | undefined): void {
    if (revocations === undefined) return
    if (revocations.isRevoked(jti)) throw unauthorized('revoked', 'token revoked')
    if (prf !== undefined && (revocations.revokesDescendants?.(prf) ?? revocations.isRevoked(prf))) {
      throw unauthorized('revoked', 'token minted from a revoked token', { prf })
    }
  }

  // Everything that can change between two uses of the same verified token.
  function checkUse(c: Claims, required: TokenRequirement): Claims {
    const now = clock.now() / 1000
    // The same words as `ron-node token verify` and the CLI's own check: one answer for an expired token.
    if (now > c.exp + tolerance) throw unauthorized('expired', `token expired at ${new Date(c.exp * 1000).toISOString()} (clock tolerance ${tolerance} s)`, { exp: c.exp, toleranceSec: tolerance })
    if (c.nbf !== undefined && now + tolerance < c.nbf) throw unauthorized('not_yet_valid', 'token not yet valid', { nbf: c.nbf })
    if (issuer !== undefined && c.iss !== issuer) throw unauthorized('wrong_audience', 'token from another issuer', { iss: c.iss })
    if (required.anyAudience !== true && !c.aud.includes(required.audience)) {
      throw unauthorized('wrong_audience', `token is not for ${required.audience}`, { audience: required.audience })
    }
    if (required.scope !== undefined && !c.scope.includes(required.scope)) {
      throw new ForbiddenError(`token lacks scope ${required.scope}`, { details: { reason: 'missing_scope', scope: required.scope } })
    }
    caveats?.(c, required)
    return c
  }

  async function cached(token: string, e: CacheEntry, required: TokenRequirement): Promise<Claims | undefined> {
    checkStale(required)
    try {
      checkRevoked(e.claims.jti, e.claims.prf)
    } catch (err) {
      cache.delete(token)
      throw err
    }
    const key = await keys.getKey(e.kid)
    if (key === undefined) {
      cache.delete(token)
      throw unauthorized('unknown_kid', 'token signed by an unknown key', { kid: e.kid })
    }
    if (key !== e.key && !key.equals(e.key)) {
      // The kid now names other key material: verify from scratch.
      cache.delete(token)
      return undefined
    }
    hits++
    // LRU: move to the most recent end.
    cache.delete(token)
    cache.set(token, e)
    return checkUse(e.claims, required)
  }

  function remember(token: string, e: CacheEntry): void {
    if (maxEntries === 0) return
    if (clock.now() / 1000 > e.claims.exp + tolerance) return
    if (cache.size >= maxEntries) {
      // Drop the least recently used entry (first in insertion order).
      const oldest = cache.keys().next()
      if (oldest.done !== true) cache.delete(oldest.value)
    }
    cache.set(token, e)
  }

  async function verify(token: string, required: TokenRequirement): Promise<Claims> {
    if (typeof token !== 'string' || token.length === 0) throw unauthorized('missing', 'missing token')
    if (token.length > maxTokenBytes) throw unauthorized('malformed', 'token too large', { maxTokenBytes })

    const hit = cache.get(token)
    if (hit !== undefined) {
      const c = await cached(token, hit, required)
      if (c !== undefined) return c
    }

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

    let ron: ParsedCaveats | undefined
    if (raw.ron !== undefined) {
      const r = parseCaveats(raw.ron, known)
      if ('field' in r) throw unauthorized('malformed', 'token caveats are malformed', { field: r.field })
      ron = r
    }

    checkStale(required)
    // Revocation before any signature work: cheap, and a revoked token never costs a verify.
    checkRevoked(raw.jti, raw.prf)

    const key = await keys.getKey(kid)
    if (key === undefined) throw unauthorized('unknown_kid', 'token signed by an unknown key', { kid })
    if (key.asymmetricKeyType !== 'ed25519') throw unauthorized('bad_alg', 'key is not Ed25519', { kid })

    const sig = decodeBase64url(s)
    if (sig?.length !== 64) throw unauthorized('bad_signature', 'token signature is not 64 bytes')
    const data = Buffer.from(token.slice(0, second), 'latin1')
    if (!ed25519Verify(key, data, sig)) throw unauthorized('bad_signature', 'token signature does not verify')

    const unknownCaveat = ron?.unknown[0]
    if (unknownCaveat !== undefined) throw unauthorized('unknown_caveat', `token carries an unknown caveat '${unknownCaveat}'`, { caveat: unknownCaveat })

    const aud = typeof raw.aud === 'string' ? [raw.aud] : raw.aud
    const claims: Claims = Object.freeze({
      iss: raw.iss,
      sub: raw.sub,
      aud: Object.freeze(aud) as string[],
      scope: Object.freeze(raw.scope.split(' ').filter((x) => x.length > 0)) as string[],
      iat: raw.iat,
      exp: raw.exp,
      jti: raw.jti,
      ...(raw.nbf === undefined ? {} : { nbf: raw.nbf }),
      ...(raw.prf === undefined ? {} : { prf: raw.prf }),
      ...(ron === undefined ? {} : { ron: ron.caveats }),
    })
    remember(token, { kid, key, claims })
    return checkUse(claims, required)
  }

  return {
    verify,
    get cacheSize() {
      return cache.size
    },
    get cacheHits() {
      return hits
    },
    clearCache() {
      cache.clear()
    },
    revocationsStale: () => revocations?.isStale?.() === true,
  }
}
