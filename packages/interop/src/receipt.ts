/**
 * Webhook receipts: the raw body plus the signature headers, in one byte string stored in storage
 * under its BLAKE3 address. A receipt is built only from what the provider sent (no receive time,
 * no retry counters), so the same delivery always yields the same bytes and the same address: a
 * retried store is an idempotent `PUT /o`. Whoever holds the provider secret can re-verify a
 * receipt later: the HMAC is recomputed over the stored body and headers, without the replay
 * window.
 *
 * Layout: `RON-RECEIPT/1\n` + one line of JSON ({@link ReceiptHeader}) + `\n` + the raw body.
 *
 * @module
 */

import { MalformedError, addressOf, isRonError, parseAddress, throwIfError, type Address, type Transport } from '@ron/core'
import { isWebhookProvider, verifyWebhook, type WebhookProvider, type WebhookVerification } from './webhooks/verify.js'

const MAGIC = 'RON-RECEIPT/1\n'
const enc = new TextEncoder()
const MAGIC_BYTES = enc.encode(MAGIC)

/** The JSON line of a receipt. */
export interface ReceiptHeader {
  provider: WebhookProvider
  /**
   * The provider's delivery id. The dedupe store keys on it only when the signature covers it
   * (`webhook-id`, Slack `event_id`, Stripe `id`); GitHub deliveries are keyed by their body.
   */
  deliveryId: string
  /** Signature and delivery headers as received (lower-case names, sorted). */
  headers: Record<string, string>
  /** `b3:` address of the raw body. */
  bodyB3: Address
  /** Raw body length in bytes. */
  bodySize: number
}

/** A decoded receipt. */
export interface Receipt {
  header: ReceiptHeader
  body: Uint8Array
}

/** `headers` with its names in sorted order: itself when they already are (verify collects them sorted). */
function sortedHeaders(headers: Record<string, string>): Record<string, string> {
  const keys = Object.keys(headers)
  let ordered = true
  for (let i = 1; i < keys.length && ordered; i++) ordered = keys[i - 1]! < keys[i]!
  if (ordered) return headers
  const sorted: Record<string, string> = {}
  for (const k of keys.sort()) sorted[k] = headers[k]!
  return sorted
}

/**
 * Builds the receipt bytes for a verified delivery. `bodyB3`: the body's address when the caller
 * already has it (computed here otherwise; a wrong one makes a receipt that fails verification).
 */
export function encodeReceipt(provider: WebhookProvider, deliveryId: string, headers: Record<string, string>, body: Uint8Array, bodyB3: Address = addressOf(body)): Uint8Array {
  const header: ReceiptHeader = { provider, deliveryId, headers: sortedHeaders(headers), bodyB3, bodySize: body.byteLength }
  const line = `${JSON.stringify(header)}\n`
  const lineBytes = Buffer.byteLength(line, 'utf8')
  // One allocation, every byte written below: from node's pool for the usual small receipt. A
  // fresh zeroed Uint8Array per receipt (plus the encoded line's) is an ArrayBuffer of its own each
  // time, external memory that V8 counts towards its next full GC.
  const out = Buffer.allocUnsafe(MAGIC_BYTES.byteLength + lineBytes + body.byteLength)
  out.set(MAGIC_BYTES, 0)
  out.write(line, MAGIC_BYTES.byteLength, lineBytes, 'utf8')
  out.set(body, MAGIC_BYTES.byteLength + lineBytes)
  return out
}

/**
 * Parses receipt bytes and checks the body against its recorded address and size.
 * @throws {@link MalformedError} when the bytes are not a receipt or the body does not match.
 */
export function decodeReceipt(bytes: Uint8Array): Receipt {
  for (let i = 0; i < MAGIC_BYTES.byteLength; i++) {
    if (bytes[i] !== MAGIC_BYTES[i]) throw new MalformedError('not a RON receipt (bad magic)')
  }
  const nl = bytes.indexOf(0x0a, MAGIC_BYTES.byteLength)
  if (nl < 0) throw new MalformedError('not a RON receipt (no header line)')
  let raw: unknown
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(MAGIC_BYTES.byteLength, nl)))
  } catch (e) {
    throw new MalformedError('receipt header is not JSON', { cause: e })
  }
  const h = raw as Partial<ReceiptHeader>
  if (
    typeof h !== 'object' ||
    h === null ||
    typeof h.provider !== 'string' ||
    !isWebhookProvider(h.provider) ||
    typeof h.deliveryId !== 'string' ||
    typeof h.headers !== 'object' ||
    h.headers === null ||
    !Object.values(h.headers).every((v) => typeof v === 'string') ||
    typeof h.bodyB3 !== 'string' ||
    typeof h.bodySize !== 'number'
  ) {
    throw new MalformedError('receipt header lacks a field')
  }
  const body = bytes.subarray(nl + 1)
  if (body.byteLength !== h.bodySize || addressOf(body) !== parseAddress(h.bodyB3)) {
    throw new MalformedError('receipt body does not match its recorded address')
  }
  return { header: h as ReceiptHeader, body }
}

/** Result of {@link verifyReceipt}. */
export type ReceiptVerification = WebhookVerification & { receipt: ReceiptHeader }

/**
 * Re-verifies a stored receipt with the provider's secrets: the HMAC is recomputed over the
 * stored body and headers. The replay window does not apply (the receipt is old by design).
 *
 * @throws {@link MalformedError} when the bytes are not a receipt.
 * @example
 * ```ts
 * const r = verifyReceipt(bytes, ['s3cret'])
 * r.ok // true when the receipt was signed with one of the secrets
 * ```
 */
export function verifyReceipt(bytes: Uint8Array, secrets: readonly string[]): ReceiptVerification {
  const { header, body } = decodeReceipt(bytes)
  const v = verifyWebhook({ provider: header.provider, body, headers: header.headers, secrets, nowMs: 0, checkTimestamp: false })
  return { ...v, receipt: header }
}

/**
 * Fetches a receipt from storage (`GET /o/:addr` on `target`), checks that its bytes hash to
 * `address`, and re-verifies it: what `ron-node receipt verify <b3>` runs.
 *
 * @param secretsFor the active secrets of the receipt's provider (it is only known once read)
 * @throws {@link MalformedError} for a bad address or bytes that are not a receipt;
 *   {@link NotFoundError} when storage has no such object; transport errors.
 */
export async function fetchAndVerifyReceipt(
  transport: Transport,
  target: string,
  address: string,
  secretsFor: (provider: WebhookProvider) => readonly string[],
  opts: { signal?: AbortSignal; timeoutMs?: number; token?: string } = {},
): Promise<ReceiptVerification> {
  const addr = parseAddress(address)
  const res = await transport.request(target, {
    method: 'GET',
    path: `/o/${addr}`,
    ...(opts.token === undefined ? {} : { headers: { authorization: `Bearer ${opts.token}` } }),
    ...(opts.signal === undefined ? {} : { signal: opts.signal }),
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  })
  await throwIfError(res)
  const bytes = await res.bytes()
  if (addressOf(bytes) !== addr) throw new MalformedError('stored bytes do not hash to the requested address', { details: { address: addr } })
  try {
    const { header } = decodeReceipt(bytes)
    return verifyReceipt(bytes, secretsFor(header.provider))
  } catch (e) {
    if (isRonError(e)) throw e
    throw new MalformedError('not a receipt', { cause: e })
  }
}
