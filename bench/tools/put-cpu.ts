/**
 * Server CPU per PUT of fresh 1 MiB bodies (default concurrency 16): bare fsync+rename vs the
 * storage service, alternating, with the CPU split by thread from `/proc/<pid>/task`: the main
 * thread (parsing, hashing, copies), V8's platform threads (concurrent marking, sweeping,
 * compiling) and the rest (mostly libuv's pool: the file system calls), each as user and system time, and the garbage
 * collections the server ran during the rounds. A shorter, finer look at the storage suite's CPU
 * row.
 *
 *   npx tsx bench/tools/put-cpu.ts [rounds=7] [requests=128] [concurrency=16] [warm|warm-full]
 *
 * `warm` first runs what `bench/system/storage.bench.ts` runs on both servers before its c=16 CPU
 * row (quick sizes; `warm-full` the `--full` ones): a 4 KiB and a 64 MiB object stored, the
 * 64 MiB object read by one stream and by 4, the 4 KiB one by autocannon (50 connections), Range
 * GETs of 64 KiB at c=16, and PUTs of 1 MiB at c=1, each for 6 (quick) or 8 (full) rounds.
 * `WARM=getbig,get4,rate,range,put1` runs only the phases named (to find which one matters).
 * `PERF=<file>` records both servers' PUT rounds with `perf record -g` (kernel time included:
 * `perf report -i <file> --sort pid,sym` shows where each one's system time goes).
 * `PUT_NODE_ARGS='--max-semi-space-size=1'`: more node flags for both servers (what-if runs).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CpuPerRequest, alternate, median, printRounds } from '../lib/harness.js'
import { spawnLoad, spawnServer, type GcCounts, type LoadGenerator, type ServerProcess } from '../lib/process.js'

/**
 * Thread groups of a Node 20 process. Every thread is named `node`, so they are told apart by
 * creation order (thread ids ascend): the main thread, then V8's platform threads (the delayed-task
 * thread and the 4 workers that run concurrent marking, sweeping and compiling), then the rest:
 * the inspector's signal thread, libuv's pool (the file system calls: write, fsync, rename…) and
 * tsx's loader thread. Checked by burning GC-only then fs-only work in a process (the platform
 * threads took the GC work, the later ones the fs work).
 */
const GROUPS = ['main', 'V8 platform', 'libuv pool and others'] as const

function groupOf(pid: number, tid: number, sorted: number[]): number {
  if (tid === pid) return 0
  return sorted.indexOf(tid) <= 5 ? 1 : 2
}

/**
 * CPU ms of process `pid` so far, user and system for each of {@link GROUPS} (6 numbers), then
 * the minor page faults of each group (3 more: a write from freshly mapped memory faults its
 * pages in, on the thread that touches them first).
 */
function threadCpu(pid: number): number[] {
  const out = new Array<number>(GROUPS.length * 3).fill(0)
  const tids = readdirSync(`/proc/${pid}/task`).map(Number).sort((a, b) => a - b)
  for (const tid of tids) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      const k = groupOf(pid, tid, tids) * 2
      // utime and stime (fields 14 and 15), in clock ticks of 10 ms.
      out[k]! += Number(f[11]) * 10
      out[k + 1]! += Number(f[12]) * 10
      // minflt (field 10).
      out[GROUPS.length * 2 + k / 2]! += Number(f[7])
    } catch {
      // the thread ended meanwhile
    }
  }
  return out
}

const KiB = 1024
const MiB = 1024 * KiB
const [rounds = '7', requests = '128', conc = '16', warmArg = ''] = process.argv.slice(2)
const root = await mkdtemp(join(tmpdir(), 'ron-put-cpu-'))
const load = await spawnLoad()
const nodeArgs = process.env.PUT_NODE_ARGS?.split(' ').filter(Boolean) ?? []
const bare = await spawnServer('bare', './servers/baselines/bare.ts', { dir: join(root, 'bare') }, nodeArgs)
const ron = await spawnServer('storage', './servers/storage/storage.ts', { dir: join(root, 'ron') }, nodeArgs)
const names = ['bare fsync+rename', 'storage service']
const headersOf = (s: ServerProcess): Record<string, string> => (typeof s.extra.token === 'string' ? { authorization: `Bearer ${s.extra.token}` } : {})

/** The storage bench's phases before its c=16 PUT row, on both servers, alternated like there. */
async function warm(full: boolean): Promise<void> {
  const P = full ? { rounds: 8, getBig: 4, getBig4: 8, rateSec: 5, range: 16 * 40, put1: 60 } : { rounds: 6, getBig: 2, getBig4: 4, rateSec: 0.5, range: 16 * 20, put1: 12 }
  const seed = async (size: number, seedNo: number): Promise<string> => {
    let address = ''
    for (const s of [ron, bare]) {
      const r = await load.run({ kind: 'put', url: s.url, path: '/o', size, seed: seedNo, headers: headersOf(s), expectAddress: true, concurrency: 1, requests: 1, fresh: false })
      address = (JSON.parse(r.lastBody!) as { address: string }).address
    }
    return address
  }
  const small = await seed(4 * KiB, 1)
  const big = await seed(64 * MiB, 2)
  const all: Array<[string, (s: ServerProcess) => Parameters<LoadGenerator['run']>[0]]> = [
    ['getbig', (s) => ({ kind: 'get', url: s.url, path: `/o/${big}`, concurrency: 1, requests: P.getBig, headers: headersOf(s) })],
    ['get4', (s) => ({ kind: 'get', url: s.url, path: `/o/${big}`, concurrency: 4, requests: P.getBig4, headers: headersOf(s) })],
    ['rate', (s) => ({ kind: 'rate', url: s.url, path: `/o/${small}`, connections: 50, durationSec: P.rateSec, headers: headersOf(s) })],
    ['range', (s) => ({ kind: 'get', url: s.url, path: `/o/${big}`, concurrency: 16, requests: P.range, headers: headersOf(s), ranges: { objectSize: 64 * MiB, length: 64 * KiB, seed: 42 } })],
    ['put1', (s) => ({ kind: 'put', url: s.url, path: '/o', size: MiB, seed: 110, concurrency: 1, requests: P.put1, headers: headersOf(s) })],
  ]
  const only = process.env.WARM?.split(',')
  const phases = all.filter(([name]) => only === undefined || only.includes(name)).map(([, job]) => job)
  for (const job of phases) {
    for (let r = 0; r < P.rounds; r++) {
      for (const s of r % 2 ? [ron, bare] : [bare, ron]) {
        const res = await load.run(job(s))
        if (res.errors > 0) throw new Error(`${s.name} warm-up: ${res.errors} errors, ${JSON.stringify(res.statuses)}`)
      }
    }
  }
  const m = (await ron.memoryUsage(0, false)).before
  console.log(`warmed (${full ? 'full' : 'quick'} GET phase): storage rss ${(m.rss / MiB).toFixed(0)} MiB, heap ${(m.heapUsed / MiB).toFixed(1)}/${(m.heapTotal / MiB).toFixed(1)} MiB, external ${(m.external / MiB).toFixed(1)} MiB (array buffers ${(m.arrayBuffers / MiB).toFixed(1)})`)
}

try {
  if (warmArg === 'warm' || warmArg === 'warm-full') await warm(warmArg === 'warm-full')
  const perf = process.env.PERF ? spawn('perf', ['record', '-g', '-F', '499', '-p', `${bare.pid},${ron.pid}`, '-o', process.env.PERF], { stdio: 'ignore' }) : undefined
  const cpu = new CpuPerRequest(2)
  const split: number[][][] = [[], []]
  const gcs: GcCounts[][] = [[], []]
  const n = Number(requests)
  const results = await alternate(
    [bare, ron].map((s, i) => ({
      name: s.name,
      measure: () =>
        cpu.around(
          i,
          s.pid,
          async () => {
            await s.gcStart()
            const t0 = threadCpu(s.pid)
            const r = await load.run({ kind: 'put', url: s.url, path: '/o', size: 1 << 20, seed: 100 + i + Math.floor(Math.random() * 1e6), concurrency: Number(conc), requests: n, headers: headersOf(s) })
            const t1 = threadCpu(s.pid)
            gcs[i]!.push(await s.gcStop())
            split[i]!.push(t1.map((v, k) => ((v - t0[k]!) * 1000) / n))
            if (r.errors > 0 || Object.keys(r.statuses).some((k) => !k.startsWith('2'))) throw new Error(`${s.name}: ${r.errors} errors, ${JSON.stringify(r.statuses)}`)
            return r
          },
          () => n,
        ),
    })),
    { rounds: Number(rounds) },
  )
  if (perf !== undefined) {
    perf.kill('SIGINT')
    await once(perf, 'exit')
  }
  printRounds(`PUT 1 MiB c=${conc}: p95`, 'ms', names, results.map((rs) => rs.map((r) => r.p95)), { lowerIsBetter: true })
  cpu.print(`PUT 1 MiB c=${conc}`, names, Number(rounds))
  for (const i of [0, 1]) {
    const rows = split[i]!.slice(1)
    const med = (k: number): string => median(rows.map((r) => r[k]!)).toFixed(0)
    console.log(`${names[i]!}: µs per PUT (medians), user / system: ${GROUPS.map((g, j) => `${g} ${med(2 * j)} / ${med(2 * j + 1)}`).join(', ')}`)
    const faults = (k: number): string => median(rows.map((r) => r[k]! / 1000)).toFixed(1)
    console.log(`${' '.repeat(names[i]!.length)}  minor page faults per PUT (medians): ${GROUPS.map((g, j) => `${g} ${faults(GROUPS.length * 2 + j)}`).join(', ')}`)
    const g = gcs[i]!.slice(1)
    const gm = (k: keyof GcCounts): string => median(g.map((x) => x[k])).toFixed(k.endsWith('Ms') ? 1 : 0)
    console.log(`${' '.repeat(names[i]!.length)}  GCs per round of ${n} (medians): mark-compact ${gm('major')} (${gm('majorMs')} ms), scavenge ${gm('minor')} (${gm('minorMs')} ms), other ${gm('other')}`)
  }
} finally {
  for (const s of [ron, bare, load]) await s.stop()
  await rm(root, { recursive: true, force: true })
}
