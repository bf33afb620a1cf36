/**
 * Webhook signature verification for GitHub, Slack, Stripe and Standard Webhooks: over the raw
 * body bytes, HMAC-SHA256 through `node:crypto`, compared in constant time, within a replay window
 * in both directions where the scheme carries a timestamp, against every active secret of the
 * provider (rotation). Pure functions: no I/O, the time is passed in.
 *
 * @module
 */

import { createHmac } from 'node:crypto'
import { base64HmacKey, constantTimeEqual, decodeBase64Strict, decodeHex32, decodeHex32Into, hmacKey } from './hmac.js'

/** The providers interop verifies. */
export const WEBHOOK_PROVIDERS = ['github', 'slack', 'stripe', 'standard'] as const

/** One of {@link WEBHOOK_PROVIDERS}. */
export type WebhookProvider = (typeof WEBHOOK_PROVIDERS)[number]

/** Why a delivery was refused (SPEC.md §4, 401 `details.reason`). */
export type WebhookFailureReason = 'bad_signature' | 'stale_timestamp' | 'missing_header'

/** Request headers as `node:http` gives them (lower-case names); other casings are looked up too. */
export type WebhookHeaders = Readonly<Record<string, string | readonly string[] | undefined>>

/** Default replay window: 5 minutes either side of now. */
export const DEFAULT_TOLERANCE_SEC = 300

/** Input of {@link verifyWebhook}. */
export interface VerifyWebhookInput {
  provider: WebhookProvider
  /** The raw body bytes exactly as received (never re-serialised JSON). */
  body: Uint8Array
  headers: WebhookHeaders
  /**
   * Active secrets, newest first; any one verifying is enough (rotation). GitHub, Slack and
   * Stripe secrets are used as UTF-8 strings; Standard Webhooks secrets are base64, with or
   * without the `whsec_` prefix.
   */
  secrets: readonly string[]
  /** Current time in Unix milliseconds. */
  nowMs: number
  /** Replay window in seconds, applied both directions. @default 300 */
  toleranceSec?: number
  /** Check the timestamp against the window. Off when re-verifying a stored receipt. @default true */
  checkTimestamp?: boolean
}

/** A verified delivery. */
export interface WebhookAccepted {
  ok: true
  provider: WebhookProvider
  /**
   * The provider's delivery id (`X-GitHub-Delivery`, Slack `event_id`, Stripe event `id`,
   * `webhook-id`), or `sig:` + the signature header when the delivery carries none.
   */
  deliveryId: string
  /**
   * Whether the signature covers `deliveryId` (`webhook-id`, Slack `event_id` and Stripe `id` in
   * the body). `X-GitHub-Delivery` is not signed, and neither is the `sig:` fallback's spelling
   * (hex case), so a replay could change them: dedupe those deliveries by their body instead.
   */
  deliveryIdSigned: boolean
  /** The signed timestamp (seconds), for schemes that have one. */
  timestampSec: number | undefined
  /** Index in `secrets` of the secret that verified. */
  secretIndex: number
  /** The headers that make the signature re-verifiable, lower-case names, as received. */
  signatureHeaders: Record<string, string>
}

/** A refused delivery. */
export interface WebhookRejected {
  ok: false
  provider: WebhookProvider
  reason: WebhookFailureReason
  /** Human-readable detail (never contains a secret or an expected MAC). */
  message: string
}

/** Result of {@link verifyWebhook}. */
export type WebhookVerification = WebhookAccepted | WebhookRejected

/** Headers each provider signs or identifies deliveries with (kept in receipts). */
export const SIGNATURE_HEADERS: Readonly<Record<WebhookProvider, readonly string[]>> = {
  github: ['x-hub-signature-256', 'x-github-delivery', 'x-github-event'],
  slack: ['x-slack-signature', 'x-slack-request-timestamp'],
  stripe: ['stripe-signature'],
  standard: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
}

/**
 * The supported provider named `p`, as the constant string of {@link WEBHOOK_PROVIDERS}, or
 * undefined. The request path's copy is a fresh string every time; the constant's hash is
 * computed once, so the map and property lookups keyed by the provider after this cost no
 * hashing per request.
 */
export function webhookProvider(p: string | undefined): WebhookProvider | undefined {
  for (const w of WEBHOOK_PROVIDERS) if (w === p) return w
  return undefined
}

/** True when `p` names a supported provider. */
export function isWebhookProvider(p: string): p is WebhookProvider {
  return (WEBHOOK_PROVIDERS as readonly string[]).includes(p)
}

type HeaderResult = string | undefined | { duplicate: true }

function header(headers: WebhookHeaders, name: string): HeaderResult {
  let v = headers[name]
  if (v === undefined) {
    for (const [k, value] of Object.entries(headers)) {
      if (k.toLowerCase() === name) {
        v = value
        break
      }
    }
  }
  if (v === undefined) return undefined
  if (typeof v !== 'string') {
    if (v.length === 1) return v[0]
    return v.length === 0 ? undefined : { duplicate: true }
  }
  return v
}

const TIMESTAMP = /^\d{1,15}$/

function reject(provider: WebhookProvider, reason: WebhookFailureReason, message: string): WebhookRejected {
  return { ok: false, provider, reason, message }
}

/** Decodes a Standard Webhooks secret (`whsec_` + base64, or bare base64) to key bytes. */
export function standardSecretKey(secret: string): Buffer | undefined {
  const raw = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret
  const key = decodeBase64Strict(raw)
  return key === undefined || key.byteLength === 0 ? undefined : key
}

function checkWindow(provider: WebhookProvider, tsRaw: string, input: VerifyWebhookInput): WebhookRejected | number {
  if (!TIMESTAMP.test(tsRaw)) return reject(provider, 'stale_timestamp', 'timestamp is not an integer number of seconds')
  const ts = Number(tsRaw)
  if (input.checkTimestamp === false) return ts
  const tolMs = (input.toleranceSec ?? DEFAULT_TOLERANCE_SEC) * 1000
  const skew = input.nowMs - ts * 1000
  if (skew > tolMs) return reject(provider, 'stale_timestamp', 'timestamp is older than the replay window')
  if (-skew > tolMs) return reject(provider, 'stale_timestamp', 'timestamp is ahead of the replay window')
  return ts
}

/**
 * Tries each secret's MAC of `prefix` + body against each candidate signature; returns the
 * secret's index or -1. `base64Keys`: the secrets are Standard Webhooks base64 keys (one that
 * does not decode never matches). Key objects are cached per secret (see `hmacKey`); no
 * closure or generator per request.
 */
function match(candidates: readonly Uint8Array[], secrets: readonly string[], prefix: string, body: Uint8Array, base64Keys: boolean): number {
  for (let i = 0; i < secrets.length; i++) {
    const key = base64Keys ? base64HmacKey(secrets[i]!) : hmacKey(secrets[i]!)
    if (key === undefined) continue
    const h = createHmac('sha256', key)
    if (prefix !== '') h.update(prefix)
    const mac = h.update(body).digest()
    for (const c of candidates) if (constantTimeEqual(mac, c)) return i
  }
  return -1
}

function jsonField(body: Uint8Array, field: string): string | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
    if (typeof v === 'object' && v !== null) {
      const f = (v as Record<string, unknown>)[field]
      if (typeof f === 'string' && f.length > 0 && f.length <= 256) return f
    }
  } catch {
    // Not JSON (Slack slash commands are form-encoded): no event id.
  }
  return undefined
}

/** {@link SIGNATURE_HEADERS} in sorted order: receipts list them sorted, and then need no sort of their own. */
const SIGNATURE_HEADERS_SORTED: Readonly<Record<WebhookProvider, readonly string[]>> = {
  github: [...SIGNATURE_HEADERS.github].sort(),
  slack: [...SIGNATURE_HEADERS.slack].sort(),
  stripe: [...SIGNATURE_HEADERS.stripe].sort(),
  standard: [...SIGNATURE_HEADERS.standard].sort(),
}

function collect(provider: WebhookProvider, headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of SIGNATURE_HEADERS_SORTED[provider]) {
    const v = header(headers, name)
    if (typeof v === 'string') out[name] = v
  }
  return out
}

function accepted(
  input: VerifyWebhookInput,
  secretIndex: number,
  timestampSec: number | undefined,
  deliveryId: string | undefined,
  signature: string,
  deliveryIdSigned = deliveryId !== undefined,
): WebhookAccepted {
  return {
    ok: true,
    provider: input.provider,
    deliveryId: deliveryId ?? `sig:${signature}`,
    deliveryIdSigned,
    timestampSec,
    secretIndex,
    signatureHeaders: collect(input.provider, input.headers),
  }
}

function required(input: VerifyWebhookInput, names: readonly string[]): WebhookRejected | string[] {
  const out: string[] = []
  for (const n of names) {
    const v = header(input.headers, n)
    if (v === undefined || v === '') return reject(input.provider, 'missing_header', `missing header ${n}`)
    if (typeof v !== 'string') return reject(input.provider, 'bad_signature', `header ${n} appears more than once`)
    out.push(v)
  }
  return out
}

/**
 * The one candidate MAC of a GitHub or Slack delivery, decoded in place: verification is
 * synchronous, so one buffer serves every request (no allocation per forgery).
 */
const scratch: readonly Buffer[] = [Buffer.alloc(32)]

const GITHUB_HEADERS = ['x-hub-signature-256'] as const
const SLACK_HEADERS = ['x-slack-signature', 'x-slack-request-timestamp'] as const
const STRIPE_HEADERS = ['stripe-signature'] as const
const STANDARD_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const

function verifyGithub(input: VerifyWebhookInput): WebhookVerification {
  const h = required(input, GITHUB_HEADERS)
  if (!Array.isArray(h)) return h
  const sig = h[0]!
  if (!sig.startsWith('sha256=') || !decodeHex32Into(sig.slice(7), scratch[0]!)) return reject('github', 'bad_signature', 'X-Hub-Signature-256 is not sha256=<64 hex digits>')
  const i = match(scratch, input.secrets, '', input.body, false)
  if (i < 0) return reject('github', 'bad_signature', 'signature does not match any active secret')
  const delivery = header(input.headers, 'x-github-delivery')
  // X-GitHub-Delivery is outside the MAC: kept in the receipt, never trusted for dedupe.
  return accepted(input, i, undefined, typeof delivery === 'string' && delivery !== '' ? delivery : undefined, sig, false)
}

function verifySlack(input: VerifyWebhookInput): WebhookVerification {
  const h = required(input, SLACK_HEADERS)
  if (!Array.isArray(h)) return h
  const [sig, tsRaw] = h as [string, string]
  const ts = checkWindow('slack', tsRaw, input)
  if (typeof ts !== 'number') return ts
  if (!sig.startsWith('v0=') || !decodeHex32Into(sig.slice(3), scratch[0]!)) return reject('slack', 'bad_signature', 'X-Slack-Signature is not v0=<64 hex digits>')
  const i = match(scratch, input.secrets, `v0:${tsRaw}:`, input.body, false)
  if (i < 0) return reject('slack', 'bad_signature', 'signature does not match any active secret')
  return accepted(input, i, ts, jsonField(input.body, 'event_id'), sig)
}

/** Parses `t=…,v1=…,v1=…,v0=…`: the timestamp and every v1 signature. */
export function parseStripeSignature(value: string): { t: string | undefined; v1: string[] } {
  let t: string | undefined
  const v1: string[] = []
  for (const part of value.split(',')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const k = part.slice(0, eq).trim()
    const v = part.slice(eq + 1).trim()
    if (k === 't' && t === undefined) t = v
    else if (k === 'v1') v1.push(v)
  }
  return { t, v1 }
}

function verifyStripe(input: VerifyWebhookInput): WebhookVerification {
  const h = required(input, STRIPE_HEADERS)
  if (!Array.isArray(h)) return h
  const value = h[0]!
  const { t, v1 } = parseStripeSignature(value)
  if (t === undefined) return reject('stripe', 'missing_header', 'Stripe-Signature has no t= timestamp')
  const ts = checkWindow('stripe', t, input)
  if (typeof ts !== 'number') return ts
  const candidates = v1.map(decodeHex32).filter((c): c is Buffer => c !== undefined)
  if (candidates.length === 0) return reject('stripe', 'bad_signature', 'Stripe-Signature has no v1 signature')
  const i = match(candidates, input.secrets, `${t}.`, input.body, false)
  if (i < 0) return reject('stripe', 'bad_signature', 'signature does not match any active secret')
  return accepted(input, i, ts, jsonField(input.body, 'id'), value)
}

function verifyStandard(input: VerifyWebhookInput): WebhookVerification {
  const h = required(input, STANDARD_HEADERS)
  if (!Array.isArray(h)) return h
  const [id, tsRaw, sigs] = h as [string, string, string]
  const ts = checkWindow('standard', tsRaw, input)
  if (typeof ts !== 'number') return ts
  const candidates: Buffer[] = []
  for (const entry of sigs.split(' ')) {
    const comma = entry.indexOf(',')
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue
    const c = decodeBase64Strict(entry.slice(comma + 1))
    if (c !== undefined) candidates.push(c)
  }
  if (candidates.length === 0) return reject('standard', 'bad_signature', 'webhook-signature has no v1 signature')
  const i = match(candidates, input.secrets, `${id}.${tsRaw}.`, input.body, true)
  if (i < 0) return reject('standard', 'bad_signature', 'signature does not match any active secret')
  return accepted(input, i, ts, id, sigs)
}

/**
 * Verifies one delivery. Order: required headers (`missing_header`), the timestamp window
 * (`stale_timestamp`), then the MAC over the raw body against every active secret
 * (`bad_signature`). Never throws for bad input.
 *
 * @example
 * ```ts
 * const v = verifyWebhook({ provider: 'github', body, headers: req.headers, secrets: [secret], nowMs: Date.now() })
 * if (!v.ok) throw new UnauthorizedError(v.message, { details: { reason: v.reason } })
 * ```
 */
export function verifyWebhook(input: VerifyWebhookInput): WebhookVerification {
  if (input.secrets.length === 0) return reject(input.provider, 'bad_signature', 'no secret is configured for this provider')
  switch (input.provider) {
    case 'github':
      return verifyGithub(input)
    case 'slack':
      return verifySlack(input)
    case 'stripe':
      return verifyStripe(input)
    case 'standard':
      return verifyStandard(input)
  }
}
