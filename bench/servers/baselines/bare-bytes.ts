/**
 * Baseline for `core/bytes.ts`: bare `node:http` answering `GET /bytes` with the same bytes and
 * headers (a Buffer body, as a bare server holding bytes would send it). Option: `size` (bytes,
 * default 1024).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ServerFactory } from '../../lib/server-child.js'

const start: ServerFactory = async (options) => {
  const size = options.size === undefined ? 1024 : Number(options.size)
  const body = Buffer.alloc(size)
  for (let i = 0; i < size; i++) body[i] = i & 0xff
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/bytes') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length, 'cache-control': 'public, max-age=31536000, immutable' })
      res.end(body)
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}
export default start
