/**
 * Where a read's time goes under the bench's own load: `registry/bare-read.ts` and the registry
 * (256 entries, the bench's HEAD), each in its own process, loaded in alternating rounds by the
 * load process (autocannon, c50) as `bench/system/registry.bench.ts` does (the order rotating). Per request, for each
 * server: the main thread's user and system time (`/proc/<pid>/task/<tid>/stat`, 10 ms ticks) and
 * time on the CPU (`schedstat`, ns), the other threads' together, the main thread's voluntary and
 * involuntary context switches, and its young-generation collections (count and mean pause, from
 * node's `gc` performance entries).
 *
 *   npx tsx bench/tools/read-split.ts [path=/registry/head] [rounds=6] [seconds=2]
 *
 * `READ_SPLIT_LAYERS=1` adds, for `/registry/head`, two servers between those (`registry/head-on-core.ts`):
 * the same reply from core's HTTP pipeline alone (`pipeline`) and from a `createServiceHost` service
 * on its defaults (`service`), so the registry's extra time splits into the HTTP layer, the
 * service host's per-request features and the registry's own.
 *
 * `READ_SPLIT_NODE_FLAGS` adds node flags to every server (e.g. `--single-threaded-gc`). Main-thread
 * instructions are `read-cost.ts`'s job (under callgrind); this is for time per instruction and
 * waits, which only a run at full speed shows. The first round of each server is a warm-up.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport } from '@ron/core'
import { createRegistryClient } from '@ron/registry'
import { benchSigners, fillLog } from '../lib/registry-log.js'
import { spawnLoad, spawnServer } from '../lib/process.js'
import { readThreads, type ThreadStat } from '../lib/threads.js'

const [path = '/registry/head', roundsArg = '6', secondsArg = '2'] = process.argv.slice(2)
const flags = (process.env.READ_SPLIT_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')
const dir = mkdtempSync(join(tmpdir(), 'ron-read-split-'))
const { keys, signers } = benchSigners()

interface Totals {
  requests: number
  mainUser: number
  mainSys: number
  mainNs: number
  otherTicks: number
  voluntary: number
  involuntary: number
  scavenges: number
  scavengeMs: number
}

const registry = await spawnServer('registry', './servers/registry/registry.ts', { dir: join(dir, 'log'), signers }, flags)
// Stopped in reverse order of start: the load process, bare, the registry.
const stops: Array<{ stop(): Promise<void> }> = [registry]
try {
  const transport = new HttpTransport({ targets: { registry: registry.url } })
  const client = createRegistryClient(transport, { token: String(registry.extra.token) })
  await fillLog(client, keys, 256)
  const head = await client.head()
  const tile = await client.tile('tile/0/000')
  await transport.close()
  const bare = await spawnServer('bare', './servers/registry/bare-read.ts', { head, tile: Buffer.from(tile).toString('base64') }, flags)
  stops.push(bare)
  const layers =
    process.env.READ_SPLIT_LAYERS === '1' && path === '/registry/head'
      ? [
          await spawnServer('pipeline', './servers/registry/head-on-core.ts', { head, mode: 'handler' }, flags),
          await spawnServer('service', './servers/registry/head-on-core.ts', { head, mode: 'service' }, flags),
        ]
      : []
  stops.push(...layers)
  const load = await spawnLoad()
  stops.push(load)
  const totals = new Map<string, Totals>()
  const main = (ts: ThreadStat[]): ThreadStat | undefined => ts.find((t) => t.rank === 0)
  const others = (ts: ThreadStat[]): number => ts.filter((t) => t.rank !== 0).reduce((n, t) => n + t.user + t.sys, 0)
  const servers = [bare, ...layers, registry]
  for (let round = 0; round < Number(roundsArg); round++) {
    // The order rotates each round, as the bench's does: no server always follows the same one.
    for (const s of [...servers.slice(round % servers.length), ...servers.slice(0, round % servers.length)]) {
      const pid = String(s.pid)
      await s.gcStart()
      const t0 = readThreads(pid, true)
      const r = await load.run({ kind: 'rate', url: s.url, path, connections: 50, durationSec: Number(secondsArg) })
      const t1 = readThreads(pid, true)
      const gc = await s.gcStop()
      if (round === 0) continue
      const a = main(t0)!
      const b = main(t1)!
      const t = totals.get(s.name) ?? { requests: 0, mainUser: 0, mainSys: 0, mainNs: 0, otherTicks: 0, voluntary: 0, involuntary: 0, scavenges: 0, scavengeMs: 0 }
      t.requests += r.requests
      t.mainUser += b.user - a.user
      t.mainSys += b.sys - a.sys
      t.mainNs += b.ns - a.ns
      t.otherTicks += others(t1) - others(t0)
      t.voluntary += b.voluntary - a.voluntary
      t.involuntary += b.involuntary - a.involuntary
      t.scavenges += gc.minor
      t.scavengeMs += gc.minorMs
      totals.set(s.name, t)
    }
  }
  console.log(`${path}, ${Number(roundsArg) - 1} rounds of ${secondsArg} s each (after a warm-up round), node flags: ${flags.join(' ') || '(none)'}`)
  const onCpu = (t: Totals): number => t.mainNs / 1000 / t.requests
  const bareOnCpu = onCpu(totals.get(bare.name)!)
  for (const { name } of servers) {
    const t = totals.get(name)!
    const us = (ticks: number): string => ((ticks * 10_000) / t.requests).toFixed(2)
    const perK = (n: number): string => ((n * 1000) / t.requests).toFixed(1)
    console.log(
      `${name.padEnd(9)} ${t.requests} requests; main thread user ${us(t.mainUser)} + system ${us(t.mainSys)} µs/request ` +
        `(on CPU ${onCpu(t).toFixed(2)}, ${(onCpu(t) / bareOnCpu).toFixed(3)}x of bare), other threads ${us(t.otherTicks)}; ` +
        `context switches per 1k requests: voluntary ${perK(t.voluntary)}, involuntary ${perK(t.involuntary)}; ` +
        `scavenges: one per ${(t.requests / Math.max(1, t.scavenges)).toFixed(0)} requests, ${(t.scavengeMs / Math.max(1, t.scavenges)).toFixed(3)} ms each`,
    )
  }
} finally {
  for (const s of stops.reverse()) await s.stop()
  rmSync(dir, { recursive: true, force: true })
}
