/**
 * Turns an opened object into the gateway's reply: our content type (the manifest's, never the
 * provider's) with `nosniff`, `ETag` = the content address, `304` on a matching `If-None-Match`,
 * single and suffix `Range` (206/416), and no byte that was not verified against the address: a
 * whole body streamed from this node's storage holds its last chunk back until the whole hash
 * matches; a body from another node was verified whole before this is called.
 *
 * @module
 */

import {
  IntegrityFailedError,
  NotReadyError,
  RangeNotSatisfiableError,
  addressOf,
  createBlake3,
  toAddress,
  type Address,
  type Reply,
  type ReplyHeaders,
} from '@ron/core'
import { parseSingleRange } from './range.js'
import type { ObjectReader, ObjectSource } from './reader.js'

/** What to serve and how. */
export interface ServeOptions {
  address: Address
  /** The media type the answer carries. */
  type: string
  method: 'GET' | 'HEAD'
  /** 200, or 404 when serving a site's `404.html`. */
  status: 200 | 404
  /** `Cache-Control` of the answer. */
  cacheControl: string
  /** Headers added to every answer (a CSP). */
  extra?: ReplyHeaders | undefined
  headers: { range?: string | undefined; 'if-none-match'?: string | undefined }
  signal: AbortSignal
  corrId: string
}

const EMPTY = addressOf(new Uint8Array(0))

/** True when `header` (an `If-None-Match` list) names `etag`, weakly compared, or is `*`. */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  for (const raw of header.split(',')) {
    const t = raw.trim()
    if (t === '*' || t === etag || t === `W/${etag}`) return true
  }
  return false
}

/**
 * Passes `body` through, hashing it, one chunk behind: the last chunk is released only once the
 * whole body hashes to `address`. A mismatch then fails the stream with at least one chunk still
 * unsent, so the client sees a short transfer — never a complete body of the wrong bytes.
 */
export async function* holdBackVerified(body: AsyncIterable<Uint8Array>, address: Address): AsyncGenerator<Uint8Array> {
  const h = createBlake3()
  let held: Uint8Array | undefined
  for await (const c of body) {
    if (c.byteLength === 0) continue
    h.update(c)
    if (held !== undefined) yield held
    // A copy: the source may reuse its buffer for the next chunk while this one is held.
    held = c.slice()
  }
  if (toAddress(h.digest()) !== address) throw new IntegrityFailedError('bytes from storage do not match the address', { details: { address } })
  if (held !== undefined) yield held
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/** Opens `o.address` with `reader` and builds the reply (see the module comment). */
export async function serveObject(reader: ObjectReader, o: ServeOptions): Promise<Reply> {
  const etag = `"${o.address}"`
  const base: Record<string, string> = {
    'content-type': o.type,
    'x-content-type-options': 'nosniff',
    'cache-control': o.cacheControl,
    etag,
    'accept-ranges': 'bytes',
  }
  const headers: ReplyHeaders = o.extra === undefined ? base : { ...base, ...o.extra }
  if (o.status === 200 && etagMatches(o.headers['if-none-match'], etag)) {
    const { 'content-type': _t, 'accept-ranges': _a, ...rest } = headers as Record<string, string>
    return { status: 304, headers: rest }
  }
  const range = o.status === 200 ? o.headers.range : undefined
  const src = await reader.open(o.address, { method: o.method, range, signal: o.signal, corrId: o.corrId })
  return src.kind === 'local' ? fromLocal(src, o, headers, range !== undefined) : fromVerified(src, o, headers, range)
}

async function fromLocal(src: Extract<ObjectSource, { kind: 'local' }>, o: ServeOptions, headers: ReplyHeaders, ranged: boolean): Promise<Reply> {
  const res = src.res
  const len = header(res.headers['content-length'])
  if (res.status === 416) {
    await res.dump()
    const cr = header(res.headers['content-range'])
    const size = Number(/\/(\d+)$/.exec(cr ?? '')?.[1] ?? NaN)
    const err = new RangeNotSatisfiableError('range not satisfiable', { details: Number.isFinite(size) ? { size } : {} })
    return { status: 416, headers: { ...(cr === undefined ? {} : { 'content-range': cr }), 'x-content-type-options': 'nosniff' }, json: err.toEnvelope(o.corrId) }
  }
  if (len === '0' && o.address !== EMPTY) {
    // Nothing would be held back to cut: refuse before any header is sent.
    await res.dump()
    throw new NotReadyError('storage answered an empty body for a non-empty address', { details: { upstream: 'storage', reason: 'integrity', address: o.address } })
  }
  const out: ReplyHeaders = { ...headers, ...(len === undefined ? {} : { 'content-length': len }) }
  if (res.status === 206) {
    const cr = header(res.headers['content-range'])
    if (cr !== undefined) out['content-range'] = cr
  }
  if (o.method === 'HEAD') {
    await res.dump()
    return { status: res.status === 206 && ranged ? 206 : o.status, headers: out }
  }
  // A part (206) is checked by storage chunk by chunk against its table; a whole body is hashed here too.
  if (res.status === 206) return { status: 206, headers: out, body: res.body }
  return { status: o.status, headers: out, body: holdBackVerified(res.body, o.address) }
}

async function fromVerified(src: Extract<ObjectSource, { kind: 'verified' }>, o: ServeOptions, headers: ReplyHeaders, rangeHeader: string | undefined): Promise<Reply> {
  const obj = src.obj
  const r = parseSingleRange(rangeHeader, obj.size)
  if (r.kind === 'unsatisfiable') {
    await obj.release()
    const err = new RangeNotSatisfiableError('range not satisfiable', { details: { size: obj.size } })
    return { status: 416, headers: { 'content-range': `bytes */${obj.size}`, 'x-content-type-options': 'nosniff' }, json: err.toEnvelope(o.corrId) }
  }
  const out: ReplyHeaders = { ...headers }
  if (r.kind === 'single') out['content-range'] = `bytes ${r.range.start}-${r.range.end}/${obj.size}`
  const length = String(r.kind === 'single' ? r.range.end - r.range.start + 1 : obj.size)
  const status = r.kind === 'single' ? 206 : o.status
  if (o.method === 'HEAD') {
    await obj.release()
    return { status, headers: { ...out, 'content-length': length } }
  }
  const body = obj.body(r.kind === 'single' ? r.range : undefined)
  // The host sets the length of a body in memory itself.
  if (!(body instanceof Uint8Array)) out['content-length'] = length
  return { status, headers: out, body }
}
