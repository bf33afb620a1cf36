/**
 * Baseline server: `serve-handler` (Vercel's static file handler behind `node:http`), serving
 * `<dir>` so `GET /o/<name>` is the file `<dir>/o/<name>`, with its Range and ETag support.
 * Options: `{ dir }`.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import serveHandler from 'serve-handler'
import type { ServerFactory } from '../../lib/server-child.js'

const start: ServerFactory = async (options) => {
  const dir = String(options.dir)
  const server = createServer((req, res) => {
    void serveHandler(req, res, { public: dir, directoryListing: false, etag: true })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}
export default start
