/**
 * Profile cases of the storage server (`servers/storage/storage.ts`) and of core's service host
 * (`servers/core/hello.ts`), each under one load from the load generator process.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { printProfile, profileDir } from '../../lib/cpuprofile.js'
import { spawnLoad, spawnServer, type LoadJob, type ServerProcess } from '../../lib/process.js'

/** Storage cases. */
export const storageCases: Record<string, string> = {
  'put-1m-c16': '400 PUTs of fresh 1 MiB bodies, 16 at once (the default)',
  'put-1m-c1': '200 PUTs of fresh 1 MiB bodies, one at a time',
  'put-stream': 'one streamed PUT of 512 MiB',
  'get-4k': 'GET of a 4 KiB object, autocannon -c50 for 5 s',
  'get-64m': '10 GETs of a 64 MiB object, one at a time',
  'get-64m-c4': '20 GETs of a 64 MiB object, 4 streams',
  range: '3000 random 64 KiB Range GETs of a 64 MiB object, 16 at once',
}

/** Core cases. */
export const coreCases: Record<string, string> = {
  hello: 'GET /hello on a createServiceHost service with its defaults, autocannon -c50 for 5 s',
}

function jobsFor(server: ServerProcess, seed: (size: number) => Promise<string>): Record<string, () => Promise<LoadJob>> {
  const headers = { authorization: `Bearer ${String(server.extra.token)}` }
  return {
    'put-1m-c16': async () => ({ kind: 'put', url: server.url, path: '/o', size: 1 << 20, seed: 1, concurrency: 16, requests: 400, headers }),
    'put-1m-c1': async () => ({ kind: 'put', url: server.url, path: '/o', size: 1 << 20, seed: 1, concurrency: 1, requests: 200, headers }),
    'put-stream': async () => ({ kind: 'put-stream', url: server.url, path: '/o', size: 512 << 20, seed: 2, headers }),
    'get-4k': async () => ({ kind: 'rate', url: server.url, path: `/o/${await seed(4096)}`, connections: 50, durationSec: 5, headers }),
    'get-64m': async () => ({ kind: 'get', url: server.url, path: `/o/${await seed(64 << 20)}`, concurrency: 1, requests: 10, headers }),
    'get-64m-c4': async () => ({ kind: 'get', url: server.url, path: `/o/${await seed(64 << 20)}`, concurrency: 4, requests: 20, headers }),
    range: async () => ({ kind: 'get', url: server.url, path: `/o/${await seed(64 << 20)}`, concurrency: 16, requests: 3000, headers, ranges: { objectSize: 64 << 20, length: 65536, seed: 1 } }),
    hello: async () => ({ kind: 'rate', url: server.url, path: '/hello', connections: 50, durationSec: 5 }),
  }
}

/** Runs one storage or core case: the server is profiled only while the load runs. */
export async function run(which: string): Promise<void> {
  const profDir = await profileDir()
  const root = await mkdtemp(join(tmpdir(), 'ron-prof-'))
  const server = which === 'hello' ? await spawnServer('ron', './servers/core/hello.ts', { mode: 'service' }) : await spawnServer('ron', './servers/storage/storage.ts', { dir: join(root, 'ron') })
  const load = await spawnLoad()
  try {
    const seed = async (size: number): Promise<string> => {
      const r = await load.run({
        kind: 'put',
        url: server.url,
        path: '/o',
        size,
        seed: 5,
        concurrency: 1,
        requests: 1,
        headers: { authorization: `Bearer ${String(server.extra.token)}` },
        fresh: false,
      })
      return (JSON.parse(r.lastBody!) as { address: string }).address
    }
    const job = await jobsFor(server, seed)[which]!()
    await server.profStart()
    const r = await load.run(job)
    const file = await server.profStop(join(profDir, `${which}-${Date.now()}.cpuprofile`))
    console.log(
      `${which}: ${r.requests} requests, ${(r.bytesPerSec / 1e6).toFixed(0)} MB/s, ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms, statuses ${JSON.stringify(
        r.statuses,
      )}`,
    )
    printProfile(file, undefined, { self: 25, total: 40 })
  } finally {
    await load.stop()
    await server.stop()
    await rm(root, { recursive: true, force: true })
  }
}
