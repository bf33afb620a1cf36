/**
 * `createInteropClient(transport, options)`: the typed client of interop's HTTP API, plus the
 * helper behind `ron-node webhook test <provider>`.
 *
 * @module
 */

import { throwIfError, type TransportResponse, type Transport } from '@ron/core'
import { samplePayload, signWebhook, type SignedWebhook } from './webhooks/sign.js'
import type { WebhookProvider } from './webhooks/verify.js'

/** Options of {@link createInteropClient}. */
export interface InteropClientOptions {
  /** Transport target of interop: a mounted name or a base URL. @default 'interop' */
  target?: string
  /** API key for `put` (sent as `X-Api-Key`). */
  apiKey?: string
  /** Deadline of each call. @default 10000 */
  timeoutMs?: number
}

/** Answer of a webhook delivery. */
export interface WebhookAck {
  /** 202 (stored now) or 200 (a duplicate of a stored delivery). */
  status: number
  accepted: true
  /** `b3:` address of the stored receipt. */
  receipt: string
  duplicate?: boolean
}

/** The interop client. */
export interface InteropClient {
  /**
   * Sends a signed delivery.
   * @throws the typed error of the answer (`UnauthorizedError` with `details.reason`, `BusyError`,
   *   `BrownoutError`, `TimeoutError`…)
   */
  deliver(webhook: SignedWebhook, opts?: { signal?: AbortSignal }): Promise<WebhookAck>
  /**
   * Signs a sample payload for `provider` with `secret` and delivers it: `ron-node webhook test`.
   * @throws as {@link InteropClient.deliver}
   */
  sendTestWebhook(provider: WebhookProvider, secret: string, opts?: { signal?: AbortSignal; nowMs?: number }): Promise<WebhookAck & { deliveryId: string | undefined }>
  /**
   * Uploads `body` with the configured API key.
   * @throws `UnauthorizedError` without a valid key, `OverLimitError`, `BrownoutError`…
   */
  put(body: string | Uint8Array | AsyncIterable<Uint8Array>, opts?: { signal?: AbortSignal; contentLength?: number }): Promise<{ address: string; size: number }>
  /** Reads an object through interop (streaming; consume or dump the body). @throws `NotFoundError` */
  get(address: string, opts?: { signal?: AbortSignal }): Promise<TransportResponse>
}

/**
 * Creates a client of interop's HTTP API over any transport.
 * @example
 * ```ts
 * const client = createInteropClient(transport, { target: 'http://127.0.0.1:7705', apiKey })
 * const { address } = await client.put('hello')
 * const ack = await client.sendTestWebhook('github', process.env.GITHUB_WEBHOOK_SECRET!)
 * console.log(ack.receipt)
 * ```
 */
export function createInteropClient(transport: Transport, options: InteropClientOptions = {}): InteropClient {
  const target = options.target ?? 'interop'
  const timeoutMs = options.timeoutMs ?? 10_000
  const sig = (signal: AbortSignal | undefined): { signal?: AbortSignal } => (signal === undefined ? {} : { signal })

  const deliver = async (webhook: SignedWebhook, opts: { signal?: AbortSignal } = {}): Promise<WebhookAck> => {
    const res = await transport.request(target, { method: webhook.method, path: webhook.path, headers: webhook.headers, body: webhook.body, timeoutMs, ...sig(opts.signal) })
    await throwIfError(res)
    const out = await res.json<{ accepted: true; receipt: string; duplicate?: boolean }>()
    return { status: res.status, ...out }
  }

  return {
    deliver,
    async sendTestWebhook(provider, secret, opts = {}) {
      const nowMs = opts.nowMs ?? Date.now()
      const w = signWebhook({ provider, secret, body: samplePayload(provider, nowMs), nowMs })
      const ack = await deliver(w, opts)
      return { ...ack, deliveryId: w.headers['x-github-delivery'] ?? w.headers['webhook-id'] }
    },
    async put(body, opts = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/octet-stream' }
      if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey
      if (opts.contentLength !== undefined) headers['content-length'] = String(opts.contentLength)
      const res = await transport.request(target, { method: 'POST', path: '/put', headers, body, timeoutMs, ...sig(opts.signal) })
      await throwIfError(res)
      return res.json<{ address: string; size: number }>()
    },
    async get(address, opts = {}) {
      const res = await transport.request(target, { method: 'GET', path: `/o/${address}`, timeoutMs, ...sig(opts.signal) })
      await throwIfError(res)
      return res
    },
  }
}
