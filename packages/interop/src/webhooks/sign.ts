/**
 * Builds correctly signed webhook requests, the way each provider signs them: for
 * `ron-node webhook test <provider>`, for tests and for benchmarks.
 *
 * @module
 */

import { randomUUID } from 'node:crypto'
import { hmacSha256 } from './hmac.js'
import { standardSecretKey, type WebhookProvider } from './verify.js'

/** Input of {@link signWebhook}. */
export interface SignWebhookInput {
  provider: WebhookProvider
  /** The provider secret (Standard Webhooks: `whsec_` + base64). */
  secret: string
  body: string | Uint8Array
  /** Signing time in Unix milliseconds. @default Date.now() */
  nowMs?: number
  /** Delivery id (`X-GitHub-Delivery`, `webhook-id`). @default a random UUID (`msg_…` for standard) */
  deliveryId?: string
}

/** A signed request ready to send: `POST /webhooks/<provider>` with these headers and body. */
export interface SignedWebhook {
  method: 'POST'
  path: string
  headers: Record<string, string>
  body: Uint8Array
}

/**
 * Signs `body` as `provider` would and returns the request to send to interop.
 *
 * @throws RangeError for a Standard Webhooks secret that is not base64.
 * @example
 * ```ts
 * const req = signWebhook({ provider: 'github', secret: 'It\'s a Secret to Everybody', body: '{"zen":"hi"}' })
 * await transport.request('interop', req)
 * ```
 */
export function signWebhook(input: SignWebhookInput): SignedWebhook {
  const body = typeof input.body === 'string' ? new TextEncoder().encode(input.body) : input.body
  const nowMs = input.nowMs ?? Date.now()
  const ts = String(Math.floor(nowMs / 1000))
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  switch (input.provider) {
    case 'github':
      headers['x-github-event'] = 'ping'
      headers['x-github-delivery'] = input.deliveryId ?? randomUUID()
      headers['x-hub-signature-256'] = `sha256=${hmacSha256(input.secret, body).toString('hex')}`
      break
    case 'slack':
      headers['x-slack-request-timestamp'] = ts
      headers['x-slack-signature'] = `v0=${hmacSha256(input.secret, `v0:${ts}:`, body).toString('hex')}`
      break
    case 'stripe':
      headers['stripe-signature'] = `t=${ts},v1=${hmacSha256(input.secret, `${ts}.`, body).toString('hex')}`
      break
    case 'standard': {
      const key = standardSecretKey(input.secret)
      if (key === undefined) throw new RangeError('a Standard Webhooks secret must be base64, optionally prefixed with whsec_')
      const id = input.deliveryId ?? `msg_${randomUUID().replaceAll('-', '')}`
      headers['webhook-id'] = id
      headers['webhook-timestamp'] = ts
      headers['webhook-signature'] = `v1,${hmacSha256(key, `${id}.${ts}.`, body).toString('base64')}`
      break
    }
  }
  return { method: 'POST', path: `/webhooks/${input.provider}`, headers, body }
}

/**
 * A sample payload for `provider` (a GitHub `ping`, a Slack `event_callback`, a Stripe event, a
 * Standard Webhooks event), with a fresh id so each sample is a new delivery.
 */
export function samplePayload(provider: WebhookProvider, nowMs = Date.now()): string {
  const id = randomUUID()
  switch (provider) {
    case 'github':
      return JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1, sample: id })
    case 'slack':
      return JSON.stringify({ type: 'event_callback', event_id: `Ev${id.replaceAll('-', '').slice(0, 10).toUpperCase()}`, event_time: Math.floor(nowMs / 1000), event: { type: 'app_mention', text: 'hello' } })
    case 'stripe':
      return JSON.stringify({ id: `evt_${id.replaceAll('-', '')}`, object: 'event', type: 'ping', created: Math.floor(nowMs / 1000) })
    case 'standard':
      return JSON.stringify({ type: 'ron.test', timestamp: new Date(nowMs).toISOString(), data: { sample: id } })
  }
}
