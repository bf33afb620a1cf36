/**
 * Baseline server: the cheapest `GET /hello` `node:http` can answer — the reply's raw header
 * list and body built once at start, each request one `writeHead(200, list)` and one `end`, no
 * routing, no method or path check. Not a server anyone would ship: it is the floor any handler
 * mounted on `node:http` sits above (fastify, the bare baseline and RON alike), printed so the
 * host's ratios can be read against what `node:http` itself costs. Options: none.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ServerFactory } from '../../lib/server-child.js'

const start: ServerFactory = async () => {
  const hello = JSON.stringify({ hello: 'world' })
  const headers = ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(hello))]
  const server = createServer((_req, res) => {
    res.writeHead(200, headers).end(hello)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
export default start
