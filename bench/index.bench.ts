/**
 * Index benchmarks (issue 13 item 8), side by side with baselines:
 *
 * 1. cache-hit `GET /resolve/b3:…` requests/s vs a bare `node:http` handler answering the same
 *    JSON (goal ≥ 0.7×); out of process, autocannon -c50. Changes one default: `cache.ttlMs` is
 *    1 h so every request of every round is a cache hit.
 * 2. p95 resolve latency against peers with a latency tail (each peer stalls 400 ms on 10 % of
 *    its answers), hedging on (β = 2 after the 150 ms default hedge delay) vs off (β = 0); out of
 *    process (the index under test and its five peers in one server process, the load in
 *    another), `?fresh` so every resolve goes to the peers. Changes: α = 1 on both sides (with the
 *    default α = 3 three peers are asked at once and a single stall never shows), and
 *    `resolverWorkers` 16 so that queueing does not hide the peers' latency.
 * 3. name writes/s (LMDB, flushed to disk before the answer) vs a bare LMDB `put` loop with the same
 *    durability, in one process (the load generator cannot send JSON bodies), sequential.
 *
 * This module is also its own server factory (the default export), started in a child process by
 * `spawnServer` with `{ mode }`.
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
import { FULL, alternate, compare, printRounds, report } from './harness.js'
import { spawnLoad, spawnServer, type LoadResult } from './process.js'
import type { ServerFactory } from './server-child.js'

const ADDRESS = addressOf(new TextEncoder().encode('ron index bench content'))
const ANSWER = { key: ADDRESS, providers: [{ node: 'node-a', endpoint: 'http://node-a:7701', score: 1 }], source: 'cache', ttlSec: 3600 }

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Server factory: `mode` = `bare` | `cache-hit` | `hedge-on` | `hedge-off`. */
const start: ServerFactory = async (options) => {
  const mode = String(options.mode)
  if (mode === 'bare') {
    const body = JSON.stringify(ANSWER)
    const server = createServer((req, res) => {
      if (req.url === `/resolve/${ADDRESS}`) res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }).end(body)
      else res.writeHead(404).end()
    })
    const url = await listen(server)
    return { url, close: () => new Promise<void>((r) => server.close(() => r())) }
  }
  const issuer = createTestIssuer()
  const announce = issuer.mint({ scope: 'index:announce', aud: 'index', ttlSec: 86_400, sub: 'node:node-a' })
  const dto = JSON.stringify({ address: ADDRESS, node: 'node-a', endpoint: 'http://node-a:7701', ttlSec: 86_400 })
  const closers: Array<() => Promise<void>> = []
  const announceTo = async (url: string): Promise<void> => {
    const r = await fetch(`${url}/providers`, { method: 'POST', headers: { authorization: `Bearer ${announce}`, 'content-type': 'application/json' }, body: dto })
    if (r.status !== 200) throw new Error(`announce: ${r.status} ${await r.text()}`)
  }
  if (mode === 'cache-hit') {
    const svc = await createIndexService({ amnesia: true, auth: { keys: issuer.keys }, cache: { ttlMs: 3_600_000 } })
    const s = await serve(svc)
    await announceTo(s.url)
    return { url: s.url, close: async () => (await s.close(), await svc.close()) }
  }
  // hedge-on / hedge-off: five peer indexes with a latency tail, and the index under test.
  const peers: string[] = []
  let seed = 12345
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
  for (let i = 0; i < 5; i++) {
    const peer = await createIndexService({ amnesia: true, auth: { keys: issuer.keys } })
    const server = createServer((req, res) => {
      if (random() < 0.1) setTimeout(() => peer.handle(req, res), 400)
      else peer.handle(req, res)
    })
    const url = await listen(server)
    await announceTo(url)
    peers.push(url)
    closers.push(async () => (await new Promise<void>((r) => server.close(() => r())), await peer.close()))
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

const ROUNDS = FULL ? 7 : 5

export async function run(): Promise<void> {
  const started: Array<{ stop(): Promise<void> }> = []
  try {
    const load = await spawnLoad()
    started.push(load)

    // 1. cache-hit resolve vs bare node:http
    const bare = await spawnServer('bare node:http (same JSON)', './index.bench.ts', { mode: 'bare' })
    const hit = await spawnServer('index GET /resolve (cache hit)', './index.bench.ts', { mode: 'cache-hit' })
    started.push(bare, hit)
    const seconds = FULL ? 5 : 0.5
    const rates = await alternate(
      [bare, hit].map((s) => ({
        name: s.name,
        measure: async (): Promise<number> => {
          const r = await load.run({ kind: 'rate', url: s.url, path: `/resolve/${ADDRESS}`, connections: 50, durationSec: seconds })
          if (r.errors > 0 || r.statuses.non2xx !== 0) throw new Error(`${s.name}: ${JSON.stringify(r.statuses)} errors ${r.errors}`)
          return r.rps
        },
      })),
      { rounds: ROUNDS },
    )
    printRounds(`cache-hit GET /resolve vs bare node:http, autocannon -c50 for ${seconds} s per round (goal >= 0.7x)`, 'req/s', [bare.name, hit.name], rates, {
      note: 'changed default: cache.ttlMs = 1 h (every request is a cache hit)',
    })

    // 2. p95 with a peer latency tail, hedging off vs on
    const off = await spawnServer('hedging off (beta = 0)', './index.bench.ts', { mode: 'hedge-off' })
    const on = await spawnServer('hedging on (beta = 2 after 150 ms)', './index.bench.ts', { mode: 'hedge-on' })
    started.push(off, on)
    const requests = FULL ? 1000 : 300
    const lat = await alternate(
      [off, on].map((s) => ({
        name: s.name,
        measure: async (): Promise<LoadResult> => {
          const r = await load.run({ kind: 'get', url: s.url, path: `/resolve/${ADDRESS}?fresh=1`, concurrency: 4, requests })
          if (r.errors > 0 || (r.statuses['200'] ?? 0) !== requests) throw new Error(`${s.name}: ${JSON.stringify(r.statuses)} errors ${r.errors}`)
          return r
        },
      })),
      { rounds: ROUNDS },
    )
    const names = [off.name, on.name]
    printRounds(`p95 resolve latency, peers stall 400 ms on 10 % of answers, ${requests} fresh resolves at concurrency 4 (goal: on <= 0.5x of off)`, 'ms', names, lat.map((rs) => rs.map((r) => r.p95)), {
      lowerIsBetter: true,
      note: 'changed defaults: peers.alpha = 1 on both sides, resolverWorkers = 16',
    })
    printRounds('p50 of the same runs', 'ms', names, lat.map((rs) => rs.map((r) => r.p50)), { lowerIsBetter: true })

    // 3. name writes vs a bare LMDB put loop (in process)
    await nameWrites()
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => undefined)
  }
}

/** Serves stored manifests to the index under test (in process). */
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

export async function nameWrites(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ron-index-bench-'))
  const issuer = createTestIssuer()
  const transport = new MemoryTransport()
  const storage = new ManifestStore()
  transport.mount('storage', storage)
  const svc = await createIndexService({ dataDir: join(dir, 'index'), auth: { keys: issuer.keys } }, transport)
  transport.mount('index', svc)
  const bare = open<{ manifestAddress: string }, string>({ path: join(dir, 'bare'), name: 'names', compression: false, noSync: false, encoding: 'msgpack' })
  try {
    const manifests: string[] = []
    for (let i = 0; i < 16; i++) {
      const bytes = new TextEncoder().encode(JSON.stringify({ content: addressOf(new TextEncoder().encode(`c${i}`)), size: 2, type: 'text/plain' }))
      const a = addressOf(bytes)
      storage.objects.set(a, bytes)
      manifests.push(a)
    }
    const headers = { authorization: `Bearer ${issuer.mint({ scope: 'index:write', aud: 'index', ttlSec: 86_400 })}`, 'content-type': 'application/json' }
    let i = 0
    let j = 0
    const rows = await compare(
      {
        name: 'bare lmdb put (flushed), sequential',
        // `put` resolves at commit (lmdb's overlappingSync); `flushed` is when it is on disk.
        fn: async () => {
          await bare.put(`name-${j++ % 1000}.bench`, { manifestAddress: manifests[j % 16]! })
          await bare.flushed
        },
      },
      [
        {
          name: 'index PUT /names (check manifest, CAS, flushed)',
          fn: async () => {
            const n = i++
            const r = await transport.request('index', { method: 'PUT', path: `/names/name-${n % 1000}.bench`, headers, body: JSON.stringify({ manifestAddress: manifests[n % 16] }) })
            if (r.status !== 200) throw new Error(`PUT /names: ${r.status} ${await r.text()}`)
            await r.dump()
          },
        },
      ],
      { ops: FULL ? 2000 : 300, rounds: ROUNDS },
    )
    report('name writes/s vs a bare LMDB put loop, same durability, in process', rows, 'writes/s')
  } finally {
    await svc.close()
    await bare.close()
    await transport.close()
    await rm(dir, { recursive: true, force: true })
  }
}
