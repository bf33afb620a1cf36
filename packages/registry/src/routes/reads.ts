/**
 * Read routes (public): `GET /registry/head`, `GET /registry/:version`, `GET /registry/checkpoint`,
 * `GET /registry/proof/inclusion`, `GET /registry/proof/consistency`, `GET /registry/stream`.
 *
 * @module
 */

import { GoneError, MalformedError, NotFoundError } from '@ron/core'
import type { Reply, Route, RouteContext } from '@ron/core'
import type { RouteDeps } from './context.js'

const IMMUTABLE = 'public, max-age=31536000, immutable'
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

/** True when the request's `If-None-Match` names `etag` (or `*`). */
function notModified(ctx: RouteContext, etag: string): boolean {
  const raw = ctx.req.headers['if-none-match']
  const v = Array.isArray(raw) ? raw.join(',') : raw
  if (v === undefined) return false
  return v.split(',').some((t) => {
    const x = t.trim().replace(/^W\//, '')
    return x === etag || x === '*'
  })
}

function intParam(v: string | null | undefined, field: string, min: number): number {
  if (v === null || v === undefined || !/^[0-9]{1,15}$/.test(v)) throw new MalformedError(`${field} must be a non-negative integer`, { details: { field } })
  const n = Number(v)
  if (n < min) throw new MalformedError(`${field} must be at least ${min}`, { details: { field } })
  return n
}

function optionalInt(ctx: RouteContext, name: string, min: number): number | undefined {
  const v = ctx.query.get(name)
  return v === null || v === '' ? undefined : intParam(v, name, min)
}

/** The read routes. */
export function readRoutes(d: RouteDeps): Route[] {
  const { log } = d
  // HEAD polling is the hot read: its 200 and 304 replies are built once per HEAD (and oldest:
  // pruning moves it without moving HEAD) and handed out as they are (core only reads a reply).
  let headCache: { hash: string; oldest: number; etag: string; ok: Reply; notModified: Reply } | undefined
  const headReplies = async (): Promise<NonNullable<typeof headCache>> => {
    const head = log.head()
    const oldest = log.oldest()
    if (headCache !== undefined && headCache.hash === head.hash && headCache.oldest === oldest) return headCache
    const read = head.version === 0 ? undefined : await log.read(head.version)
    const entry = read !== undefined && 'entry' in read ? read.entry : undefined
    const set = log.signerSetAt(head.version)
    const body = JSON.stringify({
      version: head.version,
      hash: head.hash,
      payloadB3: entry?.payloadB3 ?? null,
      committedAt: entry?.committedAt ?? null,
      treeSize: head.version,
      root: log.rootHex(head.version),
      treeHash: log.genesis.treeHash,
      origin: log.origin,
      logKey: log.genesis.logKey,
      oldest,
      signers: { threshold: set.threshold, signers: set.signers },
    })
    const etag = `"${head.hash}"`
    const built = {
      hash: head.hash,
      oldest,
      etag,
      ok: { status: 200, headers: Object.freeze({ 'content-type': 'application/json', 'cache-control': 'no-cache', etag }), body },
      notModified: { status: 304, headers: Object.freeze({ 'cache-control': 'no-cache', etag }) },
    }
    // HEAD may have moved while the entry was read: keep only what is still current.
    const now = log.head()
    if (now.hash === head.hash && log.oldest() === oldest) headCache = built
    return built
  }
  return [
    {
      method: 'GET',
      path: '/registry/head',
      handler(ctx) {
        // The current HEAD's replies are answered without a promise (most polls hit the cache).
        const c = headCache
        if (c !== undefined && c.hash === log.head().hash && c.oldest === log.oldest()) return notModified(ctx, c.etag) ? c.notModified : c.ok
        return headReplies().then((r) => (notModified(ctx, r.etag) ? r.notModified : r.ok))
      },
    },
    {
      method: 'GET',
      path: '/registry/checkpoint',
      async handler() {
        const cp = d.checkpointor.latest() ?? (await d.checkpointor.checkpointNow())
        return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache' }, body: cp.note }
      },
    },
    {
      method: 'GET',
      path: '/registry/proof/inclusion',
      handler(ctx) {
        const size = log.tree.size
        const version = intParam(ctx.query.get('version'), 'version', 1)
        const treeSize = optionalInt(ctx, 'treeSize', 1) ?? size
        if (treeSize > size) throw new NotFoundError(`tree size ${treeSize} is beyond the log (${size})`, { details: { treeSize, size } })
        if (version > treeSize) throw new MalformedError(`version ${version} is not in a tree of size ${treeSize}`, { details: { field: 'version' } })
        return {
          status: 200,
          json: {
            version,
            leafIndex: version - 1,
            treeSize,
            treeHash: log.genesis.treeHash,
            leafHash: hex(log.tree.leafHash(version - 1)),
            proof: log.tree.inclusionProof(version - 1, treeSize).map(hex),
            root: hex(log.tree.root(treeSize)),
          },
        }
      },
    },
    {
      method: 'GET',
      path: '/registry/proof/consistency',
      handler(ctx) {
        const size = log.tree.size
        const from = intParam(ctx.query.get('from'), 'from', 0)
        const to = optionalInt(ctx, 'to', 0) ?? size
        if (to > size) throw new NotFoundError(`tree size ${to} is beyond the log (${size})`, { details: { to, size } })
        if (from > to) throw new MalformedError('from must not exceed to', { details: { field: 'from' } })
        return {
          status: 200,
          json: {
            from,
            to,
            treeHash: log.genesis.treeHash,
            proof: log.tree.consistencyProof(from, to).map(hex),
            fromRoot: hex(log.tree.root(from)),
            toRoot: hex(log.tree.root(to)),
          },
        }
      },
    },
    {
      method: 'GET',
      path: '/registry/stream',
      handler(ctx) {
        return d.hub.reply(ctx)
      },
    },
    {
      method: 'GET',
      path: '/registry/:version',
      async handler(ctx) {
        const version = intParam(ctx.params['version'], 'version', 1)
        const r = await log.read(version)
        if (r === undefined) throw new NotFoundError(`no version ${version} (HEAD is ${log.head().version})`, { details: { version } })
        if ('pruned' in r) {
          const cp = r.checkpoint
          throw new GoneError(`version ${version} was pruned by retention; checkpoint ${cp?.treeSize ?? '?'} covers it`, {
            details: { version, checkpoint: cp === undefined ? null : { treeSize: cp.treeSize, root: cp.root, createdAt: cp.createdAt }, oldest: log.oldest() },
          })
        }
        const superseded = log.supersededBy(version)
        const cacheControl = superseded === undefined ? 'public, max-age=60' : IMMUTABLE
        if (notModified(ctx, `"${r.hash}"`)) return { status: 304, headers: { 'cache-control': cacheControl, etag: `"${r.hash}"` } }
        const json = superseded === undefined ? { ...r.entry, hash: r.hash } : { ...r.entry, hash: r.hash, supersededBy: superseded }
        // The entry never changes; a supersede mark may still be added to an unmarked one, so
        // only a marked entry (final in every respect) is cached as immutable.
        return { status: 200, headers: { 'cache-control': cacheControl, etag: `"${r.hash}"` }, json }
      },
    },
  ]
}
