/**
 * The in-process edge: turns an {@link Exchange} into a {@link RonResponse} whose body is a stream
 * of chunks. The exchange finishes (worker slot, admission, metrics) when the caller has consumed
 * the body, stopped iterating it, or — for buffered and bodiless replies — at once.
 *
 * @module
 */

import { CORR_ID_HEADER } from './corr-id.js'
import type { Exchange } from './exchange.js'
import { closeIterable, closeIterator, once } from './iter.js'
import type { RonResponse } from './types.js'

const EMPTY: AsyncIterable<Uint8Array> = {
  [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
}

/** Builds the in-process response for a completed pipeline. @internal */
export function toRonResponse(ex: Exchange): RonResponse {
  const headers: Record<string, string | string[]> = {}
  const cors = ex.cors
  if (cors !== undefined) for (const k in cors) headers[k] = cors[k]!
  const h = ex.replyHeaders
  if (h !== undefined) {
    for (const k in h) {
      const v = h[k]!
      headers[k.toLowerCase()] = typeof v === 'number' ? String(v) : typeof v === 'string' ? v : [...v]
    }
  }
  headers[CORR_ID_HEADER] = ex.corrId
  if (ex.contentType !== undefined) headers['content-type'] = ex.contentType
  if (ex.retryAfter !== undefined) headers['retry-after'] = String(ex.retryAfter)
  if (ex.allow !== undefined) headers.allow = ex.allow
  const body = ex.body
  let out: AsyncIterable<Uint8Array> = EMPTY
  if (typeof body === 'string' || body instanceof Uint8Array) {
    const buf = typeof body === 'string' ? Buffer.from(body) : body
    headers['content-length'] = String(buf.byteLength)
    if (!ex.suppressBody && buf.byteLength > 0) out = once(buf)
    ex.finish()
  } else if (body === undefined) {
    if (!ex.suppressBody) headers['content-length'] = '0'
    ex.finish()
  } else if (ex.suppressBody) {
    closeIterable(body)
    ex.finish()
  } else {
    out = new TrackedBody(body, ex)
  }
  return { status: ex.status, headers, body: out }
}


/**
 * A streamed body that finishes its exchange when iteration ends for any reason. Not a generator:
 * a generator's `finally` never runs when `return()` is called before the first `next()`.
 */
class TrackedBody implements AsyncIterable<Uint8Array>, AsyncIterator<Uint8Array> {
  private it: AsyncIterator<Uint8Array> | undefined = undefined
  private done = false

  constructor(
    private readonly source: AsyncIterable<Uint8Array>,
    private readonly ex: Exchange,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this
  }

  async next(): Promise<IteratorResult<Uint8Array>> {
    if (this.done) return { done: true, value: undefined }
    this.it ??= this.source[Symbol.asyncIterator]()
    try {
      const r = await this.it.next()
      if (r.done === true) this.end()
      return r
    } catch (e) {
      this.end()
      throw e
    }
  }

  return(): Promise<IteratorResult<Uint8Array>> {
    if (!this.done) {
      closeIterator(this.it ?? this.source[Symbol.asyncIterator]())
      this.end()
    }
    return Promise.resolve({ done: true, value: undefined })
  }

  private end(): void {
    this.done = true
    this.ex.finish()
  }
}
