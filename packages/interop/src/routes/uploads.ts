/**
 * `POST /put`: an external API key (configured hashed) is traded for a short-lived capability
 * attenuated through passport from interop's own `storage:write` token (≤ 60 s, audience storage,
 * `maxBytes` caveat), and the body is
 * streamed to storage in 64 KiB chunks with at most two buffered → `201 {address, size}`.
 *
 * @module
 */

import { createHash } from 'node:crypto'
import {
  BusyError,
  InternalError,
  MalformedError,
  NotReadyError,
  OverLimitError,
  UnauthorizedError,
  errorFromResponse,
  isRonError,
  parseAddress,
  systemClock,
  type Address,
  type Clock,
  type Reply,
  type Route,
  type RouteContext,
  type TimerHandle,
} from '@ron/core'
import { latencyBucket, redactCapabilityId } from '../audit.js'
import { attenuateCapability } from '../capabilities.js'
import { constantTimeEqual } from '../webhooks/hmac.js'
import { upstreamFailure } from '../upstream.js'
import { admitWrite, recordOutcome, type ApiKeyClient, type InteropContext } from './context.js'

const ENDPOINT = 'POST /put'

/** What {@link rechunk} saw of its source: when it ended, or how it failed (the client's doing, not the upstream's). */
export interface BodyWatch {
  /** When the source ended (clock ms), once it has. */
  endedAt?: number
  /** The source's error, once it failed (a client too slow, gone, over a limit). */
  failure?: unknown
}

/** Options of {@link rechunk}. */
export interface RechunkOptions {
  /**
   * Longest a partly filled chunk waits for more bytes before it is passed on as it is, so a slow
   * (but not too slow) client never leaves the consumer without data for longer than this.
   * @default 1000
   */
  flushMs?: number
  /** @default systemClock */
  clock?: Clock
  /** Filled in as the source ends or fails. */
  watch?: BodyWatch
}

const FLUSH = Symbol('flush')

/**
 * Re-chunks a byte stream into `size`-byte chunks (the last may be shorter). Pull-based: at most
 * one chunk is being filled while the previous one is with the consumer, so no more than two are
 * buffered whatever the producer's chunk sizes. A chunk partly filled for `flushMs` goes out as it
 * is: the consumer (storage, with its own gap timeout) keeps receiving from a slow client.
 */
export async function* rechunk(source: AsyncIterable<Uint8Array>, size: number, options: RechunkOptions = {}): AsyncGenerator<Uint8Array> {
  const clock = options.clock ?? systemClock
  const flushMs = options.flushMs ?? 1000
  const watch = options.watch
  const it = source[Symbol.asyncIterator]()
  // Unzeroed: every byte handed on is written first (the last chunk is cut to what was filled).
  let buf: Uint8Array = Buffer.allocUnsafeSlow(size)
  let n = 0
  // One flush timer per partly filled chunk (not per source piece); it wakes the current wait.
  let timer: TimerHandle | undefined
  let due = false
  let wake: ((v: typeof FLUSH) => void) | undefined
  const onTimer = (): void => {
    timer = undefined
    due = true
    wake?.(FLUSH)
  }
  const disarm = (): void => {
    if (timer !== undefined) clock.clearTimeout(timer)
    timer = undefined
    due = false
  }
  let pending: Promise<IteratorResult<Uint8Array>> | undefined
  let complete = false
  try {
    for (;;) {
      if (due && n > 0) {
        disarm()
        const part = buf.subarray(0, n)
        buf = Buffer.allocUnsafeSlow(size)
        n = 0
        yield part
        continue
      }
      pending ??= it.next()
      const p = pending
      const r =
        n === 0
          ? await p
          : await new Promise<IteratorResult<Uint8Array> | typeof FLUSH>((resolve, reject) => {
              wake = resolve
              p.then(resolve, reject)
            })
      wake = undefined
      if (r === FLUSH) continue
      pending = undefined
      if (r.done === true) break
      const c = r.value
      let off = 0
      while (off < c.byteLength) {
        if (n === 0 && c.byteLength - off >= size) {
          yield c.slice(off, off + size)
          off += size
          continue
        }
        const take = Math.min(size - n, c.byteLength - off)
        if (n === 0 && take > 0) {
          timer = clock.setTimeout(onTimer, flushMs)
          timer.unref?.()
        }
        buf.set(c.subarray(off, off + take), n)
        n += take
        off += take
        if (n === size) {
          disarm()
          yield buf
          buf = Buffer.allocUnsafeSlow(size)
          n = 0
        }
      }
    }
    disarm()
    if (watch !== undefined) watch.endedAt = clock.now()
    complete = true
    if (n > 0) yield buf.subarray(0, n)
  } catch (e) {
    if (watch !== undefined) watch.failure = e
    throw e
  } finally {
    disarm()
    if (!complete) {
      // Stopped early (the consumer gave up, or the source failed): a read still in flight settles quietly.
      pending?.catch(() => undefined)
      void Promise.resolve(it.return?.()).catch(() => undefined)
    }
  }
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
  const refuse = (e: UnauthorizedError | OverLimitError | Error, reason: string): never => {
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
  // SPEC 6: the address the client expects is checked by storage against what it hashed, before
  // anything is kept (a mismatch is 422 IntegrityFailed); a malformed one is refused here.
  const expect = expectedAddress(ctx, refuse)
  const inFlight = s.uploadsInFlight.get(found.client) ?? 0
  if (inFlight >= cfg.uploads.maxConcurrentPerClient) {
    s.metrics.inc('busy_rejections_total', { endpoint: ENDPOINT, queue: 'client' })
    throw new BusyError(`client ${found.client} has ${inFlight} uploads in flight`, { details: { endpoint: ENDPOINT, reason: 'per_client', limit: cfg.uploads.maxConcurrentPerClient }, retryAfterMs: 1000 })
  }
  // Uploads (held as long as their clients take) leave workers to webhook receipts.
  const allUploads = cfg.uploads.maxConcurrent ?? Math.max(1, Math.floor(cfg.workers / 2))
  if (s.uploadsActive.n >= allUploads) {
    s.metrics.inc('busy_rejections_total', { endpoint: ENDPOINT, queue: 'uploads' })
    throw new BusyError(`${s.uploadsActive.n} uploads in flight`, { details: { endpoint: ENDPOINT, reason: 'uploads', limit: allUploads }, retryAfterMs: 1000 })
  }
  // The client's body share (core's per-principal cap) is its API key's, not its address's.
  ctx.setPrincipal(`client:${found.client}`)
  s.uploadsInFlight.set(found.client, inFlight + 1)
  s.uploadsActive.n++
  // What the client's body did: its slowness or failure is never the upstream's (brownout, breaker).
  const watch: BodyWatch = {}
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
      if (expect !== undefined) headers['x-expect-address'] = expect
      const res = await s.upstreams
        .call(cfg.storage.target, {
          op: 'storage.put',
          method: 'PUT',
          path: '/o',
          headers,
          body: rechunk(ctx.stream(), cfg.uploads.chunkBytes, { clock: s.clock, watch }),
          timeoutMs: cfg.uploads.timeoutMs,
          // A streamed body cannot be replayed.
          idempotent: false,
          signal,
          corrId: ctx.corrId,
          clientBody: watch,
        })
        .catch((e: unknown) => {
          throw clientFault(watch) ?? upstreamFailure(e, 'storage')
        })
      // The client's body failed (too slow, gone, over a limit): whatever storage made of it, the
      // answer is the client's own error.
      const fault = clientFault(watch)
      if (fault !== undefined) {
        await res.dump().catch(() => undefined)
        throw fault
      }
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
    // A cut the client caused (408 too slow, gone, 413) is never counted as load by the sentinel.
    const clientCaused = watch.failure !== undefined
    if (!clientCaused && isRonError(e) && e.status >= 500) recordOutcome(s, e.status)
    audit(clientCaused || (isRonError(e) && e.status < 500) ? 'deny' : 'error', { reason: isRonError(e) ? e.code : 'Internal' })
    throw e
  } finally {
    s.uploadsActive.n--
    const n = (s.uploadsInFlight.get(found.client) ?? 1) - 1
    if (n <= 0) s.uploadsInFlight.delete(found.client)
    else s.uploadsInFlight.set(found.client, n)
  }
}

/** The client's own error when its body failed (a RonError passes as is; anything else is a 503 `Canceled`-like failure of the client). */
function clientFault(watch: BodyWatch): Error | undefined {
  const f = watch.failure
  if (f === undefined) return undefined
  return f instanceof Error ? f : new InternalError('the upload body failed', { cause: f })
}

/**
 * The `X-Expect-Address` of the upload, parsed.
 * @throws {@link MalformedError} (via `refuse`, audited) naming the header when it is not a `b3:` address
 */
function expectedAddress(ctx: RouteContext, refuse: (e: Error, reason: string) => never): Address | undefined {
  const h = ctx.req.headers['x-expect-address']
  if (h === undefined) return undefined
  try {
    if (typeof h !== 'string') throw new TypeError('repeated header')
    return parseAddress(h)
  } catch (e) {
    const err = isRonError(e) ? e : new MalformedError('X-Expect-Address must be one b3: address', { cause: e })
    err.details.field = 'X-Expect-Address'
    return refuse(err, 'Malformed')
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
      readinessPath: 'uploads',
      // The handler enforces the per-client limit; storage enforces the capability's maxBytes.
      bodyLimit: s.cfg().uploads.maxBytes,
      handler: (ctx) => handle(s, ctx),
    },
  ]
}
