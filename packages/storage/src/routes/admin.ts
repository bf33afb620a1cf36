/**
 * `GET /o?cursor=&limit=` (scope `storage:admin`): the objects and pins of this node, in address
 * order, a page at a time; and `GET /status`: this node's identity, membership and usage.
 *
 * @module
 */

import { MalformedError, parseAddress } from '@ron/core'
import type { Address, Reply, Route, RouteContext } from '@ron/core'
import type { StorageContext } from './context.js'

/** Largest page of `GET /o`. */
export const MAX_LIST_LIMIT = 1000
const DEFAULT_LIST_LIMIT = 100

/** One entry of `GET /o`. */
interface ListedObject {
  address: Address
  /** Size of the local copy; `null` when only a pin names it (the copy is missing). */
  size: number | null
  pinned: boolean
}

function listLimit(ctx: RouteContext): number {
  const raw = ctx.query.get('limit')
  if (raw === null) return DEFAULT_LIST_LIMIT
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_LIMIT) {
    throw new MalformedError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`, { details: { field: 'limit' } })
  }
  return n
}

/** Keeps the `limit` smallest addresses above `after`, sorted (bounded memory: limit + 1). */
function smallest(addresses: Iterable<Address>, after: string, limit: number, into: Address[]): void {
  for (const a of addresses) {
    if (a <= after || into.includes(a)) continue
    if (into.length === limit && a >= into[limit - 1]!) continue
    let i = into.length
    while (i > 0 && into[i - 1]! > a) i--
    into.splice(i, 0, a)
    if (into.length > limit) into.pop()
  }
}

async function list(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const limit = listLimit(ctx)
  const cursorRaw = ctx.query.get('cursor')
  const cursor = cursorRaw === null || cursorRaw === '' ? '' : parseAddress(cursorRaw)
  const release = await s.work.acquire('read', '', 'GET /o', s.signalFor(ctx))
  try {
    const page: Address[] = []
    const batch: Address[] = []
    for await (const a of s.store.list(ctx.signal)) {
      batch.push(a)
      if (batch.length >= 1024) smallest(batch.splice(0), cursor, limit + 1, page)
    }
    smallest(batch, cursor, limit + 1, page)
    smallest(s.pins.list(), cursor, limit + 1, page)
    const more = page.length > limit
    const items: ListedObject[] = []
    for (const address of page.slice(0, limit)) {
      const st = await s.store.stat(address)
      items.push({ address, size: st?.size ?? null, pinned: s.pins.has(address) })
    }
    return { status: 200, json: { objects: items, cursor: more ? items[items.length - 1]!.address : null } }
  } finally {
    release()
  }
}

function status(s: StorageContext): Reply {
  const o = s.o
  return {
    status: 200,
    json: { service: o.id, node: o.nodeId, endpoint: o.advertise, peers: o.peers, rf: o.rf, writeQuorum: o.writeQuorum, usage: s.usage() },
  }
}

/** The admin listing and the status route. */
export function adminRoutes(s: StorageContext): Route[] {
  return [
    { method: 'GET', path: '/o', name: 'GET /o', scope: 'storage:admin', handler: (ctx) => list(s, ctx) },
    { method: 'GET', path: '/status', name: 'GET /status', handler: () => status(s) },
  ]
}
