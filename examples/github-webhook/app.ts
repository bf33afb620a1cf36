/**
 * A GitHub webhook receiver in a plain `node:http` app: `@ron/interop` verifies each delivery's
 * `X-Hub-Signature-256` and stores it as a content-addressed receipt in an embedded
 * `@ron/storage`; passport mints the service token interop writes with and storage verifies it.
 * Routes: `POST /webhooks/github` → interop (202 with the receipt address), `GET /o/<b3>` →
 * storage (public reads: anyone can fetch and re-verify a receipt), `/` → the app. Run by
 * `app.test.ts`; run it directly (`npx tsx examples/github-webhook/app.ts`) and it receives a
 * delivery signed as GitHub signs them, re-verifies the stored receipt, refuses a forged one, and
 * says so.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { HttpTransport, MemoryTransport, createTokenProvider, createTokenVerifier } from '@ron/core'
import { createInteropService, fetchAndVerifyReceipt, samplePayload, signWebhook } from '@ron/interop'
import { createPassportService, passportMinter } from '@ron/passport'
import { createStorageService } from '@ron/storage'

/** A running receiver. */
export interface WebhookApp {
  /** `http://127.0.0.1:<port>`: point GitHub's Payload URL at `<url>/webhooks/github` (behind TLS). */
  url: string
  close(): Promise<void>
}

/** Options of {@link startWebhookApp}. */
export interface WebhookAppOptions {
  /** The webhook secret set on GitHub; several during a rotation (newest first). */
  githubSecrets: string[]
  /** Receipts on disk here; memory when absent. */
  dataDir?: string
  /** 0 = any free port. @default 0 */
  port?: number
}

/** Starts passport, storage and interop in process and serves them with the app's own route. */
export async function startWebhookApp(opts: WebhookAppOptions): Promise<WebhookApp> {
  // The services talk to each other over an in-process transport; only the app's socket is public.
  const transport = new MemoryTransport()
  const passport = await createPassportService({ policy: { callers: { 'node:webhooks': { scopes: ['storage:write'], audiences: ['storage'] } } } }, transport)
  transport.mount('passport', passport)
  const verifier = createTokenVerifier({ keys: passport.keys, revocations: passport.revocations })
  const tokens = createTokenProvider({ minter: passportMinter(passport, { sub: 'node:webhooks' }) })
  const storage = await createStorageService({ ...(opts.dataDir === undefined ? {} : { dataDir: opts.dataDir }), auth: { verifier } }, transport)
  transport.mount('storage', storage)
  const interop = await createInteropService({ amnesia: true, webhooks: { providers: { github: { secrets: opts.githubSecrets } } } }, transport, { tokens })
  transport.mount('interop', interop)

  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/'
    if (path === '/webhooks/github') return interop.handle(req, res)
    if (path.startsWith('/o/')) return storage.handle(req, res)
    if (path === '/') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('webhook receiver\n')
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      // Interop first (it writes to storage), then storage, then the token machinery, then the socket.
      await interop.close()
      await storage.close()
      tokens.close()
      await passport.close()
      await transport.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** What running the file does (see the module comment), printed to `out`. */
export async function demo(out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const secret = process.env['GITHUB_WEBHOOK_SECRET'] ?? "It's a Secret to Everybody"
  const app = await startWebhookApp({ githubSecrets: [secret] })
  const transport = new HttpTransport({ targets: { app: app.url } })
  try {
    out.write(`github-webhook: listening on ${app.url} (Payload URL: ${app.url}/webhooks/github)\n`)
    const delivery = signWebhook({ provider: 'github', secret, body: samplePayload('github') })
    const res = await fetch(`${app.url}${delivery.path}`, { method: 'POST', headers: delivery.headers, body: Buffer.from(delivery.body) })
    const { receipt } = (await res.json()) as { receipt: string }
    out.write(`POST ${delivery.path} signed with the secret → ${res.status}, receipt ${receipt}\n`)
    const v = await fetchAndVerifyReceipt(transport, 'app', receipt, () => [secret])
    out.write(`the stored receipt re-verifies with the secret: ${v.ok ? 'yes' : 'no'}\n`)
    const forged = signWebhook({ provider: 'github', secret: 'a guess', body: samplePayload('github') })
    const refused = await fetch(`${app.url}${forged.path}`, { method: 'POST', headers: forged.headers, body: Buffer.from(forged.body) })
    const e = ((await refused.json()) as { error: { code: string; details: { reason?: string } } }).error
    out.write(`a delivery signed with another secret → ${refused.status} ${e.code} (${e.details.reason ?? ''}), nothing stored\n`)
  } finally {
    await transport.close()
    await app.close()
  }
  out.write('github-webhook: closed\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await demo()
