/**
 * Embeds `@ron/storage` in a plain `node:http` app next to the app's own routes: everything under
 * `/o` (and the health endpoints) goes to storage, the rest is the app's. Run by `app.test.ts`;
 * run it directly (`npx tsx examples/storage-app/app.ts`) and it stores an object with a token,
 * reads it back, shows a write without a token refused, and says so.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { generateIssuerKey, signToken, type Jwks } from '@ron/core'
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

/**
 * What running the file does: the app on a free port with its objects in `dataDir` (a temporary
 * directory when absent), one object stored with a token and read back, a write without a token
 * refused. Prints each step to `out`.
 */
export async function demo(out: NodeJS.WritableStream = process.stdout, dataDir?: string): Promise<void> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'ron-storage-app-')))
  // The issuer key whose tokens storage accepts; in production, passport's key set (`auth.verifier`).
  const issuer = generateIssuerKey()
  const app = await startStorageApp({ dataDir: join(dir, 'storage'), issuerJwks: { keys: [issuer.publicJwk] } })
  try {
    out.write(`storage-app: listening on ${app.url}, objects in ${join(dir, 'storage')}\n`)
    const token = signToken(issuer, { sub: 'me', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    const put = await fetch(`${app.url}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: 'hello from an embedding app' })
    const { address } = (await put.json()) as { address: string }
    out.write(`PUT /o with a storage:write token → ${put.status} ${address}\n`)
    const back = await fetch(`${app.url}/o/${address}`)
    out.write(`GET /o/${address.slice(0, 15)}… → ${back.status} "${await back.text()}"\n`)
    const refused = await fetch(`${app.url}/o`, { method: 'PUT', body: 'no token' })
    const reason = ((await refused.json()) as { error: { code: string; details: { reason?: string } } }).error
    out.write(`PUT /o without a token → ${refused.status} ${reason.code} (${reason.details.reason ?? ''})\n`)
  } finally {
    await app.close()
    if (dataDir === undefined) await rm(dir, { recursive: true, force: true })
  }
  out.write('storage-app: closed\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await demo()
