/**
 * `GET /resolve/:key` and `GET /providers/:address` (public reads): cache hits on the fast path,
 * the rest through the `work` queue.
 *
 * @module
 */

import { MalformedError, parseAddress } from '@ron/core'
import type { Route } from '@ron/core'
import { PEER_HEADER } from '../peer-client.js'
import type { Resolution } from '../answer.js'
import type { ResolveOptions } from '../resolver.js'
import { ROUTES } from '../topology.js'
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

/**
 * Resolves through the fast path first: a cache hit (or a negative-cache hit) is answered in the
 * request's own context; everything that may touch the store or the peers runs on the resolver
 * pool through the `work` queue (full → 429 Busy).
 */
function resolveVia(s: IndexContext, key: string, o: ResolveOptions & { signal: AbortSignal }): Promise<Resolution> {
  const hit = s.resolver.fromCache(key, o)
  if (hit !== undefined) return Promise.resolve(hit)
  return s.work((signal) => s.resolver.resolve(key, { ...o, signal }), o.signal)
}

/** The read routes. */
export function resolveRoutes(s: IndexContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/resolve/:key',
      name: ROUTES.resolve,
      handler: async (ctx) => {
        const r = await resolveVia(s, ctx.params.key ?? '', {
          fresh: flag(ctx.query.get('fresh')),
          peer: ctx.req.headers[PEER_HEADER] === '1',
          signal: ctx.signal,
          startedAt: s.clock.now(),
        })
        return { status: 200, headers: { 'cache-control': `max-age=${r.ttlSec}` }, json: r }
      },
    },
    {
      method: 'GET',
      path: '/providers/:address',
      name: ROUTES.providers,
      handler: async (ctx) => {
        const startedAt = s.clock.now()
        const address = parseAddress(ctx.params.address ?? '', 'address')
        const limit = parseLimit(ctx.query.get('limit'))
        const r = await resolveVia(s, address, { fresh: flag(ctx.query.get('fresh')), signal: ctx.signal, startedAt })
        return { status: 200, json: { address, providers: r.providers.slice(0, limit), source: r.source } }
      },
    },
  ]
}
