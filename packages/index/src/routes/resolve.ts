/**
 * `GET /resolve/:key` and `GET /providers/:address` (public reads): cache hits on the fast path,
 * the rest through the `work` queue.
 *
 * @module
 */

import { MalformedError, parseAddress } from '@ron/core'
import type { Route, RouteContext } from '@ron/core'
import { PEER_HEADER } from '../peer-client.js'
import type { Resolution } from '../answer.js'
import { parseKey, type ResolveOptions } from '../resolver.js'
import { PATHS, ROUTES } from '../topology.js'
import type { IndexContext } from './context.js'

/** Default `limit` of `GET /providers/:address`. */
export const DEFAULT_PROVIDER_LIMIT = 5
/** Largest `limit` of `GET /providers/:address`. */
export const MAX_PROVIDER_LIMIT = 32

/** Parses `?limit=` (1..32, default 5). @throws {@link MalformedError} naming `limit`. */
export function parseLimit(raw: string | null): number {
  if (raw === null) return DEFAULT_PROVIDER_LIMIT
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : NaN
  if (!Number.isInteger(n) || n < 1 || n > MAX_PROVIDER_LIMIT) {
    throw new MalformedError(`limit must be an integer from 1 to ${MAX_PROVIDER_LIMIT}`, { details: { field: 'limit', value: raw.slice(0, 16) } })
  }
  return n
}

function flag(v: string | null): boolean {
  return v !== null && v !== '0' && v !== 'false'
}

/** `?fresh` of a request, without parsing a query string that is not there (the hot path). */
function fresh(ctx: RouteContext): boolean {
  return ctx.req.url.includes('?') && flag(ctx.query.get('fresh'))
}

/**
 * Resolves on the resolver pool through the `work` queue (full → 429 Busy): what may touch the
 * store or the peers. Cache hits never get here (see the routes).
 */
function resolveQueued(s: IndexContext, key: string, ctx: RouteContext, o: ResolveOptions): Promise<Resolution> {
  // The peers asked carry the request's correlation id (SPEC §4), so one lookup reads as one story.
  return s.work((signal) => s.resolver.resolve(key, { ...o, signal, corrId: ctx.corrId }), ctx.signal)
}

/** The read routes. */
export function resolveRoutes(s: IndexContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/resolve/:key',
      name: ROUTES.resolve,
      readinessPath: PATHS.resolve,
      // Synchronous on a cache hit: the host answers it within node's request event, with the
      // reply text kept with the cache entry; no request signal, no promise, no serialisation.
      handler: (ctx) => {
        const startedAt = s.clock.now()
        const key = ctx.params.key ?? ''
        const peer = ctx.req.headers[PEER_HEADER] === '1'
        const isFresh = fresh(ctx)
        // A bad key or a negative-cache hit throws here, before the queue (the host answers it).
        if (isFresh) parseKey(key)
        else {
          const hit = s.resolver.cachedReply(key, peer, startedAt)
          if (hit !== undefined) return hit
        }
        return resolveQueued(s, key, ctx, { fresh: isFresh, peer, startedAt }).then((r) => ({
          status: 200,
          headers: { 'cache-control': `max-age=${r.ttlSec}` },
          json: r,
        }))
      },
    },
    {
      method: 'GET',
      path: '/providers/:address',
      name: ROUTES.providers,
      readinessPath: PATHS.resolve,
      handler: async (ctx) => {
        const startedAt = s.clock.now()
        const address = parseAddress(ctx.params.address ?? '', 'address')
        const limit = parseLimit(ctx.query.get('limit'))
        const isFresh = fresh(ctx)
        const r = (isFresh ? undefined : s.resolver.fromCache(address, { startedAt })) ?? (await resolveQueued(s, address, ctx, { fresh: isFresh, startedAt }))
        return { status: 200, json: { address, providers: r.providers.slice(0, limit), source: r.source } }
      },
    },
  ]
}
