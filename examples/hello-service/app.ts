/**
 * Embedding a RON service in a plain `node:http` app: the app owns the server and its own routes,
 * and hands everything under `/hello-svc/` to the service's `handle` (with the prefix stripped).
 *
 * Run it: `npx tsx examples/hello-service/app.ts` (port from `PORT`, default 8080).
 *
 * @module
 */

import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import type { RonService } from '@ron/core'
import { createHelloService, type HelloConfig } from './hello-service.js'

/** The path prefix the service is mounted under. */
export const PREFIX = '/hello-svc'

/** A running app. */
export interface App {
  readonly server: http.Server
  readonly service: RonService
  readonly url: string
  close(): Promise<void>
}

/** Starts the app on `port` (0 = any free port). */
export async function startApp(port = 0, config: HelloConfig = {}): Promise<App> {
  const service = await createHelloService(config)
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/'
    if (url === PREFIX || url.startsWith(`${PREFIX}/`) || url.startsWith(`${PREFIX}?`)) {
      req.url = url.slice(PREFIX.length) || '/'
      service.handle(req, res)
      return
    }
    if (url === '/') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`an app that embeds a RON service under ${PREFIX}/\n`)
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port: bound } = server.address() as AddressInfo
  let closing: Promise<void> | undefined
  return {
    server,
    service,
    url: `http://127.0.0.1:${bound}`,
    close() {
      closing ??= (async () => {
        await service.close() // stop intake and drain first, then the sockets
        server.closeIdleConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      })()
      return closing
    },
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const app = await startApp(Number(process.env.PORT ?? 8080))
  process.stdout.write(`listening on ${app.url} (try ${app.url}${PREFIX}/hello)\n`)
  const stop = (): void => void app.close().then(() => process.exit(0))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
