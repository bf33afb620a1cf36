/**
 * Profiles the interop server out of process under one load: `npx tsx bench/profile-interop.ts <case>`
 * (cases `forgery`, `bare`, `floor`, `webhook`, `storage-webhook`, `put-1m`, `storage-put-1m`). The server runs in its own process
 * (the `interop` or `storage` mode of `interop.bench.ts`; `floor`: the same HMAC check and 401 text on core's service host
 * alone, `servers/interop-floor.ts`), the load runs here (autocannon/undici),
 * and the top self/inclusive functions of the server's V8 profile are printed (the `.cpuprofile`
 * stays in `$TMPDIR/ron-profiles/`).
 */
import { mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { Pool } from 'undici'
import { signWebhook } from '@ron/interop'
import { printProfile } from './cpuprofile.js'
import { spawnServer } from './process.js'

const which = process.argv[2] ?? 'forgery'
const profDir = join(tmpdir(), 'ron-profiles')
await mkdir(profDir, { recursive: true })
const mode = which.startsWith('storage-') ? 'storage' : which === 'bare' ? 'bare' : 'interop'
const server = which === 'floor' ? await spawnServer('floor', './servers/interop-floor.ts', { mode: 'service' }) : await spawnServer(mode, './interop.bench.ts', { mode })
const stamp = `${process.pid}-${Date.now()}`
const body = (n: number): Buffer => Buffer.from(JSON.stringify({ action: 'opened', number: n, stamp, pull_request: { title: 'x'.repeat(800) } }))

async function load(concurrency: number, requests: number, build: (n: number) => { method: string; path: string; headers: Record<string, string>; body: Buffer }): Promise<string> {
  const pool = new Pool(server.url, { connections: concurrency, pipelining: 1 })
  let next = 0
  const st: Record<number, number> = {}
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const j = build(++next)
        const res = await pool.request({ method: j.method, path: j.path, headers: { ...j.headers, 'content-length': String(j.body.length) }, body: j.body })
        await res.body.dump()
        st[res.statusCode] = (st[res.statusCode] ?? 0) + 1
      }
    }),
  )
  await pool.close()
  return `${(requests / ((performance.now() - t0) / 1000)).toFixed(0)} req/s ${JSON.stringify(st)}`
}

const MiB = 1 << 20
const big = Buffer.alloc(MiB, 7)
let seq = 0
const fresh = (): Buffer => {
  const b = Buffer.from(big)
  b.writeUInt32LE(++seq, 0)
  b.write(stamp.slice(-12), 4)
  return b
}
const run = async (): Promise<string> => {
  switch (which) {
    case 'forgery':
    case 'floor':
    case 'bare': {
      const forged = signWebhook({ provider: 'github', secret: 'not-the-secret', body: body(0) })
      const r = await autocannon({ url: `${server.url}/webhooks/github`, method: 'POST', connections: 50, duration: 5, headers: forged.headers, body: Buffer.from(forged.body) })
      return `${r.requests.average} req/s, 2xx ${r['2xx']}, non2xx ${r.non2xx}, errors ${r.errors}`
    }
    case 'webhook':
      return load(16, 3000, () => {
        // A new body every time (the warm-up included): a repeat would be answered as a duplicate.
        const w = signWebhook({ provider: 'github', secret: 'bench-webhook-secret', body: body(++seq) })
        return { method: 'POST', path: w.path, headers: w.headers, body: Buffer.from(w.body) }
      })
    case 'storage-webhook':
      return load(16, 3000, () => ({ method: 'PUT', path: '/o', headers: { authorization: `Bearer ${String(server.extra['token'])}`, 'content-type': 'application/octet-stream' }, body: body(++seq) }))
    case 'put-1m':
      return load(4, 300, () => ({ method: 'POST', path: '/put', headers: { 'x-api-key': 'bench-api-key-0123456789' }, body: fresh() }))
    case 'storage-put-1m':
      return load(4, 300, () => ({ method: 'PUT', path: '/o', headers: { authorization: `Bearer ${String(server.extra['token'])}`, 'content-type': 'application/octet-stream' }, body: fresh() }))
    default:
      throw new Error(`unknown case ${which}`)
  }
}
await run() // warm-up (JIT, pools)
await server.profStart()
const result = await run()
const file = await server.profStop(join(profDir, `interop-${which}-${Date.now()}.cpuprofile`))
console.log(`${which}: ${result}`)
await server.stop()
printProfile(file)
