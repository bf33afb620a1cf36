/**
 * Profiles the index server under one load: `npx tsx bench/profile-index.ts <case>` starts the
 * server (`servers/index.ts`) in its own process, drives it from the load generator process,
 * profiles the server only while the load runs (V8 sampling profiler) and prints self and
 * inclusive time (the .cpuprofile stays in `$TMPDIR/ron-profiles/`). Cases:
 *
 * - `resolve-hit`: cache-hit `GET /resolve`, autocannon -c50 for 5 s;
 * - `names-c1` / `names-c16`: `PUT /names/:name` one at a time (300) / 16 at once (1600);
 * - `bare-names-c16`: the bare node:http + LMDB baseline under the same load.
 *
 * For instructions per request on the main thread (stable on a busy box), see `callgrind.ts`.
 */
import { mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { printProfile } from './cpuprofile.js'
import { spawnLoad, spawnServer, type LoadJob } from './process.js'
import { ADDRESS } from './servers/index.js'

const which = process.argv[2] ?? 'resolve-hit'
const profDir = join(tmpdir(), 'ron-profiles')
await mkdir(profDir, { recursive: true })
const mode = which === 'resolve-hit' ? 'cache-hit' : which.startsWith('bare-') ? 'bare-names' : 'names'
const server = await spawnServer(mode, './servers/index.ts', { mode })
const load = await spawnLoad()
try {
  const writes = (concurrency: number, requests: number): LoadJob => ({
    kind: 'json',
    url: server.url,
    method: 'PUT',
    paths: Array.from({ length: 1000 }, (_, i) => `/names/name-${i}.bench`),
    bodies: (server.extra.manifests as string[]).map((m) => JSON.stringify({ manifestAddress: m })),
    concurrency,
    requests,
    headers: server.extra.token === undefined ? {} : { authorization: `Bearer ${server.extra.token as string}` },
  })
  const jobs: Record<string, () => LoadJob> = {
    'resolve-hit': () => ({ kind: 'rate', url: server.url, path: `/resolve/${ADDRESS}`, connections: 50, durationSec: 5 }),
    'names-c1': () => writes(1, 300),
    'names-c16': () => writes(16, 1600),
    'bare-names-c16': () => writes(16, 1600),
  }
  const job = jobs[which]
  if (job === undefined) throw new Error(`unknown case ${which}; one of ${Object.keys(jobs).join(', ')}`)
  await load.run({ ...job(), ...(job().kind === 'rate' ? { durationSec: 1 } : { requests: 100 }) }) // warm up
  await server.profStart()
  const r = await load.run(job())
  const file = await server.profStop(join(profDir, `index-${which}-${Date.now()}.cpuprofile`))
  console.log(`${which}: ${r.requests} requests, ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms, statuses ${JSON.stringify(r.statuses)}`)
  printProfile(file, undefined, { self: 30, total: 50 })
} finally {
  await load.stop()
  await server.stop()
}
