/**
 * `POST /put`: an external API key (configured hashed) is traded for a short-lived capability
 * attenuated through passport from interop's own `storage:write` token (≤ 60 s, audience storage,
 * `maxBytes` caveat), and the body is
 * streamed to storage in 64 KiB chunks with at most two buffered → `201 {address, size}`.
 *
 * @module
 */

import { createHash } from 'node:crypto'
import { BusyError, NotReadyError, OverLimitError, UnauthorizedError, errorFromResponse, isRonError, type Reply, type Route, type RouteContext } from '@ron/core'
import { latencyBucket, redactCapabilityId } from '../audit.js'
import { attenuateCapability } from '../capabilities.js'
import { constantTimeEqual } from '../webhooks/hmac.js'
import { upstreamFailure } from '../upstream.js'
import { admitWrite, recordOutcome, type ApiKeyClient, type InteropContext } from './context.js'

const ENDPOINT = 'POST /put'

/**
 * Re-chunks a byte stream into `size`-byte chunks (the last may be shorter). Pull-based: at most
 * one chunk is being filled while the previous one is with the consumer, so no more than two are
 * buffered whatever the producer's chunk sizes.
 */
export async function* rechunk(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  // Unzeroed: every byte handed on is written first (the last chunk is cut to what was filled).
  let buf: Uint8Array = Buffer.allocUnsafeSlow(size)
  let n = 0
  for await (const c of source) {
    let off = 0
    while (off < c.byteLength) {
      if (n === 0 && c.byteLength - off >= size) {
        yield c.slice(off, off + size)
        off += size
        continue
      }
      const take = Math.min(size - n, c.byteLength - off)
      buf.set(c.subarray(off, off + take), n)
      n += take
      off += take
      if (n === size) {
        yield buf
        buf = Buffer.allocUnsafeSlow(size)
        n = 0
      }
    }
  }
  if (n > 0) yield buf.subarray(0, n)
}

function apiKeyOf(ctx: RouteContext): string | undefined {
  const h = ctx.req.headers['x-api-key']
  if (typeof h === 'string' && h !== '') return h
  const auth = ctx.req.headers.authorization
  if (typeof auth === 'string' && auth.startsWith('ApiKey ')) return auth.slice('ApiKey '.length).trim() || undefined
  return undefined
}

/**
 * The client whose key hashes to the SHA-256 of `key`. Every configured hash is compared in
 * constant time, matched or not: no early exit and no hash-table lookup whose timing depends on
 * how much of a stored hash a guess shares.
 */
function clientOf(s: InteropContext, key: string): ApiKeyClient | undefined {
  const digest = createHash('sha256').update(key, 'utf8').digest()
  let found: ApiKeyClient | undefined
  for (const c of s.clients()) {
    if (constantTimeEqual(c.hash, digest) && found === undefined) found = c
  }
  return found
}

async function handle(s: InteropContext, ctx: RouteContext): Promise<Reply> {
  const started = s.clock.now()
  admitWrite(s, ENDPOINT)
  const who: { client?: string } = {}
  let capabilityId: string | undefined
  // Every refusal is audited, the unauthenticated ones too (key guessing shows up); never the key.
  const audit = (decision: 'accept' | 'deny' | 'error', extra: { reason?: string; payloadB3?: string } = {}): void => {
    s.audit.emit({
      kind: 'put',
      ...(who.client === undefined ? {} : { client: who.client }),
      requestId: ctx.corrId,
      decision,
      latency: latencyBucket(s.clock.now() - started),
      ...(capabilityId === undefined ? {} : { capabilityId }),
      ...extra,
    })
  }
  const refuse = (e: UnauthorizedError | OverLimitError, reason: string): never => {
    audit('deny', { reason })
    throw e
  }
  const key = apiKeyOf(ctx)
  if (key === undefined) return refuse(new UnauthorizedError('missing API key (X-Api-Key)', { details: { reason: 'missing' } }), 'missing')
  const found = clientOf(s, key)
  if (found === undefined) return refuse(new UnauthorizedError('unknown API key', { details: { reason: 'bad_signature' } }), 'bad_signature')
  who.client = found.client
  const cfg = s.cfg()
  const limit = Math.min(found.maxBytes ?? cfg.uploads.maxBytes, cfg.uploads.maxBytes)
  const declared = Number(ctx.req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) refuse(new OverLimitError(`upload exceeds the limit of ${limit} bytes`, { details: { limit, declared } }), 'OverLimit')
  const inFlight = s.uploadsInFlight.get(found.client) ?? 0
  if (inFlight >= cfg.uploads.maxConcurrentPerClient) {
    s.metrics.inc('busy_rejections_total', { endpoint: ENDPOINT, queue: 'client' })
    throw new BusyError(`client ${found.client} has ${inFlight} uploads in flight`, { details: { endpoint: ENDPOINT, reason: 'per_client', limit: cfg.uploads.maxConcurrentPerClient }, retryAfterMs: 1000 })
  }
  s.uploadsInFlight.set(found.client, inFlight + 1)
  try {
    const reply = await s.pool.submit(async (signal) => {
      // One capability per client and limit, reused for two thirds of its life (CapabilityCache).
      const capKey = `${found.client}\u0000${limit}`
      const cap = await s.capabilities
        .get(capKey, cfg.uploads.capabilityTtlSec * 1000, () => attenuateCapability(s, found.client, limit, ctx.corrId), signal)
        .catch((e: unknown) => {
          throw upstreamFailure(e, 'passport')
        })
      capabilityId = redactCapabilityId(cap.jti)
      const headers: Record<string, string> = { authorization: `Bearer ${cap.token}`, 'content-type': 'application/octet-stream' }
      if (Number.isFinite(declared)) headers['content-length'] = String(declared)
      const res = await s.upstreams
        .call(cfg.storage.target, {
          op: 'storage.put',
          method: 'PUT',
          path: '/o',
          headers,
          body: rechunk(ctx.stream(), cfg.uploads.chunkBytes),
          timeoutMs: cfg.uploads.timeoutMs,
          // A streamed body cannot be replayed.
          idempotent: false,
          signal,
          corrId: ctx.corrId,
        })
        .catch((e: unknown) => {
          throw upstreamFailure(e, 'storage')
        })
      // Storage refusing the capability interop just obtained is interop's failure (503), not a
      // bad API key; OverLimit (the caveat), Malformed and Busy are the client's to see.
      if (res.status >= 400) {
        // Refused (revoked, expired, issuer key rotated): never hand this capability out again.
        if (res.status === 401 || res.status === 403) s.capabilities.invalidate(capKey, cap.token)
        throw upstreamFailure(await errorFromResponse(res), 'storage')
      }
      const out = await res.json<{ address?: unknown; size?: unknown }>().catch((e: unknown) => {
        if (signal.aborted) throw e
        throw new NotReadyError('storage answered the upload without JSON', { details: { upstream: 'storage' }, cause: e, retryAfterMs: 1000 })
      })
      if (typeof out.address !== 'string' || typeof out.size !== 'number') {
        throw new NotReadyError('storage answered the upload without an address', { details: { upstream: 'storage' }, retryAfterMs: 1000 })
      }
      audit('accept', { payloadB3: out.address })
      s.events.publish({ type: 'upload:stored', client: found.client, address: out.address, size: out.size })
      return { status: res.status === 200 ? 200 : 201, json: { address: out.address, size: out.size } } satisfies Reply
    }, ctx.signal)
    recordOutcome(s, reply.status)
    return reply
  } catch (e) {
    if (isRonError(e, 'Busy')) throw e
    if (isRonError(e) && e.status >= 500) recordOutcome(s, e.status)
    audit(isRonError(e) && e.status < 500 ? 'deny' : 'error', { reason: isRonError(e) ? e.code : 'Internal' })
    throw e
  } finally {
    const n = (s.uploadsInFlight.get(found.client) ?? 1) - 1
    if (n <= 0) s.uploadsInFlight.delete(found.client)
    else s.uploadsInFlight.set(found.client, n)
  }
}

/** The upload route. */
export function uploadRoutes(s: InteropContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/put',
      name: ENDPOINT,
      // Authenticated by an API key, not a bearer token.
      public: true,
      // The handler enforces the per-client limit; storage enforces the capability's maxBytes.
      bodyLimit: s.cfg().uploads.maxBytes,
      handler: (ctx) => handle(s, ctx),
    },
  ]
}
