/**
 * The C2SP tlog-tiles read API under `/registry/`: `checkpoint` (the latest signed checkpoint
 * with the witness cosignatures collected for it), `tile/<L>/<N>[.p/<W>]` (Merkle tree hashes)
 * and `tile/entries/<N>[.p/<W>]` (entry bundles of the exact leaf bytes). Full tiles and bundles
 * never change (`immutable`); partial ones are cached briefly. Hash tiles are kept when retention
 * prunes entries, so proofs of pruned entries keep verifying; a bundle with a pruned entry is
 * `410 Gone`.
 *
 * @module
 */

import { GoneError, NotFoundError, NotImplementedError } from '@ron/core'
import type { Reply, Route, RouteContext } from '@ron/core'
import type { RegistryLog } from '../log.js'
import { ReplyCache } from './reply-cache.js'
import { MAX_BUNDLE_LEAF, TILE_HEIGHT, TILE_WIDTH, encodeBundle, parseTilePath, type TileCoord } from '../tiles.js'
import type { RouteDeps } from './context.js'

const IMMUTABLE = 'public, max-age=31536000, immutable'
/** Partial tiles are immutable too, but a log may drop them once the full tile exists (C2SP). */
const PARTIAL = 'public, max-age=60'
const OCTETS = 'application/octet-stream'
/** Path elements after `tile/`: the level, up to 5 index elements (2^53 / 256 < 10^15) and `.p/<W>`. */
const PARAMS = ['a', 'b', 'c', 'd', 'e', 'f', 'g'] as const

/** A full tile's headers: one frozen object for all of them. */
const FULL_HEADERS = Object.freeze({ 'content-type': OCTETS, 'cache-control': IMMUTABLE })

/**
 * A tile's reply. A full one is frozen (with its headers): it is cached and handed out again and
 * again, and core's node writer works out a frozen reply's header list once, finding it again by
 * identity.
 */
function octets(body: Buffer, full: boolean): Reply {
  if (full) return Object.freeze({ status: 200, headers: FULL_HEADERS, body })
  return { status: 200, headers: { 'content-type': OCTETS, 'cache-control': PARTIAL }, body }
}

/** A cached full tile: its reply, and for an entry bundle its first entry (hash tiles: 0). */
interface Cached {
  readonly reply: Reply
  readonly first: number
}

/** The hash tile `t`, or `undefined` when the tree does not have it yet. */
function hashTile(log: RegistryLog, t: TileCoord & { level: number }): Buffer | undefined {
  return log.tree.subtreeHashes(TILE_HEIGHT * t.level, t.index * TILE_WIDTH, t.width)
}

/** The entry bundle `t` (its leaves read from the log). @throws GoneError when an entry of it was pruned */
async function bundle(log: RegistryLog, t: TileCoord): Promise<Buffer | undefined> {
  const first = t.index * TILE_WIDTH + 1
  const last = first + t.width - 1
  if (last > log.tree.size) return undefined
  const leaves: Uint8Array[] = []
  for (let v = first; v <= last; v++) {
    const r = await log.leaf(v)
    if (r === undefined) return undefined
    if ('pruned' in r) {
      const cp = r.checkpoint
      throw new GoneError(`entry bundle ${t.index} holds entries pruned by retention (the oldest held is ${log.oldest()})`, {
        details: { minIndex: log.oldest() - 1, oldest: log.oldest(), checkpoint: cp === undefined ? null : { treeSize: cp.treeSize, root: cp.root, createdAt: cp.createdAt } },
      })
    }
    // Only a log created before entry bundles existed can hold a leaf too large for one.
    if (r.bytes.length > MAX_BUNDLE_LEAF) {
      throw new NotImplementedError(`entry ${v} (${r.bytes.length} bytes) is larger than an entry bundle can carry; read it at /registry/${v}/leaf`, {
        details: { version: v, bytes: r.bytes.length, limit: MAX_BUNDLE_LEAF },
      })
    }
    leaves.push(r.bytes)
  }
  return encodeBundle(leaves)
}

/** The tiles routes (and `checkpoint`). */
export function tileRoutes(d: RouteDeps): Route[] {
  const { log } = d
  // Keyed by the canonical request path (`/registry/tile/0/000`), so a request for it finds its
  // tile by its URL alone, before the path is parsed.
  const cache = new ReplyCache<Cached>(32 * 1024 * 1024)
  const notFound = (t: TileCoord): NotFoundError =>
    new NotFoundError(`no such tile in a tree of size ${log.tree.size}`, { details: { level: t.level, index: t.index, width: t.width, treeSize: log.tree.size } })
  /** `hit`'s reply, unless it is a bundle reaching below the oldest held entry (pruned, even when a copy is cached). */
  const fresh = (hit: Cached | undefined): Reply | undefined => (hit !== undefined && (hit.first === 0 || hit.first >= log.oldest()) ? hit.reply : undefined)
  const handler = (ctx: RouteContext): Reply | Promise<Reply> => {
    // Only canonical paths are cached, so a hit by the raw URL needs no parsing (a URL with a
    // query or %-escapes misses here and is parsed).
    const quick = fresh(cache.get(ctx.req.url))
    if (quick !== undefined) return quick
    const parts: string[] = [ctx.params['l'] ?? '']
    for (const p of PARAMS) {
      const v = ctx.params[p]
      if (v === undefined) break
      parts.push(v)
    }
    const t = parseTilePath(parts)
    if (t === undefined) throw new NotFoundError('not a tile path (tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])', { details: { path: parts.join('/') } })
    const full = t.width === TILE_WIDTH
    const key = `/registry/tile/${parts.join('/')}`
    const first = t.level === 'entries' ? t.index * TILE_WIDTH + 1 : 0
    if (full) {
      const hit = fresh(cache.get(key))
      if (hit !== undefined) return hit
    }
    if (t.level !== 'entries') {
      const body = hashTile(log, t as TileCoord & { level: number })
      if (body === undefined) throw notFound(t)
      const reply = octets(body, full)
      if (full) cache.set(key, { reply, first }, body.length)
      return reply
    }
    return bundle(log, t).then((body) => {
      if (body === undefined) throw notFound(t)
      const reply = octets(body, full)
      if (full) cache.set(key, { reply, first }, body.length)
      return reply
    })
  }
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/registry/checkpoint',
      handler() {
        return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache' }, body: d.notary.served() }
      },
    },
  ]
  for (let n = 1; n <= PARAMS.length; n++) {
    routes.push({ method: 'GET', path: `/registry/tile/:l/${PARAMS.slice(0, n).map((p) => `:${p}`).join('/')}`, name: '/registry/tile/*', handler })
  }
  return routes
}
