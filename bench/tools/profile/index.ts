/**
 * Profile cases of the index server (`servers/index/`) and its LMDB baseline, driven from the
 * load generator process after a short warm-up. For instructions per request on the main thread
 * (stable on a busy box), see `tools/callgrind.ts`.
 */
import { join } from 'node:path'
import { printProfile, profileDir } from '../../lib/cpuprofile.js'
import { spawnLoad, spawnServer, type LoadJob } from '../../lib/process.js'
import { ADDRESS } from '../../servers/index/shared.js'

export const cases: Record<string, string> = {
  'resolve-hit': 'cache-hit GET /resolve, autocannon -c50 for 5 s (servers/index/resolve.ts)',
  'names-c1': 'PUT /names/:name one at a time, 300 writes (servers/index/names.ts)',
  'names-c16': 'PUT /names/:name 16 at once, 1600 writes (servers/index/names.ts)',
  'bare-names-c16': 'the bare node:http + LMDB baseline under names-c16 (servers/baselines/lmdb.ts)',
}

export async function run(which: string): Promise<void> {
  const profDir = await profileDir()
  const factory = which === 'resolve-hit' ? './servers/index/resolve.ts' : which.startsWith('bare-') ? './servers/baselines/lmdb.ts' : './servers/index/names.ts'
  const server = await spawnServer(which, factory)
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
    const job = jobs[which]!
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
}
