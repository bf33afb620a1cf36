/**
 * The admin routes (scope `index:admin`; see `admin.ts` for what they mean):
 * `POST /admin/reindex` (`Idempotency-Key` required; 202), `PUT|DELETE /admin/pins/:key` and
 * `GET /admin/pins`. The capability is checked before anything enters the `work` queue.
 *
 * @module
 */

import type { Route } from '@ron/core'
import { checkPinRoom, parseIdempotencyKey } from '../admin.js'
import { parseKey } from '../resolver.js'
import { CHANNELS, ROUTES } from '../topology.js'
import type { IndexContext } from './context.js'

/** The scope of every admin route. */
export const ADMIN_SCOPE = 'index:admin'

/** The admin routes. */
export function adminRoutes(s: IndexContext): Route[] {
  const pinned = (): void => s.metrics.pinned.set(s.cache.pins().length)
  return [
    {
      method: 'POST',
      path: '/admin/reindex',
      name: ROUTES.reindex,
      scope: ADMIN_SCOPE,
      queue: CHANNELS.work,
      handler: async (ctx) => {
        const key = parseIdempotencyKey(ctx.req.headers['idempotency-key'])
        const { reply, replayed } = await s.idempotency.run(ctx.auth?.sub ?? '', key, async () => {
          const acceptedAt = s.clock.now()
          const r = await s.reindex(ctx.signal)
          return { status: 202, json: { reindex: { key, acceptedAt, names: r.names, resigned: r.resigned } } }
        })
        s.metrics.admin.inc({ action: 'reindex', result: replayed ? 'replayed' : 'ok' })
        return replayed ? { ...reply, headers: { ...reply.headers, 'idempotent-replayed': 'true' } } : reply
      },
    },
    {
      method: 'GET',
      path: '/admin/pins',
      name: ROUTES.pins,
      scope: ADMIN_SCOPE,
      handler: () => ({ status: 200, json: { pins: s.cache.pins() } }),
    },
    {
      method: 'PUT',
      path: '/admin/pins/:key',
      name: ROUTES.pin,
      scope: ADMIN_SCOPE,
      queue: CHANNELS.work,
      handler: async (ctx) => {
        const key = parseKey(ctx.params.key ?? '').key
        const was = s.cache.pinned(key)
        if (!was) checkPinRoom(s.cache.pins().length)
        // Pinned first, so the fresh answer is kept from the moment it is cached; a key that does
        // not resolve is not pinned (the error is the answer).
        s.cache.pin(key)
        try {
          const r = await s.resolver.resolve(key, { fresh: true, signal: ctx.signal, corrId: ctx.corrId })
          s.metrics.admin.inc({ action: 'pin', result: 'ok' })
          return { status: 200, json: { key, pinned: true, source: r.source } }
        } catch (e) {
          if (!was) s.cache.unpin(key)
          throw e
        } finally {
          pinned()
        }
      },
    },
    {
      method: 'DELETE',
      path: '/admin/pins/:key',
      name: ROUTES.pin,
      scope: ADMIN_SCOPE,
      handler: (ctx) => {
        const key = parseKey(ctx.params.key ?? '').key
        const was = s.cache.unpin(key)
        pinned()
        s.metrics.admin.inc({ action: 'unpin', result: 'ok' })
        return { status: 200, json: { key, pinned: false, wasPinned: was } }
      },
    },
  ]
}
