/**
 * Host overhead, out of process (issue 10 item 4): `GET /hello` answered by a bare `node:http`
 * handler, fastify 5, RON's HTTP pipeline alone (`createHttpHandler` + `serve`), a full RON
 * service on `createServiceHost` defaults (built-ins, metrics, admission) and `node:http`'s floor
 * (`baselines/floor.ts`: a reply built once, one `writeHead` and one `end` per request, no routing)
 * — what any handler on `node:http` costs at least, printed against fastify so a goal stated as a
 * multiple of fastify can be read against it. Each server is its own
 * process; autocannon (-c50) runs in the load generator process; servers alternate within each
 * round.
 */
import { CpuPerRequest, FULL, alternate, printRounds } from '../lib/harness.js'
import { spawnLoad, spawnServer, type LoadResult } from '../lib/process.js'

const ROUNDS = FULL ? 7 : 5
const SECONDS = FULL ? 5 : 1.5

export async function run(): Promise<void> {
  const started: Array<{ stop(): Promise<void> }> = []
  try {
    const load = await spawnLoad()
    started.push(load)
    const servers = [
      await spawnServer('bare node:http', './servers/baselines/bare.ts'),
      await spawnServer('fastify 5', './servers/baselines/fastify.ts'),
      await spawnServer('ron createHttpHandler + serve', './servers/core/hello.ts', { mode: 'handler' }),
      await spawnServer('ron service (createServiceHost)', './servers/core/hello.ts', { mode: 'service' }),
      await spawnServer('node:http floor (reply built once)', './servers/baselines/floor.ts'),
    ]
    started.push(...servers)
    const cpu = new CpuPerRequest(servers.length)
    const results = await alternate(
      servers.map((s, i) => ({
        name: s.name,
        measure: async (): Promise<LoadResult> => {
          const run = () => load.run({ kind: 'rate', url: s.url, path: '/hello', connections: 50, durationSec: SECONDS })
          const r = await cpu.around(i, s.pid, run, (x) => x.requests)
          if (r.errors > 0 || r.statuses.non2xx !== 0) throw new Error(`${s.name}: ${JSON.stringify(r.statuses)} errors ${r.errors}`)
          return r
        },
      })),
      { rounds: ROUNDS },
    )
    const names = servers.map((s) => s.name)
    printRounds(`GET /hello, autocannon -c50 for ${SECONDS} s per round`, 'req/s', names, results.map((rs) => rs.map((r) => r.rps)))
    const vsFastify = [1, 0, 2, 3, 4]
    printRounds('the same, against fastify', 'req/s', vsFastify.map((i) => names[i]!), vsFastify.map((i) => results[i]!.map((r) => r.rps)))
    cpu.print('GET /hello', names, ROUNDS)
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => undefined)
  }
}
