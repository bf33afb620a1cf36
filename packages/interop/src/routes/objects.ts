/**
 * `GET|HEAD /o/:addr`: an object's raw bytes, read through the gateway's reader — this node's
 * storage first, then a provider index names (SPEC §6a: only the storage URL of a known node;
 * without a node directory, only a transport target name), whose bytes are verified whole before
 * any is sent. Reads keep working during brownout and do not take a `work` slot.
 *
 * What is sent back is typed by us, never by the provider: a raw object has no manifest, so it is
 * `application/octet-stream`, with `X-Content-Type-Options: nosniff` so no browser guesses a type
 * from the bytes. `ETag` is the address, answers are immutable, `If-None-Match` and `Range` work.
 *
 * @module
 */

import { DEFAULT_MEDIA_TYPE, parseAddress, type Route } from '@ron/core'
import type { ObjectReader } from '../gateway/reader.js'
import { serveObject } from '../gateway/serve.js'

export { fetchableEndpoint } from '../gateway/reader.js'

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/** The read routes, GET and HEAD (public, not queued: reads stay up in brownout). */
export function objectRoutes(reader: ObjectReader): Route[] {
  return (['GET', 'HEAD'] as const).map((method) => ({
    method,
    path: '/o/:addr',
    name: `${method} /o/:addr`,
    readinessPath: 'reads',
    handler: (ctx) =>
      serveObject(reader, {
        address: parseAddress(ctx.params.addr ?? ''),
        type: DEFAULT_MEDIA_TYPE,
        method,
        status: 200,
        cacheControl: 'public, max-age=31536000, immutable',
        headers: { range: header(ctx.req.headers.range), 'if-none-match': header(ctx.req.headers['if-none-match']) },
        signal: ctx.signal,
        corrId: ctx.corrId,
      }),
  }))
}
