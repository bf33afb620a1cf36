/**
 * The read baseline of the registry: bare `node:http` answering `GET /registry/head` and
 * `GET /registry/tile/0/000` with the same bytes and headers the registry answers — HEAD's `ETag`
 * and a per-response correlation id (`x-corr-id`, a counter under a random prefix, as short as the
 * registry's) included, since a server answering without them would not send the same bytes.
 * Options: `{ head, tile }` (head's JSON value, the tile in base64).
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ServerFactory } from '../../lib/server-child.js'

const start: ServerFactory = async (options) => {
  // The same bytes and headers the registry answers: HEAD's JSON, and a full tile.
  const body = JSON.stringify(options.head)
  const tile = Buffer.from(String(options.tile), 'base64')
  const etag = `"${String((options.head as { hash: unknown }).hash)}"`
  const prefix = randomBytes(4).readUInt32BE(0).toString(36).slice(0, 6)
  let n = 0
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/registry/head') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache', etag, 'x-corr-id': `${prefix}-${(++n).toString(36)}`, 'content-length': Buffer.byteLength(body) })
      res.end(body)
      return
    }
    if (req.method === 'GET' && req.url === '/registry/tile/0/000') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'public, max-age=31536000, immutable', 'x-corr-id': `${prefix}-${(++n).toString(36)}`, 'content-length': tile.length })
      res.end(tile)
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}
export default start
