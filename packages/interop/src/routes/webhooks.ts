/**
 * `POST /webhooks/:provider`: brownout and rate checks, raw body, signature verification and dedupe
 * at the edge; then the receipt store runs on the `work` queue and the answer waits for it (up to
 * `ackDeadlineMs`): `202 {accepted, receipt}` only once the receipt is stored.
 *
 * @module
 */

import {
  NotFoundError,
  NotReadyError,
  TimeoutError,
  addressOf,
  errorFromResponse,
  isRonError,
  withDeadline,
  type Address,
  type Reply,
  type Route,
  type RouteContext,
} from '@ron/core'
import { latencyBucket } from '../audit.js'
import { encodeReceipt } from '../receipt.js'
import type { InteropConfig } from '../config.js'
import { verifyWebhook, webhookProvider, type WebhookAccepted, type WebhookFailureReason, type WebhookProvider, type WebhookRejected } from '../webhooks/verify.js'
import { admitWrite, recordOutcome, type InteropContext } from './context.js'

const ENDPOINT = 'POST /webhooks/:provider'

/** Stores receipt bytes in storage: an idempotent, content-addressed `PUT /o` (retried safely). */
export async function storeReceipt(s: InteropContext, bytes: Uint8Array, signal: AbortSignal, corrId?: string): Promise<Address> {
  const cfg = s.cfg()
  const expected = addressOf(bytes)
  const token = await s.tokens.token({ aud: cfg.storageAudience, scope: ['storage:write'] }, signal)
  let res
  try {
    res = await s.upstreams.call(cfg.storage.target, {
      op: 'storage.put',
      method: 'PUT',
      path: '/o',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'x-expect-address': expected },
      body: bytes,
      timeoutMs: cfg.storage.timeoutMs,
      // Content-addressed with the bytes in hand: a repeated store is a no-op, so retries are safe.
      idempotent: true,
      signal,
      ...(corrId === undefined ? {} : { corrId }),
    })
  } catch (e) {
    // A storage failure is a 503 to the provider (retry later), never a 500 of ours.
    if (isRonError(e, 'Internal')) throw new NotReadyError('storage failed to store the receipt', { details: { upstream: 'storage' }, cause: e, retryAfterMs: 1000 })
    throw e
  }
  if (res.status >= 400) {
    const err = await errorFromResponse(res)
    // Storage refusing interop's own write is interop's problem, not the provider's request.
    throw new NotReadyError(`storage refused the receipt: ${err.code}`, { details: { upstream: 'storage', code: err.code }, cause: err, retryAfterMs: 1000 })
  }
  // Storage answering oddly is storage failing: a 503 to the provider (retry later), never a 500.
  let out: { address?: unknown }
  try {
    out = await res.json<{ address?: unknown }>()
  } catch (e) {
    if (signal.aborted) throw e
    throw new NotReadyError('storage answered the receipt store without JSON', { details: { upstream: 'storage' }, cause: e, retryAfterMs: 1000 })
  }
  if (out.address !== expected) {
    throw new NotReadyError('storage stored the receipt under another address', { details: { upstream: 'storage', expected, got: String(out.address) }, retryAfterMs: 1000 })
  }
  return expected
}

async function handle(s: InteropContext, ctx: RouteContext): Promise<Reply> {
  const started = s.clock.now()
  const provider = webhookProvider(ctx.params.provider)
  const cfg = s.cfg()
  const secrets = provider === undefined ? undefined : s.secrets(provider)
  if (provider === undefined || secrets === undefined) {
    const name = ctx.params.provider ?? ''
    throw new NotFoundError(`no webhook provider '${name}' is configured`, { details: { provider: name } })
  }
  admitWrite(s, ENDPOINT)
  // A delivery is acknowledged only once its dedupe record is durable: while the local disk
  // refuses that, refuse the delivery before reading it (the provider retries later).
  const fault = s.journal?.fault
  if (fault !== undefined) throw new NotReadyError(`webhook dedupe not writable: ${fault}`, { details: { reason: fault }, retryAfterMs: 1000 })
  const body = await ctx.bytes()
  const v = verifyWebhook({ provider, body, headers: ctx.req.headers, secrets, nowMs: s.clock.now(), toleranceSec: cfg.webhooks.toleranceSec })
  s.verifyCounter.inc(provider, v.ok ? 'ok' : v.reason)
  // The refusal path is the hot path under attack: a plain function with no closure, no hash
  // (the audit sink task computes the payload's b3: address, see AuditLog.emit) and no queue hop.
  // The accepted path's closures and state live in their own function, so a refusal never
  // allocates them.
  return v.ok ? accept(s, ctx, cfg, provider, body, v, started) : refuse(s, ctx, provider, body, v, started)
}

/** Answers a refused delivery: 401, the UnauthorizedError envelope, one audit event. */
function refuse(s: InteropContext, ctx: RouteContext, provider: WebhookProvider, body: Uint8Array, v: WebhookRejected, started: number): Reply {
  s.audit.emit({ kind: 'webhook', provider, requestId: ctx.corrId, decision: 'deny', reason: v.reason, latency: latencyBucket(s.clock.now() - started) }, body)
  // Answered rather than thrown: an Error's stack capture is most of its cost.
  return { status: 401, headers: JSON_TYPE, body: refusalBody(v.message, ctx.corrId, v.reason, provider) }
}

/** A verified delivery: dedupe, then the receipt stored on the work queue, answered once stored. */
async function accept(s: InteropContext, ctx: RouteContext, cfg: InteropConfig, provider: WebhookProvider, body: Uint8Array, v: WebhookAccepted, started: number): Promise<Reply> {
  const payloadB3 = addressOf(body)
  const audit = (decision: 'accept' | 'duplicate' | 'error', extra: { reason?: string; receipt?: string } = {}): void => {
    s.audit.emit({ kind: 'webhook', provider, requestId: ctx.corrId, payloadB3, decision, latency: latencyBucket(s.clock.now() - started), ...extra })
  }
  // Dedupe on what the signature covers: a replay may change anything else (GitHub's delivery
  // header, the hex case of a MAC). Without a signed id, the verified body is the delivery.
  const key = v.deliveryIdSigned ? `${provider}:${v.deliveryId}` : `${provider}:body:${payloadB3}`
  // Slack checks a request URL by sending a signed url_verification and accepts it only if the
  // answer is a 200 echoing the challenge: stored like any delivery, then echoed.
  const challenge = provider === 'slack' ? slackChallenge(body) : undefined
  const acked = (status: 200 | 202, receipt: Address, extra: { duplicate?: true } = {}): Reply =>
    challenge === undefined ? { status, json: { accepted: true, receipt, ...extra } } : { status: 200, json: { accepted: true, receipt, ...extra, challenge } }
  const duplicate = (receipt: Address): Reply => {
    audit('duplicate', { receipt })
    return acked(200, receipt, { duplicate: true })
  }
  const hit = s.dedupe.lookup(key)
  if (hit.kind === 'stored') return duplicate(hit.receipt)
  const deadlineMs = cfg.webhooks.ackDeadlineMs
  try {
    if (hit.kind === 'pending') {
      return duplicate(await withDeadline(deadlineMs, () => hit.receipt, { clock: s.clock, op: 'webhook.ack', metrics: s.metrics }))
    }
    const bytes = encodeReceipt(provider, v.deliveryId, v.signatureHeaders, body, payloadB3)
    const receipt = await withDeadline(
      deadlineMs,
      (signal) =>
        s.dedupe.track(
          key,
          s.pool.submit(async (jobSignal) => {
            const address = await storeReceipt(s, bytes, jobSignal, ctx.corrId)
            audit('accept', { receipt: address })
            s.events.publish({ type: 'webhook:accepted', provider, deliveryId: v.deliveryId, receipt: address })
            return address
          }, signal),
        ),
      // Not the request's signal: a provider hanging up does not cancel the store (its retry then
      // finds the receipt stored: 200, same receipt), the deadline bounds the slot, and no
      // per-request AbortController is created.
      { clock: s.clock, op: 'webhook.ack', metrics: s.metrics },
    )
    recordOutcome(s, 202)
    return acked(202, receipt)
  } catch (e) {
    if (isRonError(e, 'Busy')) throw e // 429: the queue is full; not the upstream's fault
    if (isRonError(e, 'Timeout')) {
      recordOutcome(s, 504)
      audit('error', { reason: 'Timeout' })
      const err = new TimeoutError(`the receipt was not stored within ${deadlineMs} ms; retry the delivery`, {
        details: { op: 'webhook.ack', provider },
        retryAfterMs: 1000,
        cause: e,
      })
      // Answered rather than thrown: the host sets Retry-After only on 429/503, and the provider
      // should be told when to retry this 504 as well.
      return { status: 504, headers: { 'retry-after': '1' }, json: err.toEnvelope(ctx.corrId) }
    }
    if (isRonError(e) && e.status >= 500) recordOutcome(s, e.status)
    audit('error', { reason: isRonError(e) ? e.code : 'Internal' })
    throw e
  }
}

const JSON_TYPE = { 'content-type': 'application/json' } as const

/** Most refusal messages whose envelope text is kept per provider and reason (verify's messages are a short fixed list). */
const REFUSAL_CACHE_MAX = 64
/** The envelope text around the correlation id, by provider, reason and message (no key string built per request). */
const refusalParts = new Map<WebhookProvider, Map<WebhookFailureReason, Map<string, readonly [string, string]>>>()

/**
 * The 401 envelope of a refused delivery (the same as `UnauthorizedError`'s), written as text:
 * `reason` and `provider` come from fixed lists, the message and the correlation id are escaped.
 * The text around the correlation id is built once per provider, reason and message.
 */
export function refusalBody(message: string, corrId: string, reason: WebhookFailureReason, provider: WebhookProvider): string {
  let byReason = refusalParts.get(provider)
  if (byReason === undefined) {
    byReason = new Map()
    refusalParts.set(provider, byReason)
  }
  let byMessage = byReason.get(reason)
  if (byMessage === undefined) {
    byMessage = new Map()
    byReason.set(reason, byMessage)
  }
  let parts = byMessage.get(message)
  if (parts === undefined) {
    if (byMessage.size >= REFUSAL_CACHE_MAX) byMessage.clear()
    parts = [
      `{"error":{"code":"Unauthorized","message":${JSON.stringify(`webhook refused: ${message}`)},"retryable":false,"corr_id":`,
      `,"details":{"reason":"${reason}","provider":"${provider}"}}}`,
    ]
    byMessage.set(message, parts)
  }
  return parts[0] + JSON.stringify(corrId) + parts[1]
}

/** Envelope texts cached by {@link refusalBody}, all providers and reasons (for tests). @internal */
export function refusalCacheSize(): number {
  let n = 0
  for (const byReason of refusalParts.values()) for (const byMessage of byReason.values()) n += byMessage.size
  return n
}

/** The `challenge` of a Slack `url_verification` body, if it is one. */
function slackChallenge(body: Uint8Array): string | undefined {
  if (body.byteLength > 4096) return undefined
  try {
    const v = JSON.parse(new TextDecoder().decode(body)) as unknown
    if (typeof v !== 'object' || v === null) return undefined
    const { type, challenge } = v as { type?: unknown; challenge?: unknown }
    return type === 'url_verification' && typeof challenge === 'string' && challenge.length <= 512 ? challenge : undefined
  } catch {
    return undefined
  }
}

/** The webhook route. Verification runs on the listener; only verified deliveries take a queue slot. */
export function webhookRoutes(s: InteropContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/webhooks/:provider',
      name: ENDPOINT,
      // Authenticated by the provider's signature, not a bearer token.
      public: true,
      readinessPath: 'webhooks',
      bodyLimit: s.cfg().webhooks.maxBodyBytes,
      handler: (ctx) => handle(s, ctx),
    },
  ]
}
