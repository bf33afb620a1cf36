/**
 * The registry's `GET /registry/head` reply served by `@ron/core` alone, without the registry: the
 * same frozen reply (HEAD's JSON, `content-type`, `cache-control`, `etag`) from one route, through
 * `createHttpHandler` + `serve` (option `mode: 'handler'`, the HTTP pipeline) or a
 * `createServiceHost` service on its defaults (any other `mode`: built-ins, metrics, per-IP
 * admission, drain checks). `tools/read-split.ts` puts the two between bare `node:http` and the
 * registry to show which layer a read's time goes to. Options: `{ head, mode }`.
 */
import type { Reply } from '@ron/core'
import type { ServerFactory } from '../../lib/server-child.js'
import { serveOnCore } from '../core/host.js'

const start: ServerFactory = (options) => {
  const body = JSON.stringify(options.head)
  const etag = `"${String((options.head as { hash: unknown }).hash)}"`
  const ok: Reply = Object.freeze({ status: 200, headers: Object.freeze({ 'content-type': 'application/json', 'cache-control': 'no-cache', etag }), body })
  return serveOnCore([{ method: 'GET', path: '/registry/head', handler: () => ok }], options.mode)
}
export default start
