/**
 * `PUT|POST /o`, `GET|HEAD /o/:addr` and `DELETE /o/:addr`.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import {
  NotFoundError,
  NotReadyError,
  OverLimitError,
  RangeNotSatisfiableError,
  checkCaveats,
  isRonError,
  linkSignals,
  parseAddress,
} from '@ron/core'
import type { Address, Reply, Route, RouteContext } from '@ron/core'
import { REPLICA_PATH } from '../replication.js'
import { contentRange, parseRange, unsatisfiedContentRange } from '../range.js'
import type { BlobReader, ByteRange } from '../store/types.js'
import { etagOf, ifNoneMatch, objectHeaders, withCleanup, type StorageContext } from './context.js'

const enc = new TextEncoder()

function addressParam(ctx: RouteContext, name = 'addr'): Address {
  return parseAddress(ctx.params[name] ?? '')
}

/** Counts an integrity failure and marks the object for urgent repair. */
function integrityFailed(s: StorageContext, address: Address): void {
  s.metrics.inc('integrity_failures_total', undefined)
  s.repair.markSuspect(address, s.clock.now())
  s.events.publish({ type: 'integrity:failed', address })
  s.kick()
}

async function openOrThrow(s: StorageContext, address: Address): Promise<BlobReader> {
  let reader: BlobReader | undefined
  try {
    reader = await s.store.open(address)
  } catch (e) {
    if (isRonError(e, 'IntegrityFailed')) integrityFailed(s, address)
    throw e
  }
  if (reader === undefined) throw new NotFoundError('no such object', { details: { address } })
  return reader
}

async function* verifiedChunks(s: StorageContext, reader: BlobReader, ranges: ByteRange[] | undefined, signal: AbortSignal, boundary?: string): AsyncGenerator<Uint8Array> {
  try {
    if (ranges === undefined) {
      yield* reader.read(undefined, signal)
      return
    }
    for (const r of ranges) {
      if (boundary !== undefined) yield enc.encode(partHeader(boundary, r, reader.size))
      yield* reader.read(r, signal)
    }
    if (boundary !== undefined) yield enc.encode(`\r\n--${boundary}--\r\n`)
  } catch (e) {
    // The HTTP layer destroys the response: the client sees a truncated transfer, never a wrong byte.
    if (isRonError(e, 'IntegrityFailed')) integrityFailed(s, reader.address)
    throw e
  }
}

/**
 * Bodies up to this many bytes are read and verified whole before the answer, and sent with one
 * write (at most one per reader slot is held: `getConcurrency` × this, plus the chunks covering it).
 */
export const BUFFERED_BODY_BYTES = 256 * 1024

/** The verified bytes of `range` (or the whole object), in one buffer. */
async function verifiedWhole(s: StorageContext, reader: BlobReader, range: ByteRange | undefined): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  let total = 0
  try {
    for await (const c of reader.read(range, s.shutdown)) {
      parts.push(c)
      total += c.byteLength
    }
  } catch (e) {
    if (isRonError(e, 'IntegrityFailed')) integrityFailed(s, reader.address)
    throw e
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total)
}

function partHeader(boundary: string, r: ByteRange, size: number): string {
  return `\r\n--${boundary}\r\ncontent-type: application/octet-stream\r\ncontent-range: ${contentRange(r, size)}\r\n\r\n`
}

/** GET/HEAD /o/:addr — verified streaming with ETag, conditional GET and Range. */
async function getObject(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const address = addressParam(ctx)
  if (!s.o.publicReads) await s.authorizeRead(ctx.req)
  // The request's signal is only needed (and only created) when the request has to wait for a slot.
  const release = await s.work.acquire('read', '', ctx.req.method === 'HEAD' ? 'HEAD /o/:addr' : 'GET /o/:addr', () => ctx.signal)
  let reader: BlobReader
  try {
    reader = await openOrThrow(s, address)
  } catch (e) {
    release()
    throw e
  }
  const head = ctx.req.method === 'HEAD'
  let handedOff = false
  try {
    const etag = etagOf(address)
    if (ifNoneMatch(ctx.req.headers['if-none-match'], etag)) return { status: 304, headers: objectHeaders(address) }
    const size = reader.size
    const ifRange = ctx.req.headers['if-range']
    const rangeHeader = ifRange === undefined || ifRange === etag ? ctx.req.headers.range : undefined
    const parsed = parseRange(rangeHeader, size)
    if (parsed.kind === 'unsatisfiable') {
      const err = new RangeNotSatisfiableError('range not satisfiable', { details: { size } })
      // An error, not the object: no ETag and no year-long immutable caching (those go with 200/206/304).
      return { status: 416, headers: { 'content-range': unsatisfiedContentRange(size) }, json: err.toEnvelope(ctx.corrId) }
    }
    let status = 200
    let ranges: ByteRange[] | undefined
    let boundary: string | undefined
    let length = size
    let contentType = 'application/octet-stream'
    let rangeOut: string | undefined
    if (parsed.kind === 'single') {
      status = 206
      ranges = [parsed.range]
      length = parsed.range.end - parsed.range.start + 1
      rangeOut = contentRange(parsed.range, size)
    } else if (parsed.kind === 'multi') {
      status = 206
      ranges = parsed.ranges
      boundary = randomBytes(12).toString('hex')
      length = enc.encode(`\r\n--${boundary}--\r\n`).byteLength
      for (const r of ranges) length += enc.encode(partHeader(boundary, r, size)).byteLength + (r.end - r.start + 1)
      contentType = `multipart/byteranges; boundary=${boundary}`
    }
    // A small body (a small object, a short range) is read and verified whole before the answer
    // starts, then sent with one write (the HTTP layer sets its Content-Length); a corrupt chunk is
    // then a clean 422 with no byte sent.
    const buffered = !head && boundary === undefined && length <= BUFFERED_BODY_BYTES
    // Added to, never spread or deleted from: the hot path of small GETs.
    const headers = objectHeaders(address)
    headers['content-type'] = contentType
    if (rangeOut !== undefined) headers['content-range'] = rangeOut
    if (!buffered) headers['content-length'] = String(length)
    if (head) return { status, headers }
    if (buffered) return { status, headers, body: await verifiedWhole(s, reader, ranges?.[0]) }
    // The reader slot is held until the body is fully written or aborted. A client that goes away
    // ends the body (the HTTP layer closes its iterator), so the read needs only the shutdown signal.
    const { body } = withCleanup(verifiedChunks(s, reader, ranges, s.shutdown, boundary), async () => {
      release()
      await reader.close()
    })
    handedOff = true
    return { status, headers, body }
  } finally {
    if (!handedOff) {
      release()
      await reader.close()
    }
  }
}

/**
 * Whether the body's pieces are never changed once read, so the store may write them without a
 * copy: a stream's chunks (a socket's read buffers are fresh for every read; a `Readable` hands
 * its pushed buffers over) and a decoder's output (fresh buffers). Any other iterable (an
 * in-process caller's generator) may reuse its buffer.
 */
function handsOverPieces(ctx: RouteContext, encoded: boolean): boolean {
  if (encoded) return true
  const body = ctx.req.body as { on?: unknown; pause?: unknown; resume?: unknown }
  return typeof body.on === 'function' && typeof body.pause === 'function' && typeof body.resume === 'function'
}

/**
 * PUT|POST /o — streams the body into the store, hashing as it flows. `PUT /replica` (a peer's
 * replica write or repair push) is the same with the peer's `storage:replicate` token, and is
 * not replicated again.
 */
async function putObject(s: StorageContext, ctx: RouteContext, replica: boolean): Promise<Reply> {
  const o = s.o
  if (!s.disk.ok) throw new NotReadyError(`writes are paused: ${s.disk.reason ?? 'disk not ready'}`, { details: { reason: s.disk.reason }, retryAfterMs: 5000 })
  const claims = replica ? await s.authorizeReplica(ctx.req) : ctx.auth
  if (claims !== undefined && !replica) checkCaveats(claims, { method: ctx.req.method, path: '/o' })
  const caveatMax = claims?.ron?.maxBytes
  const limit = caveatMax === undefined ? o.maxObjectBytes : Math.min(caveatMax, o.maxObjectBytes)
  const source = caveatMax !== undefined && caveatMax < o.maxObjectBytes ? 'caveat' : 'maxObjectBytes'
  const declared = Number(ctx.req.headers['content-length'])
  // Only an identity body's Content-Length is its decoded size; an encoded body is counted as it
  // decodes (the store's `maxBytes`, renamed to this limit below).
  const encoded = ctx.req.headers['content-encoding'] !== undefined && ctx.req.headers['content-encoding'] !== 'identity'
  if (!encoded && Number.isFinite(declared) && declared > limit) {
    throw new OverLimitError(`object exceeds the ${source} limit of ${limit} bytes`, { details: { limit, source, declared } })
  }
  const expectHeader = ctx.req.headers['x-expect-address']
  let expect: Address | undefined
  if (typeof expectHeader === 'string') {
    try {
      expect = parseAddress(expectHeader)
    } catch (e) {
      if (isRonError(e)) e.details.field = 'X-Expect-Address'
      throw e
    }
  }
  // Waiting for a writer happens before the body is read: it counts against neither the
  // upload's rate and deadline nor the slow-disk rule.
  // The request's signal under the service's shutdown, linked by hand and released in the finally
  // below (AbortSignal.any per upload showed in profiles).
  const link = linkSignals(s.shutdown, ctx.signal)
  const signal = link.signal
  let release: () => void
  try {
    release = await s.work.acquire('write', claims?.sub ?? '', replica ? `PUT ${REPLICA_PATH}` : `${ctx.req.method} /o`, signal)
  } catch (e) {
    link.dispose()
    throw e
  }
  let kept: Address | undefined
  let bodyEnd: number | undefined
  const guard = s.guard
  const clock = s.clock
  // The store's single pass over the body yields the address and the chunk table; it calls this
  // with the address before the object becomes visible, so the body is hashed once.
  const beforeCommit = async (address: Address): Promise<void> => {
    kept = address
    // Before the store commits: a concurrent delete of this address finishes first (pins.ts).
    await guard.beginKeep(address)
    // Commit time starts here: waiting behind a delete or a paced repair is not the disk being slow.
    bodyEnd = clock.now()
  }
  try {
    // The body's minimum rate and deadline (http.minBytesPerSec, http.requestTimeoutMs) are core's,
    // counted from here: this first read, after the writer slot was granted.
    const body = ctx.stream()
    let result
    try {
      // The store stops at `maxBytes` decoded bytes; its OverLimit is renamed below to say which
      // limit it was (one generator layer per chunk less than a counting wrapper).
      result = await s.store.put(body, {
        ...(expect === undefined ? {} : { expect }),
        maxBytes: limit,
        signal,
        beforeCommit,
        ownedPieces: handsOverPieces(ctx, encoded),
      })
    } catch (e) {
      if (isRonError(e, 'OverLimit') && e.details.source === undefined) {
        throw new OverLimitError(`object exceeds the ${source} limit of ${limit} bytes`, { details: { limit, source }, cause: e })
      }
      if (isRonError(e, 'NotReady')) s.diskError(typeof e.details.reason === 'string' ? e.details.reason : 'io_error')
      throw e
    }
    if (bodyEnd !== undefined) s.commitTime(clock.now() - bodyEnd)
    // A replica write from a peer is not replicated again (that would cycle between placement nodes).
    const copies = replica ? 1 : await s.replicator.replicate(result.address, signal)
    s.announcer?.notify(result.address)
    s.events.publish({ type: 'object:stored', address: result.address, size: result.size, created: result.created })
    return {
      status: result.created ? 201 : 200,
      headers: { etag: etagOf(result.address), location: `/o/${result.address}` },
      json: { address: result.address, size: result.size, copies },
    }
  } finally {
    release()
    link.dispose()
    if (kept !== undefined) guard.endKeep(kept)
  }
}


/** DELETE /o/:addr — refuses pinned objects and objects a PUT is about to keep (409). */
async function deleteObject(s: StorageContext, ctx: RouteContext): Promise<Reply> {
  const address = addressParam(ctx)
  const removed = await s.guard.exclusive(address, async () => {
    const existed = await s.guard.remove(address, s.pins.has(address), () => s.store.delete(address))
    // Still inside the serial section: a deleted object has nothing left to repair, so a suspect
    // mark must not make the planner bring it back.
    s.repair.clearSuspect(address)
    return existed
  })
  if (!removed) throw new NotFoundError('no such object', { details: { address } })
  s.events.publish({ type: 'object:deleted', address })
  return { status: 204 }
}

/** The object routes. Reads and PUTs take a slot of the `work` scheduler (`admission.ts`). */
export function objectRoutes(s: StorageContext): Route[] {
  // Reads are public, or checked by the handler (storage:read, or a peer's replica token).
  const read = { public: true }
  const put = (method: 'PUT' | 'POST'): Route => ({
    method,
    path: '/o',
    name: `${method} /o`,
    scope: 'storage:write',
    // The object limit (or the token's maxBytes caveat) is enforced by the handler on decoded
    // bytes, so an OverLimit says which one; the HTTP layer keeps only its ratio guard here.
    bodyLimit: Infinity,
    handler: (ctx) => putObject(s, ctx, false),
  })
  return [
    put('PUT'),
    put('POST'),
    {
      method: 'PUT',
      path: REPLICA_PATH,
      name: `PUT ${REPLICA_PATH}`,
      // Authenticated by the handler: scope storage:replicate, signed by this service's issuer or
      // by a configured peer's issuer key (peer-auth.ts). Not public in any sense.
      public: true,
      bodyLimit: Infinity,
      handler: (ctx) => putObject(s, ctx, true),
    },
    { method: 'GET', path: '/o/:addr', name: 'GET /o/:addr', ...read, handler: (ctx) => getObject(s, ctx) },
    { method: 'DELETE', path: '/o/:addr', name: 'DELETE /o/:addr', scope: 'storage:admin', handler: (ctx) => deleteObject(s, ctx) },
  ]
}
