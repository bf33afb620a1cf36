/**
 * The forgery baseline of interop: bare `node:http` doing the same HMAC check of a GitHub delivery
 * (202 when it matches, 401 with interop's error JSON when it does not). No options.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ServerFactory } from '../../lib/server-child.js'
import { readBody } from '../read-body.js'
import { SECRET } from './shared.js'

const start: ServerFactory = async () => {
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req)
      const sig = String(req.headers['x-hub-signature-256'] ?? '')
      const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`)
      const ok = sig.length === expected.length && timingSafeEqual(Buffer.from(sig), expected)
      const text = ok ? '{"accepted":true}' : '{"error":{"code":"Unauthorized","details":{"reason":"bad_signature"}}}'
      res.writeHead(ok ? 202 : 401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })().catch(() => res.destroy()) // a client gone mid-body must not crash the baseline server
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}
export default start
