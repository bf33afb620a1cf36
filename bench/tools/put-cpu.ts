/**
 * Server CPU per PUT of fresh 1 MiB bodies (default concurrency 16): bare fsync+rename vs the
 * storage service, alternating, with the CPU split by thread from `/proc/<pid>/task`: the main
 * thread (parsing, hashing, copies) and the others (libuv's pool doing the file system calls,
 * V8's helpers), each as user and system time. A shorter, finer look at the storage suite's CPU
 * row; the two sides' kernel time is where they differ most on some machines.
 *
 *   npx tsx bench/tools/put-cpu.ts [rounds=7] [requests=128] [concurrency=16]
 */
import { readFileSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CpuPerRequest, alternate, median, printRounds } from '../lib/harness.js'
import { spawnLoad, spawnServer } from '../lib/process.js'

/** CPU ms of process `pid` so far: [main user, main system, other threads user, other system]. */
function threadCpu(pid: number): number[] {
  const out = [0, 0, 0, 0]
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      const k = Number(tid) === pid ? 0 : 2
      // utime and stime (fields 14 and 15), in clock ticks of 10 ms.
      out[k]! += Number(f[11]) * 10
      out[k + 1]! += Number(f[12]) * 10
    } catch {
      // the thread ended meanwhile
    }
  }
  return out
}

const [rounds = '7', requests = '128', conc = '16'] = process.argv.slice(2)
const root = await mkdtemp(join(tmpdir(), 'ron-put-cpu-'))
const load = await spawnLoad()
const bare = await spawnServer('bare', './servers/baselines/bare.ts', { dir: join(root, 'bare') })
const ron = await spawnServer('storage', './servers/storage/storage.ts', { dir: join(root, 'ron') })
const names = ['bare fsync+rename', 'storage service']
try {
  const cpu = new CpuPerRequest(2)
  const split: number[][][] = [[], []]
  const n = Number(requests)
  const results = await alternate(
    [bare, ron].map((s, i) => ({
      name: s.name,
      measure: () =>
        cpu.around(
          i,
          s.pid,
          async () => {
            const token = s.extra.token
            const headers = typeof token === 'string' ? { authorization: `Bearer ${token}` } : {}
            const t0 = threadCpu(s.pid)
            const r = await load.run({ kind: 'put', url: s.url, path: '/o', size: 1 << 20, seed: 100 + i + Math.floor(Math.random() * 1e6), concurrency: Number(conc), requests: n, headers })
            const t1 = threadCpu(s.pid)
            split[i]!.push(t1.map((v, k) => ((v - t0[k]!) * 1000) / n))
            if (r.errors > 0 || Object.keys(r.statuses).some((k) => !k.startsWith('2'))) throw new Error(`${s.name}: ${r.errors} errors, ${JSON.stringify(r.statuses)}`)
            return r
          },
          () => n,
        ),
    })),
    { rounds: Number(rounds) },
  )
  printRounds(`PUT 1 MiB c=${conc}: p95`, 'ms', names, results.map((rs) => rs.map((r) => r.p95)), { lowerIsBetter: true })
  cpu.print(`PUT 1 MiB c=${conc}`, names, Number(rounds))
  for (const i of [0, 1]) {
    const rows = split[i]!.slice(1)
    console.log(`${names[i]!}: µs per PUT, main thread user / system, other threads user / system (medians): ${[0, 1, 2, 3].map((k) => median(rows.map((r) => r[k]!)).toFixed(0)).join(' / ')}`)
  }
} finally {
  for (const s of [ron, bare, load]) await s.stop()
  await rm(root, { recursive: true, force: true })
}
