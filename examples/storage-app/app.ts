/**
 * Embeds `@ron/storage` in a plain `node:http` app next to the app's own routes: everything under
 * `/o` (and the health endpoints) goes to storage, the rest is the app's. Run by `app.test.ts`.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Jwks } from '@ron/core'
import { createStorageService, type StorageService } from '@ron/storage'

export interface StorageApp {
  url: string
  storage: StorageService
  close(): Promise<void>
}

/** Starts the app on `port` (0 = any free port) with objects under `dataDir`. */
export async function startStorageApp(opts: { dataDir: string; issuerJwks: Jwks; port?: number }): Promise<StorageApp> {
  const storage = await createStorageService({ dataDir: opts.dataDir, auth: { keys: opts.issuerJwks } })
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/'
    if (path.startsWith('/o') || path === '/healthz' || path === '/readyz') return storage.handle(req, res)
    if (path === '/') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('my app\n')
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    storage,
    async close() {
      // Storage first: readiness flips, in-flight requests drain, then the socket closes.
      await storage.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
