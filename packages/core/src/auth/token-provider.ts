/**
 * Service identity (SPEC.md section 5): short-lived service-to-service tokens. A
 * {@link TokenMinter} makes tokens (from the node's own issuer key with {@link localMinter}, or
 * from a remote passport); {@link createTokenProvider} caches one per audience and scope set and
 * renews it at two thirds of its life. {@link signClientAssertion} makes the one-minute
 * `private_key_jwt`-style assertion a node presents to another node's passport.
 *
 * @module
 */

import { sign } from 'node:crypto'
import { abortReason, systemClock, type Clock } from '../clock.js'
import { ClosedError, MalformedError, RonUsageError } from '../errors.js'
import { raceAbort } from '../concurrency/abort.js'
import { decodeBase64url, encodeBase64url } from './base64url.js'
import type { IssuerKey } from './issuer-key.js'
import { newTokenId, signToken } from './sign.js'

/** What a {@link TokenMinter} is asked for. */
export interface MintRequest {
  /** The service the token is for (its `aud`). */
  aud: string
  /** Exactly the scopes the call needs. */
  scope: string[]
  /** Requested lifetime in seconds. */
  ttlSec: number
}

/** Makes tokens: the node's own issuer ({@link localMinter}) or a remote passport. */
export interface TokenMinter {
  /**
   * Mints a compact JWS for `req`.
   * @throws {@link CanceledError} (or the signal's reason) when `signal` aborts.
   */
  mint(req: MintRequest, signal?: AbortSignal): Promise<string>
}

/** Options of {@link localMinter}. */
export interface LocalMinterOptions {
  /** `iss` of minted tokens (e.g. `'passport'` or the node's issuer name). */
  iss: string
  /** `sub` of minted tokens: `node:<id>` for service identity. */
  sub: string
  /** Source of `iat`. @default systemClock */
  clock?: Clock
}

/**
 * A minter that signs with a local issuer key (a node's own issuer, before or without passport).
 *
 * @example
 * ```ts
 * const minter = localMinter(issuerKey, { iss: 'passport', sub: `node:${nodeId}` })
 * const provider = createTokenProvider({ minter })
 * const token = await provider.token({ aud: 'index', scope: ['index:announce'] })
 * ```
 */
export function localMinter(issuerKey: IssuerKey, options: LocalMinterOptions): TokenMinter {
  const clock = options.clock ?? systemClock
  return {
    mint(req, signal) {
      if (signal?.aborted) return Promise.reject(abortReason(signal))
      try {
        return Promise.resolve(signToken(issuerKey, { iss: options.iss, sub: options.sub, aud: [req.aud], scope: req.scope, ttlSec: req.ttlSec }, { clock }))
      } catch (e) {
        return Promise.reject(e instanceof Error ? e : new Error(String(e)))
      }
    },
  }
}

/** Options of {@link createTokenProvider}. */
export interface TokenProviderOptions {
  /** Where tokens come from. */
  minter: TokenMinter
  /** Lifetime asked of the minter, in seconds. @default 600 (SPEC.md section 5: 10 minutes) */
  ttlSec?: number
  /** Time source for renewal. @default systemClock */
  clock?: Clock
}

/** A cache of short-lived tokens, one per audience and scope set. */
export interface TokenProvider {
  /**
   * A token for `aud` carrying exactly `scope`. Served from the cache until two thirds of its life
   * have passed, then renewed (concurrent callers share one mint). If renewal fails while the
   * cached token is still valid, the cached token is returned.
   * @throws whatever the minter throws when there is no valid cached token
   * @throws {@link ClosedError} after `close()`
   */
  token(req: { aud: string; scope: readonly string[] }, signal?: AbortSignal): Promise<string>
  /** Drops every cached token; later `token()` calls reject with {@link ClosedError}. Idempotent. */
  close(): void
  [Symbol.asyncDispose](): Promise<void>
}

interface Entry {
  token: string | undefined
  renewAt: number
  expiresAt: number
  pending: Promise<string> | undefined
}

/** Renewal margin before `exp` below which a cached token is no longer handed out, in ms. */
const EXPIRY_MARGIN_MS = 5000

/** The `exp` claim of a compact JWS in ms, when readable. */
function expiryOf(token: string): number | undefined {
  const payload = token.split('.')[1]
  if (payload === undefined) return undefined
  const raw = decodeBase64url(payload)
  if (raw === undefined) return undefined
  try {
    const exp = (JSON.parse(raw.toString('utf8')) as { exp?: unknown }).exp
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined
  } catch {
    return undefined
  }
}

/**
 * Creates a token provider over `minter`.
 *
 * @example
 * ```ts
 * const provider = createTokenProvider({ minter: localMinter(key, { iss: 'passport', sub: 'node:n1' }) })
 * const client = createIndexClient(transport, { token: () => provider.token({ aud: 'index', scope: ['index:announce'] }) })
 * ```
 */
export function createTokenProvider(options: TokenProviderOptions): TokenProvider {
  const clock = options.clock ?? systemClock
  const ttlSec = options.ttlSec ?? 600
  if (!Number.isInteger(ttlSec) || ttlSec <= 0) {
    throw new RonUsageError('RON_INVALID_OPTION', `createTokenProvider: ttlSec must be a positive integer, got ${String(ttlSec)}`)
  }
  const cache = new Map<string, Entry>()
  const closer = new AbortController()
  let closed = false

  function renew(key: string, e: Entry, req: { aud: string; scope: readonly string[] }): Promise<string> {
    const startedAt = clock.now()
    const p = options.minter.mint({ aud: req.aud, scope: [...req.scope], ttlSec }, closer.signal).then(
      (token) => {
        const expiresAt = expiryOf(token) ?? startedAt + ttlSec * 1000
        e.token = token
        e.expiresAt = expiresAt
        e.renewAt = startedAt + ((expiresAt - startedAt) * 2) / 3
        return token
      },
    )
    e.pending = p
    // The entry forgets the mint once it settles, whatever the outcome.
    p.then(
      () => {
        if (e.pending === p) e.pending = undefined
      },
      () => {
        if (e.pending === p) e.pending = undefined
      },
    )
    cache.set(key, e)
    return p
  }

  async function token(req: { aud: string; scope: readonly string[] }, signal?: AbortSignal): Promise<string> {
    if (closed) throw new ClosedError('token provider is closed')
    if (signal?.aborted) throw abortReason(signal)
    const key = `${req.aud}\u0000${[...req.scope].sort().join(' ')}`
    const e = cache.get(key) ?? { token: undefined, renewAt: 0, expiresAt: 0, pending: undefined }
    const now = clock.now()
    if (e.token !== undefined && now < e.renewAt) return e.token
    const minting = e.pending ?? renew(key, e, req)
    const stillValid = e.token !== undefined && now < e.expiresAt - EXPIRY_MARGIN_MS ? e.token : undefined
    try {
      return await raceAbort(minting, signal)
    } catch (err) {
      if (stillValid !== undefined && !signal?.aborted && !closed) return stillValid
      throw err
    }
  }

  function close(): void {
    if (closed) return
    closed = true
    cache.clear()
    closer.abort(new ClosedError('token provider is closed'))
  }

  return {
    token,
    close,
    [Symbol.asyncDispose]: () => {
      close()
      return Promise.resolve()
    },
  }
}


/** Options of {@link signClientAssertion}. */
export interface ClientAssertionOptions {
  /** The node's id; the assertion's `iss` and `sub` are `node:<nodeId>`. */
  nodeId: string
  /** Who the assertion is for (the passport that will accept it). */
  audience: string
  /** Source of `iat`. @default systemClock */
  clock?: Clock
}

/** Lifetime of a client assertion, in seconds. */
const ASSERTION_TTL_SEC = 60

/**
 * Signs a one-minute client assertion with a node key (as OAuth's `private_key_jwt`, RFC 7523):
 * header `{alg:'EdDSA', typ:'JWT', kid}`, claims `iss` = `sub` = `node:<nodeId>`, `aud`, `iat`,
 * `exp` = `iat + 60`, a random `jti`. A passport that has the node key enrolled trades it for a
 * capability token.
 *
 * @throws {@link MalformedError} when `nodeId` or `audience` is empty.
 * @example
 * ```ts
 * const assertion = signClientAssertion(nodeKey, { nodeId: 'n1', audience: 'passport' })
 * ```
 */
export function signClientAssertion(nodeKey: IssuerKey, options: ClientAssertionOptions): string {
  if (options.nodeId === '') throw new MalformedError('nodeId must not be empty', { details: { field: 'nodeId' } })
  if (options.audience === '') throw new MalformedError('audience must not be empty', { details: { field: 'audience' } })
  const iat = Math.floor((options.clock ?? systemClock).now() / 1000)
  const sub = `node:${options.nodeId}`
  const header = encodeBase64url(JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid: nodeKey.kid }))
  const body = encodeBase64url(
    JSON.stringify({ iss: sub, sub, aud: options.audience, iat, exp: iat + ASSERTION_TTL_SEC, jti: newTokenId() }),
  )
  const input = `${header}.${body}`
  return `${input}.${sign(null, Buffer.from(input, 'ascii'), nodeKey.privateKey).toString('base64url')}`
}

/**
 * A bearer token as a client option: a fixed string, or a function called before each request
 * (e.g. `() => provider.token({ aud, scope })`).
 */
export type TokenSource = string | (() => string | Promise<string>)

/**
 * The token a {@link TokenSource} gives now; `undefined` when there is no source.
 * @example
 * ```ts
 * const token = await resolveToken(options.token)
 * if (token !== undefined) headers.authorization = `Bearer ${token}`
 * ```
 */
export function resolveToken(src: TokenSource | undefined): Promise<string | undefined> {
  if (src === undefined || typeof src === 'string') return Promise.resolve(src)
  try {
    return Promise.resolve(src())
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)))
  }
}
