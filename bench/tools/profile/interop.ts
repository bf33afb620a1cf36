/**
 * Profile cases of the interop server and its baselines, each in its own process, the load from
 * this process (autocannon/undici) after one unrecorded pass; the server's V8 profile is taken
 * during a second pass.
 */
import { join } from 'node:path'
import autocannon from 'autocannon'
import { Pool } from 'undici'
import { signWebhook } from '@ron/interop'
import { printProfile, profileDir } from '../../lib/cpuprofile.js'
import { spawnServer } from '../../lib/process.js'
import { API_KEY, SECRET } from '../../servers/interop/shared.js'

export const cases: Record<string, string> = {
  forgery: 'refused forgeries (401), autocannon -c50 5 s (servers/interop/interop.ts)',
  bare: 'the same forgeries on the bare HMAC baseline (servers/interop/bare-hmac.ts)',
  floor: "the same HMAC check and 401 on core's service host alone (servers/interop/floor.ts)",
  webhook: '3000 acknowledged webhooks (fresh bodies), c16',
  'storage-webhook': "the same bodies as storage's PUT /o (servers/interop/storage-floor.ts), c16",
  'put-1m': '300 POST /put of fresh 1 MiB bodies, c4',
  'storage-put-1m': '300 PUT /o of fresh 1 MiB bodies on storage directly, c4',
}

const FACTORIES: Record<string, string> = { storage: './servers/interop/storage-floor.ts', bare: './servers/interop/bare-hmac.ts', interop: './servers/interop/interop.ts' }

export async function run(which: string): Promise<void> {
  const profDir = await profileDir()
  const mode = which.startsWith('storage-') ? 'storage' : which === 'bare' ? 'bare' : 'interop'
  const server = which === 'floor' ? await spawnServer('floor', './servers/interop/floor.ts', { mode: 'service' }) : await spawnServer(mode, FACTORIES[mode]!)
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
  const drive = async (): Promise<string> => {
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
          const w = signWebhook({ provider: 'github', secret: SECRET, body: body(++seq) })
          return { method: 'POST', path: w.path, headers: w.headers, body: Buffer.from(w.body) }
        })
      case 'storage-webhook':
        return load(16, 3000, () => ({
          method: 'PUT',
          path: '/o',
          headers: { authorization: `Bearer ${String(server.extra['token'])}`, 'content-type': 'application/octet-stream' },
          body: body(++seq),
        }))
      case 'put-1m':
        return load(4, 300, () => ({ method: 'POST', path: '/put', headers: { 'x-api-key': API_KEY }, body: fresh() }))
      case 'storage-put-1m':
        return load(4, 300, () => ({ method: 'PUT', path: '/o', headers: { authorization: `Bearer ${String(server.extra['token'])}`, 'content-type': 'application/octet-stream' }, body: fresh() }))
      default:
        throw new Error(`unknown case ${which}`)
    }
  }
  try {
    await drive() // warm-up (JIT, pools)
    await server.profStart()
    const result = await drive()
    const file = await server.profStop(join(profDir, `interop-${which}-${Date.now()}.cpuprofile`))
    console.log(`${which}: ${result}`)
    printProfile(file)
  } finally {
    await server.stop()
  }
}
