/**
 * RON's host answering `GET /bytes` with a byte body (a `Uint8Array` reply, not `json`): the
 * shape of a registry tile, an entry view or a small stored object. Options: `size` (bytes,
 * default 1024) and `mode` as in `hello.ts` (`'handler'` or the default full service).
 * `baselines/bare-bytes.ts` serves the same bytes on bare `node:http`.
 */
import type { ServerFactory } from '../../lib/server-child.js'
import { serveOnCore } from './host.js'

const start: ServerFactory = (options) => {
  const size = options.size === undefined ? 1024 : Number(options.size)
  const body = new Uint8Array(size)
  for (let i = 0; i < size; i++) body[i] = i & 0xff
  const headers = { 'content-type': 'application/octet-stream', 'cache-control': 'public, max-age=31536000, immutable' }
  return serveOnCore([{ method: 'GET' as const, path: '/bytes', handler: () => ({ status: 200, headers, body }) }], options.mode)
}
export default start
