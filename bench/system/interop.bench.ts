/**
 * Interop benchmarks (issue 14 item 8), each beside its baseline, every server in its own process:
 *
 * 1. acknowledged webhooks/s — every `202` means its receipt is durably stored — vs storage's own
 *    `PUT /o` of the same bodies (the durable floor, goal ≥ 0.7×). Both store on the filesystem
 *    backend in a temporary directory; interop runs with storage in its process (MemoryTransport).
 * 2. refused forgeries/s (a GitHub delivery with a wrong signature → 401) vs a bare `node:http`
 *    handler doing the same HMAC check (goal ≥ 0.6×).
 * 3. `POST /put` of 1 MiB bodies (passport capability + stream to storage) vs `PUT /o` on storage
 *    directly (goal ≥ 0.8×).
 *
 * Interop runs with `rateLimit: false` (the default 500 rps would measure the limiter) — the only
 * default changed. Load runs in the parent process (undici pools, autocannon); each request of
 * cases 1 and 3 carries a fresh body so every receipt/object is new.
 *
 * Servers: `servers/interop/interop.ts`, `storage-floor.ts` and `bare-hmac.ts`.
 */
import autocannon from 'autocannon'
import { Pool } from 'undici'
import { signWebhook } from '@ron/interop'
import { CpuPerRequest, FULL, alternate, printRounds } from '../lib/harness.js'
import { spawnServer, type ServerProcess } from '../lib/process.js'
import { API_KEY, SECRET } from '../servers/interop/shared.js'

/** Extra node flags for the storage and interop servers (e.g. `RON_BENCH_SERVER_FLAGS=--trace-gc` to count GCs per phase). */
const SERVER_FLAGS = (process.env.RON_BENCH_SERVER_FLAGS ?? '').split(' ').filter((f) => f !== '')
const phase = (name: string): void => {
  if (SERVER_FLAGS.length > 0) console.log(`@@phase ${name}`)
}

interface Job {
  method: string
  path: string
  headers: Record<string, string>
  body: Buffer
}

/** `requests` requests at `concurrency`, each built fresh by `build(n)`; returns requests/s of 2xx answers. */
async function load(url: string, concurrency: number, requests: number, build: (n: number) => Job): Promise<number> {
  const pool = new Pool(url, { connections: concurrency, pipelining: 1 })
  let next = 0
  let ok = 0
  const bad: Record<string, number> = {}
  const t0 = performance.now()
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < requests) {
          const job = build(++next)
          const res = await pool.request({ method: job.method, path: job.path, headers: { ...job.headers, 'content-length': String(job.body.length) }, body: job.body })
          await res.body.dump()
          if (res.statusCode < 300) ok++
          else bad[res.statusCode] = (bad[res.statusCode] ?? 0) + 1
        }
      }),
    )
  } finally {
    await pool.close()
  }
  if (Object.keys(bad).length > 0) throw new Error(`${url}: non-2xx answers ${JSON.stringify(bad)}`)
  return ok / ((performance.now() - t0) / 1000)
}

const stamp = `${process.pid}-${Date.now()}`

function webhookBody(n: number): Buffer {
  return Buffer.from(JSON.stringify({ action: 'opened', number: n, stamp, pull_request: { title: 'x'.repeat(800) } }))
}

export async function run(): Promise<void> {
  const stops: ServerProcess[] = []
  try {
    const storage = await spawnServer('storage PUT /o (fs, durable floor)', './servers/interop/storage-floor.ts', {}, SERVER_FLAGS)
    stops.push(storage)
    const interop = await spawnServer('interop webhooks (receipt stored, fs)', './servers/interop/interop.ts', {}, SERVER_FLAGS)
    stops.push(interop)
    const bare = await spawnServer('bare node:http HMAC check', './servers/interop/bare-hmac.ts')
    stops.push(bare)
    const auth = { authorization: `Bearer ${String(storage.extra['token'])}`, 'content-type': 'application/octet-stream' }
    const rounds = FULL ? 7 : 5
    const requests = FULL ? 4000 : 800

    // 1. Acknowledged webhooks vs the durable floor.
    phase('webhooks')
    let seq = 0
    const acked = await alternate(
      [
        { name: storage.name, measure: () => load(storage.url, 16, requests, () => ({ method: 'PUT', path: '/o', headers: auth, body: webhookBody(++seq) })) },
        {
          name: interop.name,
          measure: () =>
            load(interop.url, 16, requests, () => {
              const w = signWebhook({ provider: 'github', secret: SECRET, body: webhookBody(++seq) })
              return { method: 'POST', path: w.path, headers: w.headers, body: Buffer.from(w.body) }
            }),
        },
      ],
      // Two warm-up rounds: the interop process JIT-compiles interop, storage and core code on
      // this path, and a profile of the first measured round still showed TurboFan at work.
      { rounds, warmup: 2 },
    )
    printRounds(`Acknowledged webhooks/s (each receipt stored) vs storage PUT /o of the same bodies, c16 (goal >= 0.7x)`, 'req/s', [storage.name, interop.name], acked, {
      note: 'Both on the filesystem backend (fsync per object). interop: rateLimit off (default 500 rps), brownout off.',
    })

    // 2. Refused forgeries.
    phase('forgeries')
    const forged = signWebhook({ provider: 'github', secret: 'not-the-secret', body: webhookBody(0) })
    const seconds = FULL ? 5 : 1
    const refusedCpu = new CpuPerRequest(2)
    const refused = await alternate(
      [bare, interop].map((s, i) => ({
        name: s === bare ? bare.name : 'interop (401 bad_signature)',
        measure: async () => {
          const run = () => autocannon({ url: `${s.url}/webhooks/github`, method: 'POST', connections: 50, duration: seconds, headers: forged.headers, body: Buffer.from(forged.body) })
          const r = await refusedCpu.around(i, s.pid, run, (x) => x.requests.total)
          // Every answer must be a refusal (401): a 2xx would mean a forgery got through.
          if (r.errors > 0 || r['2xx'] > 0 || r.non2xx === 0) throw new Error(`forgeries: ${r.errors} errors, ${r['2xx']} accepted, ${r.non2xx} refused`)
          return r.requests.average
        },
      })),
      { rounds },
    )
    printRounds(`Refused forgeries/s vs a bare node:http HMAC check, autocannon -c50 ${seconds} s (goal >= 0.6x)`, 'req/s', [bare.name, 'interop (401 bad_signature)'], refused)
    refusedCpu.print('Refused forgeries', [bare.name, 'interop (401 bad_signature)'], rounds)

    // 3. POST /put 1 MiB vs PUT /o.
    phase('put')
    const MiB = 1 << 20
    const big = Buffer.alloc(MiB, 7)
    const fresh = (): Buffer => {
      const b = Buffer.from(big)
      b.writeUInt32LE(++seq, 0)
      b.write(stamp.slice(-12), 4)
      return b
    }
    // 200 MiB per round (about a second): with 80, a round was a few fsync stalls long, and six
    // quick runs spread from 0.60x to 1.13x.
    const uploads = FULL ? 600 : 200
    const put = await alternate(
      [
        { name: 'storage PUT /o 1 MiB', measure: async () => (await load(storage.url, 4, uploads, () => ({ method: 'PUT', path: '/o', headers: auth, body: fresh() }))) * MiB },
        {
          name: 'interop POST /put 1 MiB',
          measure: async () => (await load(interop.url, 4, uploads, () => ({ method: 'POST', path: '/put', headers: { 'x-api-key': API_KEY }, body: fresh() }))) * MiB,
        },
      ],
      { rounds },
    )
    phase('end')
    printRounds('POST /put 1 MiB throughput vs direct PUT /o on storage, c4 (goal >= 0.8x)', 'MiB/s', ['storage PUT /o 1 MiB', 'interop POST /put 1 MiB'], put.map((r) => r.map((b) => b / MiB)))
  } finally {
    for (const s of stops.reverse()) await s.stop().catch(() => undefined)
  }
}
