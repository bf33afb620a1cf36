/**
 * Host overhead, out of process (issue 10 item 4): `GET /hello` answered by a bare `node:http`
 * handler, fastify 5, RON's HTTP pipeline alone (`createHttpHandler` + `serve`) and a full RON
 * service on `createServiceHost` defaults (built-ins, metrics, admission). Each server is its own
 * process; autocannon (-c50) runs in the load generator process; servers alternate within each
 * round.
 */
import { FULL, alternate, printRounds, processCpuMs } from './harness.js'
import { spawnLoad, spawnServer, type LoadResult } from './process.js'

const ROUNDS = FULL ? 7 : 5
const SECONDS = FULL ? 5 : 1.5

export async function run(): Promise<void> {
  const started: Array<{ stop(): Promise<void> }> = []
  try {
    const load = await spawnLoad()
    started.push(load)
    const servers = [
      await spawnServer('bare node:http', './servers/bare.ts'),
      await spawnServer('fastify 5', './servers/fastify.ts'),
      await spawnServer('ron createHttpHandler + serve', './servers/ron-hello.ts', { mode: 'handler' }),
      await spawnServer('ron service (createServiceHost)', './servers/ron-hello.ts', { mode: 'service' }),
    ]
    started.push(...servers)
    // Server CPU per request beside req/s: the load generator shares the two cores, and a server
    // that leaves CPU idle is limited by it, so req/s alone mixes the two.
    const cpu: number[][] = servers.map(() => [])
    const results = await alternate(
      servers.map((s, i) => ({
        name: s.name,
        measure: async (): Promise<LoadResult> => {
          const c0 = processCpuMs(s.pid)
          const r = await load.run({ kind: 'rate', url: s.url, path: '/hello', connections: 50, durationSec: SECONDS })
          const c1 = processCpuMs(s.pid)
          if (r.errors > 0 || r.statuses.non2xx !== 0) throw new Error(`${s.name}: ${JSON.stringify(r.statuses)} errors ${r.errors}`)
          if (c0 !== undefined && c1 !== undefined && r.requests > 0) cpu[i]!.push(((c1 - c0) * 1000) / r.requests)
          return r
        },
      })),
      { rounds: ROUNDS },
    )
    const names = servers.map((s) => s.name)
    printRounds(`GET /hello, autocannon -c50 for ${SECONDS} s per round`, 'req/s', names, results.map((rs) => rs.map((r) => r.rps)))
    const vsFastify = [1, 0, 2, 3]
    printRounds('the same, against fastify', 'req/s', vsFastify.map((i) => names[i]!), vsFastify.map((i) => results[i]!.map((r) => r.rps)))
    if (cpu.every((c) => c.length >= ROUNDS)) {
      printRounds('GET /hello, server CPU per request (user + system)', 'us/req', names, cpu.map((c) => c.slice(-ROUNDS)), {
        lowerIsBetter: true,
        note: 'from /proc/<pid>/stat over each round above (clock ticks of 10 ms, so coarse for short rounds).',
      })
    }
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => undefined)
  }
}
