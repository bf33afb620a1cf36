/**
 * `POST /o/:addr/pin` and `DELETE /o/:addr/pin` (scope `storage:write`: pinning only ever keeps
 * data, and an unpinned object can still only be deleted with `storage:admin`).
 *
 * @module
 */

import { NotFoundError, parseAddress } from '@ron/core'
import type { Reply, Route, RouteContext } from '@ron/core'
import type { StorageContext } from './context.js'

async function pin(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const address = parseAddress(ctx.params.addr ?? '')
  // Same serial section as DELETE: the pin lands strictly before (the delete then refuses) or
  // after (the object is gone and the pin answers 404).
  const added = await s.guard.exclusive(address, async () => {
    if ((await s.store.stat(address)) === undefined) throw new NotFoundError('no such object', { details: { address } })
    return s.pins.add(address)
  })
  if (added) s.events.publish({ type: 'object:pinned', address })
  return { status: 200, json: { address, pinned: true } }
}

async function unpin(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const address = parseAddress(ctx.params.addr ?? '')
  const removed = await s.guard.exclusive(address, () => s.pins.remove(address))
  if (removed) s.events.publish({ type: 'object:unpinned', address })
  return { status: 200, json: { address, pinned: false } }
}

/** The pin routes. */
export function pinRoutes(s: StorageContext): Route[] {
  return [
    { method: 'POST', path: '/o/:addr/pin', name: 'POST /o/:addr/pin', scope: 'storage:write', handler: (ctx) => pin(s, ctx) },
    { method: 'DELETE', path: '/o/:addr/pin', name: 'DELETE /o/:addr/pin', scope: 'storage:write', handler: (ctx) => unpin(s, ctx) },
  ]
}
