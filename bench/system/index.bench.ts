/**
 * Index benchmarks (issue 13 item 8, issue 24 items 1, 2 and 7), every server and baseline in its
 * own process (`servers/index/`, `servers/baselines/lmdb.ts`), the load in another:
 *
 * 1. cache-hit `GET /resolve/b3:…` requests/s vs a bare `node:http` handler answering the same
 *    JSON (goal ≥ 0.8×), autocannon -c50, with the server CPU per request. Changes one default:
 *    `cache.ttlMs` is 1 h so every request of every round is a cache hit. The main-thread
 *    instructions per request of the same pair: `npx tsx bench/tools/callgrind.ts
 *    index/resolve.ts /resolve/<address> 10000` (and `index/bare-resolve.ts`).
 * 2. p95 resolve latency against peers with a latency tail (each peer stalls 400 ms on 10 % of
 *    its answers), hedging on (β = 2 after the 150 ms default hedge delay) vs off (β = 0), `?fresh`
 *    so every resolve goes to the peers. Changes: α = 1 on both sides (with the default α = 3
 *    three peers are asked at once and a single stall never shows), and `resolverWorkers` 16 so
 *    that queueing does not hide the peers' latency.
 * 3. name writes/s (LMDB, flushed before the answer) vs bare `node:http` doing a bare LMDB `put` +
 *    `flushed` per request with the same JSON (goal ≥ 0.6×), one writer at a time and 16 at once,
 *    with p50/p95 and the server CPU per write, after 3,000 warm-up writes to each (V8 still
 *    optimises the write path after the first thousand). The index runs on its defaults with a storage
 *    stand-in in its process (16 manifests, so after the first round each check is a kept one).
 */
import { CpuPerRequest, FULL, alternate, printRounds } from '../lib/harness.js'
import { spawnLoad, spawnServer, type LoadResult, type ServerProcess } from '../lib/process.js'
import { ADDRESS } from '../servers/index/shared.js'

const ROUNDS = FULL ? 7 : 5
/** Writes sent to each name writer (at 16 at once) before the name-write rows: see below. */
const WRITE_WARMUP = 3000

function checkOk(name: string, r: LoadResult, what: string): LoadResult {
  const bad = Object.entries(r.statuses).filter(([k, v]) => !k.startsWith('2') && k !== '2xx' && v > 0)
  if (r.errors > 0 || bad.length > 0) throw new Error(`${name} ${what}: ${r.errors} errors, statuses ${JSON.stringify(r.statuses)}`)
  return r
}

export async function run(): Promise<void> {
  const started: Array<{ stop(): Promise<void> }> = []
  try {
    const load = await spawnLoad()
    started.push(load)

    // 1. cache-hit resolve vs bare node:http
    const bare = await spawnServer('bare node:http (same JSON)', './servers/index/bare-resolve.ts')
    const hit = await spawnServer('index GET /resolve (cache hit)', './servers/index/resolve.ts')
    started.push(bare, hit)
    const seconds = FULL ? 5 : 1
    const cpu = new CpuPerRequest(2)
    const rates = await alternate(
      [bare, hit].map((s, i) => ({
        name: s.name,
        measure: async (): Promise<number> => {
          const r = await cpu.around(i, s.pid, () => load.run({ kind: 'rate', url: s.url, path: `/resolve/${ADDRESS}`, connections: 50, durationSec: seconds }), (x) => x.requests)
          if (r.errors > 0 || r.statuses.non2xx !== 0) throw new Error(`${s.name}: ${JSON.stringify(r.statuses)} errors ${r.errors}`)
          return r.rps
        },
      })),
      { rounds: ROUNDS },
    )
    const names1 = [bare.name, hit.name]
    printRounds(`cache-hit GET /resolve vs bare node:http, autocannon -c50 for ${seconds} s per round (goal >= 0.8x)`, 'req/s', names1, rates, {
      note: 'changed default: cache.ttlMs = 1 h (every request is a cache hit)',
    })
    cpu.print('cache-hit GET /resolve', names1, ROUNDS)
    for (const s of [hit, bare]) await s.stop()
    started.splice(started.indexOf(bare), 2)

    // 2. p95 with a peer latency tail, hedging off vs on
    const off = await spawnServer('hedging off (beta = 0)', './servers/index/hedge.ts', { hedge: false })
    const on = await spawnServer('hedging on (beta = 2 after 150 ms)', './servers/index/hedge.ts', { hedge: true })
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
    const names2 = [off.name, on.name]
    printRounds(`p95 resolve latency, peers stall 400 ms on 10 % of answers, ${requests} fresh resolves at concurrency 4 (goal: on <= 0.5x of off)`, 'ms', names2, lat.map((rs) => rs.map((r) => r.p95)), {
      lowerIsBetter: true,
      note: 'changed defaults: peers.alpha = 1 on both sides, resolverWorkers = 16',
    })
    printRounds('p50 of the same runs', 'ms', names2, lat.map((rs) => rs.map((r) => r.p50)), { lowerIsBetter: true })
    for (const s of [on, off]) await s.stop()
    started.splice(started.indexOf(off), 2)

    // 3. name writes vs bare node:http + LMDB put (flushed)
    const bareNames = await spawnServer('bare node:http + LMDB put (flushed)', './servers/baselines/lmdb.ts')
    const names = await spawnServer('index PUT /names (defaults)', './servers/index/names.ts')
    started.push(bareNames, names)
    const manifests = names.extra.manifests as string[]
    const bodies = manifests.map((m) => JSON.stringify({ manifestAddress: m }))
    const paths = Array.from({ length: 1000 }, (_, i) => `/names/name-${i}.bench`)
    const writers = [bareNames, names]
    const writerNames = writers.map((s) => s.name)
    const writeLoad = (s: ServerProcess, concurrency: number, requests: number) =>
      load.run({ kind: 'json', url: s.url, method: 'PUT', paths, bodies, concurrency, requests, headers: s.extra.token === undefined ? {} : { authorization: `Bearer ${s.extra.token as string}` } })
    // Warm both writers the same way before any row: V8 is still optimising the write path after
    // ~1,000 writes (callgrind: 389k main-thread instructions per write at 1,000 warm-up writes,
    // 265k at 3,000; the bare loop 162k), and a server in service is long past that.
    for (const s of writers) checkOk(s.name, await writeLoad(s, 16, WRITE_WARMUP), 'name-write warm-up')
    for (const [conc, count] of [
      [1, FULL ? 400 : 100],
      [16, FULL ? 1600 : 400],
    ] as const) {
      const title = `name writes, ${conc === 1 ? 'one at a time' : `${conc} at once`} (${count} per round)`
      const wcpu = new CpuPerRequest(2)
      const results = await alternate(
        writers.map((s, i) => ({
          name: s.name,
          measure: () =>
            wcpu.around(
              i,
              s.pid,
              async () =>
                checkOk(s.name, await writeLoad(s, conc, count), title),
              () => count,
            ),
        })),
        { rounds: ROUNDS },
      )
      printRounds(`${title}: throughput (goal >= 0.6x)`, 'writes/s', writerNames, results.map((rs) => rs.map((r) => r.rps)))
      printRounds(`${title}: p50`, 'p50 ms', writerNames, results.map((rs) => rs.map((r) => r.p50)), { lowerIsBetter: true })
      printRounds(`${title}: p95`, 'p95 ms', writerNames, results.map((rs) => rs.map((r) => r.p95)), { lowerIsBetter: true })
      wcpu.print(title, writerNames, ROUNDS)
    }
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => undefined)
  }
}
