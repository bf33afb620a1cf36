/**
 * The whole RON mesh in one process on a MemoryTransport, wired the way `ron-node` wires it:
 * passport first; every service verifies with passport's keys and revocations; service tokens are
 * minted by passport through core's token provider; storage announces to index; interop calls
 * storage, passport and index. Run by `mesh.test.ts`; run it directly (`npx tsx
 * examples/mesh/mesh.ts`) and it publishes a two-file site, reads it through the gateway on the
 * name's own origin, receives a webhook, revokes a token, and says so.
 */
import { pathToFileURL } from 'node:url'
import { MemoryTransport, SERVICE_CALL_SCOPES, collectBytes, createTokenProvider, createTokenVerifier, dirManifest, gatewayLabel, mediaTypeFor, newNodeId } from '@ron/core'
import { createIndexClient, createIndexService, type NameResolution } from '@ron/index'
import { createInteropClient, createInteropService } from '@ron/interop'
import { createPassportClient, createPassportService, passportMinter } from '@ron/passport'
import { createStorageClient, createStorageService } from '@ron/storage'

export async function startMesh(opts: { githubSecret: string }) {
  const transport = new MemoryTransport()
  // One node: its id has the one form of node ids (n + 16 hex), never a service name. On a
  // MemoryTransport the services' endpoints stay target names.
  const nodeId = newNodeId()
  const passport = await createPassportService(
    { policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] }, [`node:${nodeId}`]: { scopes: [...SERVICE_CALL_SCOPES], audiences: ['storage', 'index'] } } } },
    transport,
  )
  transport.mount('passport', passport)
  const verifier = createTokenVerifier({ keys: passport.keys, revocations: passport.revocations })
  const tokens = createTokenProvider({ minter: passportMinter(passport, { sub: `node:${nodeId}` }) })

  const index = await createIndexService({ amnesia: true, auth: { verifier } }, transport)
  transport.mount('index', index)
  const storage = await createStorageService({ nodeId, advertise: 'storage', auth: { verifier }, tokens, announce: { target: 'index' } }, transport)
  transport.mount('storage', storage)
  const interop = await createInteropService({ amnesia: true, webhooks: { providers: { github: { secrets: [opts.githubSecret] } } } }, transport, { tokens })
  transport.mount('interop', interop)

  const admin = await passport.mintAdminToken({ aud: ['storage', 'index', 'passport', 'interop'], scope: ['storage:write', 'index:write', 'passport:issue', 'passport:revoke'], ttlSec: 3600 })
  return {
    nodeId,
    tokens,
    transport,
    passport,
    storage,
    index,
    interop,
    adminToken: admin.token,
    async close() {
      await interop.close()
      await storage.close()
      await index.close()
      tokens.close()
      await passport.close()
      await transport.close()
    },
  }
}

/** What running the file does (see the module comment), printed to `out`. */
export async function demo(out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const mesh = await startMesh({ githubSecret: 'gh-secret' })
  const { transport, adminToken } = mesh
  try {
    out.write('mesh: passport, index, storage and interop on one MemoryTransport\n')
    // A site: its files, then a directory manifest listing them, then a name bound to it.
    const storage = createStorageClient(transport, { target: 'storage', token: adminToken })
    const files = { 'index.html': '<link rel="stylesheet" href="style.css"><h1>hello</h1>', 'style.css': 'h1 { color: teal }' }
    const entries = []
    for (const [path, text] of Object.entries(files)) {
      const { address, size } = await storage.put(text)
      entries.push({ path, content: address, size, type: mediaTypeFor(path) })
    }
    const manifest = await storage.put(dirManifest(entries).bytes)
    const index = createIndexClient(transport, { token: adminToken })
    await index.setName('hello.docs', manifest.address)
    const r = (await index.resolve('hello.docs')) as NameResolution
    out.write(`stored 2 files and their directory manifest; hello.docs → ${r.manifestAddress} (${r.kind ?? 'file'})\n`)
    // The gateway serves the name on its own origin: what a browser at http://hello-docs.localhost:<port>/ gets.
    const host = `${gatewayLabel('hello.docs')!}.localhost`
    for (const path of ['/', '/style.css']) {
      const res = await transport.request('interop', { method: 'GET', path, headers: { host } })
      const body = new TextDecoder().decode(await collectBytes(res.body))
      out.write(`GET http://${host}${path} → ${res.status} ${String(res.headers['content-type'])}: ${body.slice(0, 40)}\n`)
    }
    const ack = await createInteropClient(transport).sendTestWebhook('github', 'gh-secret')
    out.write(`a signed GitHub delivery → receipt ${ack.receipt}\n`)
    const passport = createPassportClient(transport, { token: adminToken })
    const { token } = await passport.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
    await passport.revoke({ token })
    const refused = await createStorageClient(transport, { target: 'storage', token }).put('refused').catch((e: unknown) => e as { code: string; details: { reason?: string } })
    out.write(`a revoked token at storage → ${'code' in refused ? `${refused.code} (${refused.details.reason ?? ''})` : 'accepted?!'}\n`)
  } finally {
    await mesh.close()
  }
  out.write('mesh: closed\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await demo()
