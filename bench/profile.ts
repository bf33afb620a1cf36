/**
 * Profiles one server under one load: `npx tsx bench/profile.ts <case>` starts the server in its
 * own process, profiles it (V8 sampling profiler, only while the load runs) driven from the load
 * generator process, and prints the top self-time functions of the profile (the .cpuprofile stays in `$TMPDIR/ron-profiles/` for
 * Chrome DevTools). Cases: `put-1m-c16`, `put-stream`, `get-4k`, `get-64m`, `get-64m-c4` (4 streams), `range`, `hello`.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { printProfile } from './cpuprofile.js'
import { spawnLoad, spawnServer, type LoadJob } from './process.js'

const which = process.argv[2] ?? 'put-1m-c16'
const profDir = join(tmpdir(), 'ron-profiles')
await mkdir(profDir, { recursive: true })
const root = await mkdtemp(join(tmpdir(), 'ron-prof-'))
const isHello = which === 'hello'
const server = isHello
  ? await spawnServer('ron', './servers/ron-hello.ts', { mode: 'service' })
  : await spawnServer('ron', './servers/ron-storage.ts', { dir: join(root, 'ron') })
const load = await spawnLoad()
const headers = { authorization: `Bearer ${String(server.extra.token)}` }
const seed = async (size: number): Promise<string> => {
  const r = await load.run({ kind: 'put', url: server.url, path: '/o', size, seed: 5, concurrency: 1, requests: 1, headers, fresh: false })
  return (JSON.parse(r.lastBody!) as { address: string }).address
}
const jobs: Record<string, () => Promise<LoadJob>> = {
  'put-1m-c16': async () => ({ kind: 'put', url: server.url, path: '/o', size: 1 << 20, seed: 1, concurrency: 16, requests: 400, headers }),
  'put-1m-c1': async () => ({ kind: 'put', url: server.url, path: '/o', size: 1 << 20, seed: 1, concurrency: 1, requests: 200, headers }),
  'put-stream': async () => ({ kind: 'put-stream', url: server.url, path: '/o', size: 512 << 20, seed: 2, headers }),
  'get-4k': async () => ({ kind: 'rate', url: server.url, path: `/o/${await seed(4096)}`, connections: 50, durationSec: 5, headers }),
  'get-64m': async () => ({ kind: 'get', url: server.url, path: `/o/${await seed(64 << 20)}`, concurrency: 1, requests: 10, headers }),
  'get-64m-c4': async () => ({ kind: 'get', url: server.url, path: `/o/${await seed(64 << 20)}`, concurrency: 4, requests: 20, headers }),
  range: async () => ({ kind: 'get', url: server.url, path: `/o/${await seed(64 << 20)}`, concurrency: 16, requests: 3000, headers, ranges: { objectSize: 64 << 20, length: 65536, seed: 1 } }),
  hello: async () => ({ kind: 'rate', url: server.url, path: '/hello', connections: 50, durationSec: 5 }),
}
const job = await jobs[which]!()
await server.profStart()
const r = await load.run(job)
const file = await server.profStop(join(profDir, `${which}-${Date.now()}.cpuprofile`))
console.log(`${which}: ${r.requests} requests, ${(r.bytesPerSec / 1e6).toFixed(0)} MB/s, ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms, statuses ${JSON.stringify(r.statuses)}`)
await load.stop()
await server.stop()
printProfile(file, undefined, { self: 25, total: 40 })
await rm(root, { recursive: true, force: true })
