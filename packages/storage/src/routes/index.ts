/**
 * The storage service's HTTP routes, one file per resource.
 *
 * @module
 */

import type { Reply, Route, RouteContext } from '@ron/core'
import { adminRoutes } from './admin.js'
import { withCleanup, type StorageContext } from './context.js'
import { objectRoutes } from './objects.js'
import { pinRoutes } from './pins.js'
import { repairRoutes } from './repair.js'
import { statusRoutes } from './status.js'

export type { StorageContext } from './context.js'

/** Every route of the storage service, each behind the service-wide request gate. */
export function storageRoutes(s: StorageContext): Route[] {
  return [...objectRoutes(s), ...pinRoutes(s), ...statusRoutes(s), ...repairRoutes(s), ...adminRoutes(s)].map((r) => gated(s, r))
}

/** Admits the request through `s.gate`; a streamed reply holds its admission until the body ends. */
function gated(s: StorageContext, r: Route): Route {
  const inner = (ctx: RouteContext): Promise<Reply> | Reply => r.handler(ctx)
  const endpoint = r.name ?? `${r.method} ${r.path}`
  return {
    ...r,
    async handler(ctx: RouteContext): Promise<Reply> {
      const release = s.gate.admit(endpoint)
      let reply: Reply
      try {
        reply = await inner(ctx)
      } catch (e) {
        release()
        throw e
      }
      const body = reply.body
      if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) {
        release()
        return reply
      }
      return { ...reply, body: withCleanup(body, () => Promise.resolve(release())).body }
    },
  }
}
