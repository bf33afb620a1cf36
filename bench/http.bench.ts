/**
 * Hello-route throughput: `createHttpHandler` + `serve` vs a bare `node:http` handler doing the
 * same JSON write, both on loopback in this process, driven by one undici Pool with 48 requests
 * in flight. Also the fetch() adapter (mounted behind node:http with Web Request/Response
 * conversion at the edge) for reference.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { Pool } from 'undici'
import { createHttpHandler, serve } from '../packages/core/src/http/index.js'
import { report, median, type Measured } from './harness.js'

const CONCURRENCY = 48
const REQUESTS = Number(process.env.HTTP_BENCH_REQUESTS ?? 10_000)
const ROUNDS = Number(process.env.HTTP_BENCH_ROUNDS ?? 5)

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

/** Fires `count` GET /hello with `CONCURRENCY` in flight; returns requests per second. */
async function load(pool: Pool, count: number): Promise<number> {
  let next = 0
  const t0 = process.hrtime.bigint()
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++
      const res = await pool.request({ method: 'GET', path: '/hello' })
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
      await res.body.text()
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return count / (Number(process.hrtime.bigint() - t0) / 1e9)
}

export async function run(): Promise<void> {
  const routes = [{ method: 'GET' as const, path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) }]

  const bare = await listen((req, res) => {
    if (req.url === '/hello' && req.method === 'GET') {
      const body = JSON.stringify({ hello: 'world' })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
      res.end(body)
    } else {
      res.statusCode = 404
      res.end()
    }
  })

  const host = await serve(createHttpHandler({ serviceId: 'bench', routes }), { port: 0 })
  const observed = await serve(
    createHttpHandler({ serviceId: 'bench', routes, hooks: { observe: () => {}, admit: () => () => {}, intake: () => {} } }),
    { port: 0 },
  )

  // fetch() adapter path: node:http → Web Request → handler.fetch → Web Response → node:http.
  const fetchHandler = createHttpHandler({ serviceId: 'bench', routes })
  const viaFetch = await listen((req, res) => {
    const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'GET' })
    void fetchHandler.fetch(request).then((response) => {
      res.statusCode = response.status
      response.headers.forEach((v, k) => res.setHeader(k, v))
      if (response.body === null) res.end()
      else Readable.fromWeb(response.body as import('node:stream/web').ReadableStream).pipe(res)
    })
  })

  const targets = [
    { name: 'bare node:http', url: bare.url },
    { name: 'createHttpHandler + serve', url: host.url },
    { name: 'host + hooks (observe, admit, intake)', url: observed.url },
    { name: 'handler.fetch() adapter behind node:http', url: viaFetch.url },
  ]
  const pools = targets.map((t) => new Pool(t.url, { connections: CONCURRENCY, pipelining: 1 }))
  try {
    // warm-up
    for (const p of pools) await load(p, Math.floor(REQUESTS / 5))
    const samples = targets.map(() => [] as number[])
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, p] of pools.entries()) samples[i]!.push(await load(p, REQUESTS))
    }
    const rows: Measured[] = targets.map((t, i) => ({ name: t.name, opsPerSec: median(samples[i]!) }))
    report(`GET /hello, ${CONCURRENCY} in flight, ${REQUESTS} requests x ${ROUNDS} rounds (median)`, rows, 'req/s')
  } finally {
    await Promise.all(pools.map((p) => p.close()))
    await host.close()
    await observed.close()
    bare.server.close()
    viaFetch.server.close()
    bare.server.closeAllConnections()
    viaFetch.server.closeAllConnections()
  }
}
