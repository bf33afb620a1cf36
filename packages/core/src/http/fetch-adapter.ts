/**
 * Conversion between the Web `Request`/`Response` pair and the host's own request/response model,
 * used only at the edge of fetch-style hosts (`handler.fetch`). Bodies stay streams both ways.
 *
 * @module
 */

import type { IncomingHttpHeaders } from 'node:http'
import { closeIterable } from './iter.js'
import type { RonRequest, RonResponse } from './types.js'

const NO_BODY: AsyncIterable<Uint8Array> = {
  [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
}

/** Wraps a Web `Request` as a {@link RonRequest} (remote address `'fetch'`). @internal */
export function fetchToRonRequest(request: Request): RonRequest {
  const u = new URL(request.url)
  const headers: IncomingHttpHeaders = {}
  request.headers.forEach((value, key) => {
    headers[key] = value
  })
  const body = request.body
  return {
    method: request.method.toUpperCase(),
    url: u.pathname + u.search,
    headers,
    body: body === null ? NO_BODY : (body as unknown as AsyncIterable<Uint8Array>),
    remoteAddress: 'fetch',
    signal: request.signal,
  }
}

/** Turns a {@link RonResponse} into a Web `Response`, streaming the body. @internal */
export function ronResponseToFetch(r: RonResponse): Response {
  const headers = new Headers()
  for (const k in r.headers) {
    const v = r.headers[k]!
    if (typeof v === 'string') headers.set(k, v)
    else for (const x of v) headers.append(k, x)
  }
  const bodiless = r.status === 204 || r.status === 304 || r.status < 200
  if (bodiless) {
    closeIterable(r.body)
    return new Response(null, { status: r.status, headers })
  }
  const it = r.body[Symbol.asyncIterator]()
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await it.next()
        if (next.done === true) controller.close()
        else controller.enqueue(next.value)
      } catch (e) {
        controller.error(e)
      }
    },
    async cancel() {
      await it.return?.()
    },
  })
  return new Response(stream, { status: r.status, headers })
}
