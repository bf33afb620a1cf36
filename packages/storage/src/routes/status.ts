/**
 * `GET /o/:addr/status`: size, local chunk health (a full scrub), pin, placement, where replicas
 * are, and the object's repair state.
 *
 * @module
 */

import { NotFoundError, parseAddress } from '@ron/core'
import type { Address, Reply, Route, RouteContext } from '@ron/core'
import type { StorageContext } from './context.js'

async function headPeer(s: StorageContext, peer: string, address: Address, signal: AbortSignal): Promise<boolean | null> {
  if (s.transport === undefined) return null
  const headers: Record<string, string> = {}
  if (s.o.peerToken !== undefined) headers.authorization = `Bearer ${s.o.peerToken}`
  try {
    const res = await s.transport.request(peer, { method: 'HEAD', path: `/o/${address}`, headers, signal, timeoutMs: s.o.repair.probeTimeoutMs })
    await res.dump()
    return res.status === 200 ? true : res.status === 404 ? false : null
  } catch {
    return null
  }
}

async function status(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const address = parseAddress(ctx.params.addr ?? '')
  const v = await s.store.verify(address, ctx.signal)
  const present = v.reason !== 'missing'
  const pinned = s.pins.has(address)
  const repair = s.repair.get(address) ?? null
  if (!present && !pinned && repair === null) throw new NotFoundError('no such object', { details: { address } })
  if (!v.ok && present && !s.repair.suspects().includes(address)) s.repair.markSuspect(address, s.clock.now())
  const ranking = s.placement(address)
  const placement = ranking.slice(0, s.o.rf)
  const peers = ranking.filter((n) => n !== s.o.nodeId)
  const replicas = await Promise.all(
    peers.map(async (node) => ({ node, present: await headPeer(s, node, address, ctx.signal) })),
  )
  replicas.unshift({ node: s.o.nodeId, present: present && v.ok })
  return {
    status: 200,
    json: {
      address,
      size: v.size,
      pinned,
      local: { present, ok: v.ok, badChunks: v.badChunks, ...(v.reason === undefined ? {} : { reason: v.reason }) },
      placement,
      replicas,
      repair: s.repair.get(address) ?? null,
    },
  }
}

/** The status route (public when reads are). */
export function statusRoutes(s: StorageContext): Route[] {
  const read = s.o.publicReads ? {} : { scope: 'storage:read' }
  return [{ method: 'GET', path: '/o/:addr/status', name: 'GET /o/:addr/status', ...read, handler: (ctx) => status(s, ctx) }]
}
