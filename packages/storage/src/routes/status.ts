/**
 * `GET /o/:addr/status`: size, local health, pin, placement and the object's repair state.
 *
 * The default answer is cheap and safe to expose publicly: it opens the object (a stat and a
 * decode of its chunk table, no data read) and reports the last known repair state; it probes no
 * peer. `?scrub=1` asks for the expensive answer: a full scrub of the local copy (every chunk read
 * and verified) and a `HEAD` to every peer (in parallel, each bounded by `repair.probeTimeoutMs`).
 * It needs a token with `storage:admin`, also when reads are public. The route takes a reader
 * slot of the `work` queue either way, so a flood of status calls is refused with 429 like reads are.
 *
 * @module
 */

import { ForbiddenError, NotFoundError, isRonError, parseAddress } from '@ron/core'
import type { Address, Reply, Route, RouteContext } from '@ron/core'
import type { StorageContext } from './context.js'
import { bearerHeaders } from '../peer-auth.js'

/** The scope `?scrub=1` needs. */
export const SCRUB_SCOPE = 'storage:admin'

/** Local health in a status answer. */
interface LocalHealth {
  present: boolean
  ok: boolean
  badChunks: number[]
  /** True when every chunk was read and verified (`?scrub=1`). */
  scrubbed: boolean
  reason?: string
}

async function headPeer(s: StorageContext, peer: string, address: Address, signal: AbortSignal): Promise<boolean | null> {
  try {
    const headers = await bearerHeaders(s.peerToken, signal)
    const res = await s.transport.request(peer, { method: 'HEAD', path: `/o/${address}`, headers, signal, timeoutMs: s.o.repair.probeTimeoutMs })
    await res.dump().catch(() => undefined)
    // 422: the peer's copy fails verification, so it holds no good copy.
    return res.status === 200 ? true : res.status === 404 || res.status === 422 ? false : null
  } catch {
    return null
  }
}

function wantsScrub(ctx: RouteContext): boolean {
  const v = ctx.query.get('scrub')
  return v !== null && v !== '0' && v !== 'false'
}

/**
 * Checks that the caller may scrub: the route's own claims when it is scoped (reads not public),
 * else the bearer token, checked by the host exactly as for a scoped route.
 */
async function requireScrubScope(s: StorageContext, ctx: RouteContext): Promise<void> {
  if (ctx.auth === undefined) {
    await s.authenticate(ctx.req, SCRUB_SCOPE)
    return
  }
  if (!ctx.auth.scope.includes(SCRUB_SCOPE)) {
    throw new ForbiddenError(`?scrub=1 needs scope ${SCRUB_SCOPE}`, { details: { reason: 'missing_scope', scope: SCRUB_SCOPE } })
  }
}

/** Cheap local health: open (stat + chunk table decode) and the suspect mark; no data is read. */
async function quickLocal(s: StorageContext, address: Address): Promise<{ size: number; local: LocalHealth }> {
  try {
    const reader = await s.store.open(address)
    if (reader === undefined) return { size: 0, local: { present: false, ok: false, badChunks: [], scrubbed: false, reason: 'missing' } }
    const size = reader.size
    await reader.close()
    // A read that failed verification marked it: known bad until a scrub or repair says otherwise.
    if (s.repair.isSuspect(address)) return { size, local: { present: true, ok: false, badChunks: [], scrubbed: false, reason: 'suspect' } }
    return { size, local: { present: true, ok: true, badChunks: [], scrubbed: false } }
  } catch (e) {
    if (!isRonError(e, 'IntegrityFailed')) throw e
    const reason = typeof e.details?.reason === 'string' ? e.details.reason : 'table_corrupt'
    const size = (await s.store.stat(address))?.size ?? 0
    return { size, local: { present: true, ok: false, badChunks: [], scrubbed: false, reason } }
  }
}

async function fullLocal(s: StorageContext, address: Address, signal: AbortSignal): Promise<{ size: number; local: LocalHealth }> {
  const v = await s.store.verify(address, signal)
  const present = v.reason !== 'missing'
  return { size: v.size, local: { present, ok: v.ok, badChunks: v.badChunks, scrubbed: true, ...(v.reason === undefined ? {} : { reason: v.reason }) } }
}

async function status(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const address = parseAddress(ctx.params.addr ?? '')
  const scrub = wantsScrub(ctx)
  if (scrub) await requireScrubScope(s, ctx)
  else if (!s.o.publicReads) await s.authorizeRead(ctx.req)
  const release = await s.work.acquire('read', '', 'GET /o/:addr/status', s.signalFor(ctx))
  try {
    return await statusOf(s, ctx, address, scrub)
  } finally {
    release()
  }
}

async function statusOf(s: StorageContext, ctx: RouteContext, address: Address, scrub: boolean): Promise<Reply> {
  const { size, local } = scrub ? await fullLocal(s, address, ctx.signal) : await quickLocal(s, address)
  const pinned = s.pins.has(address)
  if (!local.present && !pinned && s.repair.get(address) === undefined) throw new NotFoundError('no such object', { details: { address } })
  if (!local.ok && local.present && !s.repair.isSuspect(address)) {
    s.repair.markSuspect(address, s.clock.now())
    s.kick()
  }
  const ranking = s.placement(address)
  const placement = ranking.slice(0, s.o.rf)
  const replicas: { node: string; present: boolean | null }[] = [{ node: s.o.placementName, present: local.present && local.ok }]
  if (scrub) {
    const peers = ranking.filter((n) => n !== s.o.placementName)
    replicas.push(...(await Promise.all(peers.map(async (node) => ({ node, present: await headPeer(s, node, address, ctx.signal) })))))
  }
  return {
    status: 200,
    json: { address, size, pinned, local, placement, replicas, repair: s.repair.get(address) ?? null },
  }
}

/**
 * The status route: public when reads are (the cheap answer), through the `work` queue.
 * `?scrub=1` additionally needs `storage:admin`; on a public route the token is checked by the
 * host (without auth configured, scrub requests are refused with 401 `no_verifier`).
 */
export function statusRoutes(s: StorageContext): Route[] {
  // Checked by the handler: public or storage:read (or a peer's replica token); ?scrub=1 needs storage:admin.
  return [
    { method: 'GET', path: '/o/:addr/status', name: 'GET /o/:addr/status', handler: (ctx) => status(s, ctx) },
  ]
}
