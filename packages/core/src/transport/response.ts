/**
 * The {@link TransportResponse} both transports return, and {@link throwIfError} / {@link expectOk}
 * that turn an error response back into the typed error the server threw.
 *
 * @module
 */

import { collectBytes } from '../bytes.js'
import { errorFromEnvelope, type RonError } from '../errors.js'
import type { TransportResponse } from './types.js'

/** Options of {@link StreamResponse}. */
export interface StreamResponseInit {
  status: number
  headers: Record<string, string>
  body: AsyncIterable<Uint8Array>
  /** Discards the rest of the body and releases what backs it. @default iterate to the end */
  dump?: () => Promise<void>
}

/**
 * A {@link TransportResponse} over a stream of chunks. The body can be consumed once: by iterating
 * `body`, or through `bytes()`/`text()`/`json()`/`dump()`.
 */
export class StreamResponse implements TransportResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: AsyncIterable<Uint8Array>
  readonly #dump: (() => Promise<void>) | undefined

  constructor(init: StreamResponseInit) {
    this.status = init.status
    this.headers = init.headers
    this.body = init.body
    this.#dump = init.dump
  }

  /** The whole body as bytes. */
  async bytes(): Promise<Uint8Array> {
    return collectBytes(this.body)
  }

  /** The whole body decoded as UTF-8. */
  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytes())
  }

  /** The whole body parsed as JSON. */
  async json<T = unknown>(): Promise<T> {
    return JSON.parse(await this.text()) as T
  }

  /** Discards the rest of the body. */
  async dump(): Promise<void> {
    if (this.#dump !== undefined) return this.#dump()
    for await (const _ of this.body) {
      // discard
    }
  }
}

/** `Retry-After` (delta seconds or an HTTP date) in ms, or undefined. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value === '') return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * Reads an error response (status >= 400) and returns the typed error of its envelope, with
 * `retryAfterMs` from `Retry-After`. Consumes the body.
 */
export async function errorFromResponse(res: TransportResponse): Promise<RonError> {
  let body: unknown
  try {
    const text = await res.text()
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return errorFromEnvelope(res.status, body, parseRetryAfter(res.headers['retry-after']))
}

/**
 * Throws the typed error carried by an error response (status >= 400); does nothing otherwise
 * (the body is left unread for the caller).
 * @throws the {@link RonError} subclass named by the envelope's `code` (e.g. {@link BusyError} with `retryAfterMs`)
 * @example
 * ```ts
 * const res = await transport.request('storage', { method: 'GET', path: `/o/${addr}` })
 * await throwIfError(res)
 * const bytes = await res.bytes()
 * ```
 */
export async function throwIfError(res: TransportResponse): Promise<void> {
  if (res.status < 400) return
  throw await errorFromResponse(res)
}

/**
 * Returns `res` when its status is below 400, else throws its typed error (see {@link throwIfError}).
 * @throws the {@link RonError} of the envelope
 */
export async function expectOk(res: TransportResponse): Promise<TransportResponse> {
  await throwIfError(res)
  return res
}
