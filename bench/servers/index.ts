/**
 * Index servers and their baselines (option `mode`):
 *
 * - `bare`: bare `node:http` answering `GET /resolve/<ADDRESS>` with the JSON the index answers;
 * - `cache-hit`: the index (amnesia) with one announced provider for `ADDRESS`; `cache.ttlMs` is
 *   1 h, so every resolve after the first is a cache hit (a changed default);
 * - `hedge-on` / `hedge-off`: an index whose five peers (same process) stall 400 ms on 10 % of
 *   their answers, hedging on (β = 2) or off (β = 0); α = 1, `resolverWorkers` 16 (changed defaults);
 * - `names`: the index on LMDB (a fresh directory) on its defaults, with a storage stand-in in the
 *   same process serving 16 manifests (`extra.manifests`) and an `index:write` token (`extra.token`);
 * - `bare-names`: bare `node:http` + a bare LMDB `put` (flushed) per `PUT /names/:name` with the
 *   same JSON in and out: the same durability, no checks.
 *
 * Options: `{ mode, dir? }` (`dir`: where the LMDB directories go; a temp directory by default).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { HttpTransport, MemoryTransport, addressOf, serve } from '@ron/core'
import type { DispatchTarget, RonRequest, RonResponse } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createIndexService } from '@ron/index'
import type { ServerFactory } from '../server-child.js'

/** The address every resolve case asks for. */
export const ADDRESS = addressOf(new TextEncoder().encode('ron index bench content'))
const ANSWER = { key: ADDRESS, providers: [{ node: 'node-a', endpoint: 'http://node-a:7701', score: 1 }], source: 'cache', ttlSec: 3600 }

/** The 16 manifests name writes bind to, as their texts (the same in every process). */
export function manifestTexts(): string[] {
  return Array.from({ length: 16 }, (_, i) => JSON.stringify({ content: addressOf(new TextEncoder().encode(`c${i}`)), size: 2, type: 'text/plain' }))
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const closeServer = (server: Server): Promise<void> => new Promise<void>((r) => server.close(() => r()))

/** Serves stored manifests (`GET /o/:addr`) to the index under test, in its process. */
class ManifestStore implements DispatchTarget {
  readonly objects = new Map<string, Uint8Array>()
  dispatch(req: RonRequest): Promise<RonResponse> {
    const bytes = this.objects.get(req.url.slice('/o/'.length))
    return Promise.resolve({
      status: bytes === undefined ? 404 : 200,
      headers: { 'content-length': String(bytes?.byteLength ?? 0) },
      body: (async function* () {
        if (bytes !== undefined) yield bytes
      })(),
    })
  }
}

const start: ServerFactory = async (options) => {
  const mode = String(options.mode)
  if (mode === 'bare') {
    const body = JSON.stringify(ANSWER)
    const server = createServer((req, res) => {
      if (req.url === `/resolve/${ADDRESS}`) res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }).end(body)
      else res.writeHead(404).end()
    })
    const url = await listen(server)
    return { url, close: () => closeServer(server) }
  }
  const dir = await mkdtemp(join(options.dir === undefined ? tmpdir() : (options.dir as string), 'ron-bench-index-'))
  const removeDir = (): Promise<void> => rm(dir, { recursive: true, force: true })
  const manifests = manifestTexts()
  if (mode === 'bare-names') {
    const db = open<{ manifestAddress: string }, string>({ path: dir, name: 'names', compression: false, noSync: false, encoding: 'msgpack' })
    const server = createServer((req, res) => {
      const name = req.method === 'PUT' && req.url?.startsWith('/names/') === true ? req.url.slice('/names/'.length) : undefined
      if (name === undefined) {
        res.writeHead(404).end()
        return
      }
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        void (async () => {
          try {
            const { manifestAddress } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { manifestAddress: string }
            await db.put(name, { manifestAddress })
            await db.flushed
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, manifestAddress }))
          } catch (e) {
            res.writeHead(500).end(String(e))
          }
        })()
      })
    })
    const url = await listen(server)
    return {
      url,
      extra: { manifests: manifests.map((t) => addressOf(new TextEncoder().encode(t))) },
      close: async () => {
        await closeServer(server)
        await db.close()
        await removeDir()
      },
    }
  }
  const issuer = createTestIssuer()
  const announce = issuer.mint({ scope: 'index:announce', aud: 'index', ttlSec: 86_400, sub: 'node:node-a' })
  const dto = JSON.stringify({ address: ADDRESS, node: 'node-a', endpoint: 'http://node-a:7701', ttlSec: 86_400 })
  const announceTo = async (url: string): Promise<void> => {
    const r = await fetch(`${url}/providers`, { method: 'POST', headers: { authorization: `Bearer ${announce}`, 'content-type': 'application/json' }, body: dto })
    if (r.status !== 200) throw new Error(`announce: ${r.status} ${await r.text()}`)
  }
  if (mode === 'names') {
    const transport = new MemoryTransport()
    const storage = new ManifestStore()
    for (const t of manifests) {
      const bytes = new TextEncoder().encode(t)
      storage.objects.set(addressOf(bytes), bytes)
    }
    transport.mount('storage', storage)
    const svc = await createIndexService({ dataDir: join(dir, 'index'), auth: { keys: issuer.keys } }, transport)
    const s = await serve(svc)
    return {
      url: s.url,
      extra: { token: issuer.mint({ scope: 'index:write', aud: 'index', ttlSec: 86_400 }), manifests: [...storage.objects.keys()] },
      close: async () => {
        await s.close()
        await svc.close()
        await transport.close()
        await removeDir()
      },
    }
  }
  if (mode === 'cache-hit') {
    await removeDir()
    const svc = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, cache: { ttlMs: 3_600_000 } })
    const s = await serve(svc)
    await announceTo(s.url)
    return { url: s.url, close: async () => (await s.close(), await svc.close()) }
  }
  if (mode !== 'hedge-on' && mode !== 'hedge-off') throw new Error(`unknown mode ${mode}`)
  await removeDir()
  // Five peer indexes with a latency tail, and the index under test.
  const closers: Array<() => Promise<void>> = []
  const peers: string[] = []
  let seed = 12345
  const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  for (let i = 0; i < 5; i++) {
    const peer = await createIndexService({ amnesia: true, auth: { keys: issuer.keys } })
    const server = createServer((req, res) => {
      if (random() < 0.1) setTimeout(() => peer.handle(req, res), 400)
      else peer.handle(req, res)
    })
    const url = await listen(server)
    await announceTo(url)
    peers.push(url)
    closers.push(async () => (await closeServer(server), await peer.close()))
  }
  const transport = new HttpTransport()
  const svc = await createIndexService({ amnesia: true, resolverWorkers: 16, peers: { targets: peers, alpha: 1, beta: mode === 'hedge-on' ? 2 : 0 } }, transport)
  const s = await serve(svc)
  return {
    url: s.url,
    close: async () => {
      await s.close()
      await svc.close()
      await transport.close()
      for (const c of closers) await c()
    },
  }
}
export default start
