/**
 * PUT latency after a GET-heavy phase (the open question of issue 10, session 3): storage and the
 * bare fsync server each take 6 alternated rounds of 1 MiB PUTs; with `warm`, both first store a
 * 64 MiB object and serve it to 4 streams (and, unless `norange` or `noget`, 600 Range GETs).
 *
 *   npx tsx bench/tools/put-after-get.ts [concurrency=1] [warm [noget|norange]]
 *   TRACEGC=1   the storage server runs with --trace-gc (count the Mark-Compact lines); TRACEGC=bare: the bare one
 *   HEAP=1      sampling heap profile of the storage server during the PUT rounds (top allocators)
 *   PROF=1      CPU profile of the storage server during the PUT rounds
 *   MEM=1       samples the storage server's external/ArrayBuffer/heap memory during its PUT rounds
 *   FORCEGC=1   a full GC in the server after the warm phase;  XFLAG=<v8 flag> one more node flag
 *
 * What it showed (session 3): after the 4-stream GET, V8 runs a mark-compact about every 70 ms
 * during the PUTs (34–58 per run against 2–3 without the GET phase, forced GC or not), and
 * storage's PUT p95 goes from ~1.3x to ~2–3x the bare server's while its CPU is 80% idle.
 *
 * Why (session 4, from `--trace-gc-verbose` and `--trace-incremental-marking`): V8 counts
 * ArrayBuffer bytes allocated since the last mark-compact against the old generation's limit, and
 * once mark-compacts run while little is promoted (the GET phase's cached blocks), the heap
 * controller settles on its smallest factor (1.1): limit = live + 8 MB + new space. From then on
 * every ~8 MB of request-body buffers starts incremental marking ("Start (task)" at 15 of 39 MB)
 * and a mark-compact, well before the young-generation collection that would free those buffers
 * for almost nothing. The bare server never gets there (one mark-compact in the whole run, its
 * buffers go with "external memory pressure" scavenges). Reused write buffers cut the storage
 * server's mark-compacts by about a third; ron-node's heap setting (`setHeapGrowingFactor(4)`,
 * applied to every bench server, `RON_BENCH_V8_HEAP=auto` to compare) takes them from 34 to 3.
 */
import { mkdtemp, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { printProfile } from '../lib/cpuprofile.js'
import { spawnLoad, spawnServer } from '../lib/process.js'
const root = await mkdtemp(join(tmpdir(), 'abput-'))
await mkdir(join(root, 'bare'))
const load = await spawnLoad()
const ron = await spawnServer('ron', './servers/storage/storage.ts', { dir: join(root, 'ron') }, [...(process.env.TRACEGC === '1' ? ['--trace-gc'] : []), ...(process.env.FORCEGC === '1' ? ['--expose-gc'] : []), ...(process.env.XFLAG ? [process.env.XFLAG] : [])])
const bare = await spawnServer('bare', './servers/baselines/bare.ts', { dir: join(root, 'bare') }, process.env.TRACEGC === 'bare' ? ['--trace-gc'] : [])
const conc = Number(process.argv[2] ?? 1)
if (process.argv[3] === 'warm') {
  for (const s of [bare, ron]) {
    const headers = s.extra.token === undefined ? {} : { authorization: `Bearer ${s.extra.token as string}` }
    const r = await load.run({ kind: 'put', url: s.url, path: '/o', size: 64 << 20, seed: 99, concurrency: 1, requests: 1, headers, fresh: false, expectAddress: true })
    const addr = (JSON.parse(r.lastBody!) as { address: string }).address
    if (process.argv[4] !== 'noget') await load.run({ kind: 'get', url: s.url, path: `/o/${addr}`, concurrency: 4, requests: 8, headers })
    if (process.argv[4] !== 'noget' && process.argv[4] !== 'norange') await load.run({ kind: 'get', url: s.url, path: `/o/${addr}`, concurrency: 16, requests: 600, headers, ranges: { objectSize: 64 << 20, length: 65536, seed: 1 } })
  }
  if (process.env.FORCEGC === '1') await ron.memoryUsage(0, true)
  console.log('warmed', JSON.stringify(await ron.memoryUsage(0, false)).slice(0, 120))
}
if (process.env.PROF === '1') await ron.profStart()
if (process.env.HEAP === '1') await ron.heapStart()
/** Samples the storage server's external and ArrayBuffer memory while a round runs. */
function sampleMemory(): { stop: () => Promise<string> } {
  let running = true
  const seen = { external: [Infinity, 0], arrayBuffers: [Infinity, 0], heapUsed: [Infinity, 0] }
  const loop = (async () => {
    while (running) {
      const { before } = await ron.memoryUsage(0, false)
      for (const k of ['external', 'arrayBuffers', 'heapUsed'] as const) {
        seen[k][0] = Math.min(seen[k][0]!, before[k])
        seen[k][1] = Math.max(seen[k][1]!, before[k])
      }
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      return Object.entries(seen).map(([k, [lo, hi]]) => `${k} ${(lo! / 2 ** 20).toFixed(1)}/${(hi! / 2 ** 20).toFixed(1)}`).join('  ')
    },
  }
}
for (let round = 0; round < 6; round++) {
  for (const s of round % 2 ? [ron, bare] : [bare, ron]) {
    const headers = s.extra.token === undefined ? {} : { authorization: `Bearer ${s.extra.token as string}` }
    const sampling = process.env.MEM === '1' && s === ron ? sampleMemory() : undefined
    const r = await load.run({ kind: 'put', url: s.url, path: '/o', size: 1 << 20, seed: round * 10 + 1, concurrency: conc, requests: conc === 1 ? 40 : 64, headers })
    if (sampling !== undefined) console.log('   ron memory (MiB, min/max over the round):', await sampling.stop())
    console.log(round, s.name.padEnd(5), `p50 ${r.p50.toFixed(1)} p95 ${r.p95.toFixed(1)} p99 ${r.p99.toFixed(1)} ${(r.bytesPerSec / 1e6).toFixed(0)} MB/s`, JSON.stringify(r.statuses))
  }
}
if (process.env.PROF === '1') {
  printProfile(await ron.profStop(join(tmpdir(), `put-after-get-${Date.now()}.cpuprofile`)), undefined, { self: 20, total: 30 })
}
if (process.env.HEAP === '1') {
  const f = await ron.heapStop('/tmp/ron-profiles/abput.heapprofile')
  const { readFileSync } = await import('node:fs')
  type N = { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: N[] }
  const root = (JSON.parse(readFileSync(f, 'utf8')) as { head: N }).head
  const by = new Map<string, number>()
  let total = 0
  const walk = (n: N): void => {
    const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/(node_modules|packages)\//, '')}:${n.callFrame.lineNumber + 1}`
    by.set(k, (by.get(k) ?? 0) + n.selfSize)
    total += n.selfSize
    n.children.forEach(walk)
  }
  walk(root)
  console.log('heap allocations sampled:', (total / 1048576).toFixed(1), 'MiB')
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log((v / 1048576).toFixed(2).padStart(8), 'MiB', k)
}
console.log(JSON.stringify(await ron.memoryUsage(0, false)).slice(0, 160))
await load.stop(); await ron.stop(); await bare.stop()
