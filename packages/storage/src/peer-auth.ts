/**
 * The cluster trust model (README "Trust between nodes"):
 * - outgoing: every call to a peer (replica write, repair push/pull, probe) carries a short-lived
 *   token from the node's token provider (`tokens` option: `sub: node:<id>`, `aud` = the peer's
 *   service id, scope `storage:replicate` only); announcements carry one for `index:announce`;
 * - incoming: replica writes (`PUT /replica`) accept a token with scope `storage:replicate` signed
 *   by this service's own issuer keys or by one of the configured peers' issuer keys
 *   (`peerKeys`). A peer's key is accepted for that scope ONLY: the same key signing a
 *   `storage:write` or `storage:admin` token gets 401 on every other route, because those routes
 *   use the host's verifier, which does not know peer keys.
 *
 * @module
 */

import { UnauthorizedError, bearerToken, checkCaveats, createTokenVerifier, isRonError } from '@ron/core'
import type { Claims, Clock, KeySource, RonRequest, TokenVerifier } from '@ron/core'
import type { OutgoingTokens } from './config.js'

/** The scope of replica traffic between storage nodes. */
export const REPLICATE_SCOPE = 'storage:replicate'

/** Returns the bearer token for one outgoing call, or undefined (no token provider configured). */
export type TokenFor = (signal: AbortSignal) => Promise<string | undefined>

/** A token getter for `aud`/`scope` from the configured provider. */
export function tokenFor(tokens: OutgoingTokens | undefined, aud: string, scope: string): TokenFor {
  if (tokens === undefined) return () => Promise.resolve(undefined)
  return async (signal) => tokens.token({ aud, scope: [scope] }, signal)
}

/** `{ authorization: 'Bearer …' }` when `token` yields one, else `{}`. */
export async function bearerHeaders(token: TokenFor, signal: AbortSignal): Promise<Record<string, string>> {
  const t = await token(signal)
  return t === undefined ? {} : { authorization: `Bearer ${t}` }
}

/** One {@link KeySource} over several: the first that knows the `kid` answers. */
function anyKeySource(sources: KeySource[]): KeySource {
  return {
    async getKey(kid, signal) {
      for (const s of sources) {
        try {
          const k = await s.getKey(kid, signal)
          if (k !== undefined) return k
        } catch {
          // One unreachable peer key set must not hide the others.
        }
      }
      return undefined
    },
  }
}

/**
 * The check of reads when reads are not public: a `storage:read` token of this service's
 * issuer, or a peer's replica token (repair fetches and probes read too).
 */
export function readAuthorizer(own: (req: RonRequest, scope: string) => Promise<Claims>, replica: (req: RonRequest) => Promise<Claims>): (req: RonRequest) => Promise<Claims> {
  return async (req) => {
    try {
      return await own(req, 'storage:read')
    } catch (e) {
      const maybePeer = isRonError(e, 'Forbidden') || (isRonError(e, 'Unauthorized') && e.details.reason === 'unknown_kid')
      if (!maybePeer) throw e
      try {
        return await replica(req)
      } catch {
        throw e
      }
    }
  }
}

/**
 * Builds the check of replica traffic: the peers' issuer keys first (scope `storage:replicate`
 * only), then the service's own verifier with the same scope.
 */
export function replicaAuthorizer(opts: {
  serviceId: string
  peerKeys: Record<string, KeySource>
  clock: Clock
  /** The host's check (own issuer), used when no peer key knows the token's `kid`. */
  own(req: RonRequest, scope: string): Promise<Claims>
}): (req: RonRequest) => Promise<Claims> {
  const sources = Object.values(opts.peerKeys)
  const peers: TokenVerifier | undefined = sources.length === 0 ? undefined : createTokenVerifier({ keys: anyKeySource(sources), clock: opts.clock })
  return async (req) => {
    const token = bearerToken(req.headers)
    if (token === undefined) throw new UnauthorizedError('missing bearer token', { details: { reason: 'missing' } })
    if (peers !== undefined) {
      try {
        const claims = await peers.verify(token, { audience: opts.serviceId, scope: REPLICATE_SCOPE })
        const q = req.url.indexOf('?')
        checkCaveats(claims, { method: req.method, path: q === -1 ? req.url : req.url.slice(0, q) })
        return claims
      } catch (e) {
        // Not a peer's key: maybe this node's own issuer signed it.
        if (!(isRonError(e, 'Unauthorized') && e.details.reason === 'unknown_kid')) throw e
      }
    }
    return opts.own(req, REPLICATE_SCOPE)
  }
}
