/**
 * Read routes (public): `GET /registry/head`, `GET /registry/:version` (and its exact leaf at
 * `/registry/:version/leaf`), `GET /registry/payload/:b3`, `GET /registry/proof/inclusion` (by
 * version or by leaf hash), `GET /registry/proof/consistency`, `GET /registry/stream`. The C2SP
 * tiles and the checkpoint are in `tiles.ts`.
 *
 * @module
 */

import { GoneError, MalformedError, NotFoundError, blake3, canonicalBytes, canonicalJson, toAddress } from '@ron/core'
import type { Reply, Route, RouteContext } from '@ron/core'
import type { Head } from '../entry.js'
import type { StoredCheckpoint } from '../store/types.js'
import type { RouteDeps } from './context.js'
import { ReplyCache } from './reply-cache.js'

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

/** A leaf hash given as 64 hex digits or as base64 (as checkpoints and tiles write hashes). */
function hashParam(v: string, field: string): Uint8Array {
  const h = /^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v.replace(/ /g, '+'), 'base64')
  if (h.length !== 32) throw new MalformedError(`${field} must be a 32-byte hash in hex or base64`, { details: { field } })
  return h
}

function gone(version: number, cp: StoredCheckpoint | undefined, oldest: number): GoneError {
  return new GoneError(`version ${version} was pruned by retention; checkpoint ${cp?.treeSize ?? '?'} covers it`, {
    details: { version, checkpoint: cp === undefined ? null : { treeSize: cp.treeSize, root: cp.root, createdAt: cp.createdAt }, oldest },
  })
}

/** The read routes. */
export function readRoutes(d: RouteDeps): Route[] {
  const { log } = d
  // HEAD polling is the hot read: its 200 and 304 replies are built once per HEAD (and oldest:
  // pruning moves it without moving HEAD; and reload: the witness key may change) and handed out
  // as they are (core only reads a reply). The check per read allocates nothing: HEAD is compared
  // by identity (the log replaces its frozen HEAD object when HEAD moves, so no reply outlives the
  // HEAD it describes). The body stays a string: node writes a string body with the headers in
  // one piece, where bytes would go out as a second buffered chunk (more work per reply).
  let headCache: { head: Readonly<Head>; oldest: number; reloads: number; etag: string; ok: Reply; notModified: Reply } | undefined
  const current = (c: NonNullable<typeof headCache>): boolean => c.head === log.currentHead() && c.oldest === log.oldest() && c.reloads === d.reloads()
  const headReplies = async (): Promise<NonNullable<typeof headCache>> => {
    const head = log.currentHead()
    const oldest = log.oldest()
    const reloads = d.reloads()
    if (headCache !== undefined && current(headCache)) return headCache
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
      ...(d.witnessKey === undefined ? {} : { witnessKey: d.witnessKey }),
      oldest,
      signers: { threshold: set.threshold, signers: set.signers },
    })
    const etag = `"${head.hash}"`
    const built = {
      head,
      oldest,
      reloads,
      etag,
      // Frozen, reply and headers: core's node writer then works out their wire form once.
      ok: Object.freeze({ status: 200, headers: Object.freeze({ 'content-type': 'application/json', 'cache-control': 'no-cache', etag }), body }),
      notModified: Object.freeze({ status: 304, headers: Object.freeze({ 'cache-control': 'no-cache', etag }) }),
    }
    // HEAD may have moved while the entry was read: keep only what is still current.
    if (current(built)) headCache = built
    return built
  }
  // Entry views: canonical JSON (the same bytes before and after a restart), built once per
  // version and supersede mark; the ETag is the BLAKE3 of those bytes.
  const views = new ReplyCache<Reply & { etag: string }>(16 * 1024 * 1024)
  const entryView = async (version: number): Promise<Reply & { etag: string }> => {
    const superseded = log.supersededBy(version)
    const key = superseded === undefined ? String(version) : `${version}/s`
    const hit = views.get(key)
    if (hit !== undefined && version >= log.oldest()) return hit
    const r = await log.read(version)
    if (r === undefined) throw new NotFoundError(`no version ${version} (HEAD is ${log.head().version})`, { details: { version } })
    if ('pruned' in r) throw gone(version, r.checkpoint, log.oldest())
    const view: Record<string, unknown> = {
      ...r.entry,
      hash: r.hash,
      leafIndex: version - 1,
      leafHash: hex(log.tree.leafHash(version - 1)),
      leaf: `/registry/${version}/leaf`,
    }
    if (superseded !== undefined) view['supersededBy'] = superseded
    const body = canonicalBytes(view)
    const etag = `"${toAddress(blake3(body))}"`
    // An unmarked entry may still gain a supersede mark (a new view, a new ETag): cache briefly.
    const cacheControl = superseded === undefined ? 'public, max-age=60' : IMMUTABLE
    const reply = { status: 200, headers: { 'content-type': 'application/json', 'cache-control': cacheControl, etag }, body, etag }
    views.set(key, reply, body.length)
    return reply
  }
  return [
    {
      method: 'GET',
      path: '/registry/head',
      handler(ctx) {
        // The current HEAD's replies are answered without a promise (most polls hit the cache).
        const c = headCache
        if (c !== undefined && current(c)) return notModified(ctx, c.etag) ? c.notModified : c.ok
        return headReplies().then((r) => (notModified(ctx, r.etag) ? r.notModified : r.ok))
      },
    },
    {
      method: 'GET',
      path: '/registry/proof/inclusion',
      handler(ctx) {
        const size = log.tree.size
        const treeSize = optionalInt(ctx, 'treeSize', 1) ?? size
        if (treeSize > size) throw new NotFoundError(`tree size ${treeSize} is beyond the log (${size})`, { details: { treeSize, size } })
        // By leaf hash (RFC 6962 get-proof-by-hash), or by version.
        const byHash = ctx.query.get('hash')
        let version: number
        if (byHash !== null && byHash !== '') {
          if (ctx.query.get('version') !== null) throw new MalformedError('give either version or hash', { details: { field: 'hash' } })
          const index = log.leaves.find(hashParam(byHash, 'hash'))
          if (index === undefined || index >= treeSize) throw new NotFoundError(`no leaf with that hash in the tree of size ${treeSize}`, { details: { treeSize } })
          version = index + 1
        } else {
          version = intParam(ctx.query.get('version'), 'version', 1)
        }
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
      path: '/registry/payload/:b3',
      async handler(ctx) {
        const b3 = ctx.params['b3'] ?? ''
        if (!/^b3:[0-9a-f]{64}$/.test(b3)) throw new MalformedError('expected a b3: address', { details: { field: 'b3' } })
        const version = log.payloadVersion(b3)
        if (version === undefined) throw new NotFoundError('no payload kept by that address (a payload that fits its leaf is inside the entry bundle)', { details: { b3 } })
        const etag = `"${b3}"`
        if (notModified(ctx, etag)) return { status: 304, headers: { 'cache-control': IMMUTABLE, etag } }
        const r = await log.read(version)
        if (r === undefined) throw new NotFoundError('no such payload', { details: { b3 } })
        if ('pruned' in r) throw gone(version, r.checkpoint, log.oldest())
        const body = canonicalJson(r.entry.payload)
        return { status: 200, headers: { 'content-type': 'application/json', 'cache-control': IMMUTABLE, etag }, body }
      },
    },
    {
      method: 'GET',
      path: '/registry/:version/leaf',
      async handler(ctx) {
        const version = intParam(ctx.params['version'], 'version', 1)
        if (version > log.head().version) throw new NotFoundError(`no version ${version} (HEAD is ${log.head().version})`, { details: { version } })
        const etag = `"${hex(log.tree.leafHash(version - 1))}"`
        if (notModified(ctx, etag)) return { status: 304, headers: { 'cache-control': IMMUTABLE, etag } }
        const r = await log.leaf(version)
        if (r === undefined) throw new NotFoundError(`no version ${version}`, { details: { version } })
        if ('pruned' in r) throw gone(version, r.checkpoint, log.oldest())
        return { status: 200, headers: { 'content-type': 'application/octet-stream', 'cache-control': IMMUTABLE, etag }, body: r.bytes }
      },
    },
    {
      method: 'GET',
      path: '/registry/:version',
      async handler(ctx) {
        const version = intParam(ctx.params['version'], 'version', 1)
        const v = await entryView(version)
        if (notModified(ctx, v.etag)) return { status: 304, headers: { 'cache-control': v.headers!['cache-control']!, etag: v.etag } }
        return v
      },
    },
  ]
}
