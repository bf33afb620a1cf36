/**
 * Where a registry commit cycle's CPU goes, thread by thread: the registry and the protocol floor
 * (`registry/floor.ts`) each run serial cycles (propose → 2 approvals signed here → commit, the
 * bench's 4 requests; or 2 with the approvals carried by the commit), in alternating rounds after
 * a warm-up, and this prints per cycle, summed over the rounds:
 *
 * - CPU time per thread group (the main thread; the libuv pool — fs calls, fdatasync; the rest:
 *   V8's platform workers — GC helpers, concurrent compilers — and node's own threads),
 *   from `/proc/<pid>/task/<tid>/schedstat` (ns on the CPU), and user/system from `stat` (ticks);
 * - context switches per cycle (voluntary, involuntary: `status`), the wall time per cycle and
 *   each request's time as the client sees it (mean, p50, p90 by step);
 * - with `COMMIT_COST_NODE_FLAGS=--trace-gc`, the GC lines (`COMMIT_COST_COUNT`, default
 *   `Scavenge|Mark-Compact`) per 1,000 cycles; `COMMIT_COST_LOG=<prefix>` appends each server's
 *   stdout (the trace) to `<prefix>.floor` and `<prefix>.registry`, with a line
 *   `@@counted cycles start here` after the warm-up.
 *
 *   npx tsx bench/tools/commit-cost.ts [cycles=2000] [rounds=4] [requests per cycle: 4|2]
 *
 * `COMMIT_COST_FAULTS=1` counts page faults per cycle too (`perf stat -e page-faults` per round).
 * `COMMIT_COST_EXTRA=<name>:<factory>,…` adds contenders (factories under `bench/servers/`; an
 * A/B of two builds in the same rounds). `COMMIT_COST_WARMUP=<cycles>` (default 500, as short as the bench's warm-up: V8 still
 * compiles for a few thousand cycles more, on its worker threads; 5000 for the steady state).
 * `COMMIT_COST_GAP_MS=<ms>`: an idle pause after each round (the bench's commit rows alternate
 * 1 s rounds of five contenders, so each server idles about 4 s between its rounds).
 *
 * `COMMIT_COST_PERF=<prefix>` then records a sampled profile of each server's main thread over
 * one more round (`perf record -g`, cpu-clock) to `<prefix>.floor` and `<prefix>.registry`; with
 * `COMMIT_COST_NODE_FLAGS=--perf-basic-prof`, JIT frames are named.
 *
 * CPU per cycle does not depend on the machine's load as much as rates do (the wall time does).
 * Syscalls per cycle: `strace-commit.ts`; main-thread instructions: `callgrind-commit.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, signApproval, type DescriptorSet, type RegistryClient } from '@ron/registry'
import { benchSigners } from '../lib/registry-log.js'
import { untilListening } from '../lib/callgrind-server.js'
import { SERVER_CODE, SERVER_HEAP_GROWTH, SERVER_TSCONFIG, SERVER_YOUNG_GROWTH, fromBench } from '../lib/process.js'
import { readThreads } from '../lib/threads.js'
import { ORIGIN } from '../servers/registry/shared.js'

const [n = '2000', r = '4', perCycle = '4'] = process.argv.slice(2)
const cycles = Number(n)
const rounds = Number(r)
// Cycles before the counted ones (V8 still optimises functions that turn hot late for a few thousand).
const warmup = Number(process.env.COMMIT_COST_WARMUP ?? 500)
// The bench's commit rows alternate 1 s rounds of 5 contenders: each server idles ~4 s between them.
const gapMs = Number(process.env.COMMIT_COST_GAP_MS ?? 0)
const flags = (process.env.COMMIT_COST_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')
const counted = new RegExp(process.env.COMMIT_COST_COUNT ?? 'Scavenge|Mark-Compact', 'g')
const dir = mkdtempSync(join(tmpdir(), 'ron-commit-cost-'))
const { keys, signers } = benchSigners()

interface Server {
  name: string
  child: ChildProcess
  pid: string
  client: RegistryClient
  transport: HttpTransport
  gcLines: number
  /** Per thread group: ns on the CPU, user ticks, system ticks; and switches, wall ms, cycles. */
  groups: Map<string, { ns: number; user: number; sys: number }>
  voluntary: number
  involuntary: number
  wallMs: number
  done: number
  steps: Steps
  faults: number
}

interface ThreadSample {
  group: string
  ns: number
  user: number
  sys: number
  voluntary: number
  involuntary: number
}

/** Threads of the libuv pool (created on its first use, after every thread node starts with). */
const POOL = Number(process.env.UV_THREADPOOL_SIZE ?? 4)

function sample(pid: string): Map<string, ThreadSample> {
  // Node 20 names no thread: tell them apart by creation order (tids ascend). The main thread,
  // then V8's platform workers (GC helpers, concurrent compilers) and node's own, then the pool.
  const threads = readThreads(pid, true)
  const out = new Map<string, ThreadSample>()
  for (const { tid, rank, ...counters } of threads) {
    out.set(tid, { group: tid === pid ? 'main' : rank >= threads.length - POOL ? 'libuv pool' : 'V8 workers, node', ...counters })
  }
  return out
}

async function start(name: string, factory: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    [...flags, '--import', 'tsx', fileURLToPath(new URL('./callgrind-child.ts', import.meta.url)), fromBench(`./servers/${factory}`), JSON.stringify({ dir: join(dir, name), signers })],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH, RON_BENCH_YOUNG_GROWTH: SERVER_YOUNG_GROWTH, TSX_TSCONFIG_PATH: SERVER_TSCONFIG },
    },
  )
  const [url, pid, extraJson] = await untilListening(child)
  const s: Server = {
    name,
    child,
    pid,
    transport: new HttpTransport({ targets: { registry: url } }),
    client: undefined as unknown as RegistryClient,
    gcLines: 0,
    groups: new Map(),
    voluntary: 0,
    involuntary: 0,
    wallMs: 0,
    done: 0,
    steps: { propose: [], approve: [], commit: [] },
    faults: 0,
  }
  s.client = createRegistryClient(s.transport, { token: String((JSON.parse(extraJson) as { token?: string }).token) })
  const log = process.env.COMMIT_COST_LOG === undefined ? undefined : `${process.env.COMMIT_COST_LOG}.${name}`
  child.stdout.on('data', (d: Buffer) => {
    s.gcLines += (d.toString().match(counted) ?? []).length
    if (log !== undefined) appendFileSync(log, d)
  })
  return s
}

let i = 0
const payload = (k: number): DescriptorSet => ({
  schemaVersion: 1,
  items: [{ kind: 'service', name: `storage.node-${k}`, service: 'storage', node: `node-${k}`, endpoint: `http://10.0.${(k >> 8) & 255}.${k & 255}:7701` }],
})
/** Milliseconds of each request of the counted cycles, by step (propose, approve, commit). */
type Steps = Record<'propose' | 'approve' | 'commit', number[]>
async function cycle(client: RegistryClient, steps?: Steps): Promise<void> {
  let t = performance.now()
  const lap = (step: keyof Steps): void => {
    const now = performance.now()
    steps?.[step].push(now - t)
    t = now
  }
  const p = await client.propose(payload(++i))
  lap('propose')
  const approvals = keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
  if (perCycle === '2') {
    t = performance.now()
    await client.commit(p.proposalId, { approvals })
    lap('commit')
    return
  }
  for (const a of approvals) {
    t = performance.now()
    await client.approve(p.proposalId, a)
    lap('approve')
  }
  await client.commit(p.proposalId)
  lap('commit')
}

async function round(s: Server, count: number): Promise<void> {
  const gc0 = s.gcLines
  // Page faults per cycle, every thread (perf's software counter), with COMMIT_COST_FAULTS=1.
  const out = join(dir, `${s.name}.perf`)
  const perf = process.env.COMMIT_COST_FAULTS === '1' ? spawn('perf', ['stat', '-x', ',', '-e', 'page-faults', '-o', out, '-p', s.pid], { stdio: 'ignore' }) : undefined
  if (perf !== undefined) await new Promise((resolve) => setTimeout(resolve, 200))
  const t0 = sample(s.pid)
  const w0 = performance.now()
  for (let k = 0; k < count; k++) await cycle(s.client, s.steps)
  s.wallMs += performance.now() - w0
  if (perf !== undefined) {
    perf.kill('SIGINT')
    await new Promise((resolve) => perf.once('exit', resolve))
    s.faults += Number(/^(\d+),/m.exec(readFileSync(out, 'utf8'))?.[1] ?? 0)
  }
  const t1 = sample(s.pid)
  s.gcLines = gc0 + (s.gcLines - gc0)
  for (const [tid, a] of t1) {
    const b = t0.get(tid) ?? { ns: 0, user: 0, sys: 0, voluntary: 0, involuntary: 0 }
    const g = s.groups.get(a.group) ?? { ns: 0, user: 0, sys: 0 }
    g.ns += a.ns - b.ns
    g.user += a.user - b.user
    g.sys += a.sys - b.sys
    s.groups.set(a.group, g)
    s.voluntary += a.voluntary - b.voluntary
    s.involuntary += a.involuntary - b.involuntary
  }
  s.done += count
}

// COMMIT_COST_EXTRA=name:factory,…: more contenders (a factory under bench/servers/, e.g. a build
// of another commit for an A/B in the same rounds).
const extra = (process.env.COMMIT_COST_EXTRA ?? '').split(',').filter((x) => x !== '').map((x) => x.split(':') as [string, string])
const servers = [await start('floor', 'registry/floor.ts'), await start('registry', 'registry/registry.ts')]
for (const [name, factory] of extra) servers.push(await start(name, factory))
const load0 = loadavg()
const per = Math.ceil(cycles / rounds)
try {
  for (const s of servers) for (let k = 0; k < warmup; k++) await cycle(s.client)
  for (const s of servers) {
    s.gcLines = 0
    if (process.env.COMMIT_COST_LOG !== undefined) appendFileSync(`${process.env.COMMIT_COST_LOG}.${s.name}`, '@@counted cycles start here\n')
  }
  for (let k = 0; k < rounds; k++) {
    // The order rotates: each contender runs first, last and in between in turn.
    for (const s of [...servers.slice(k % servers.length), ...servers.slice(0, k % servers.length)]) {
      await round(s, per)
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
    }
  }
  if (process.env.COMMIT_COST_PERF !== undefined) {
    // A sampled profile of each main thread over one more round (not in the figures above).
    for (const s of servers) {
      const rec = spawn('perf', ['record', '-F', '4999', '-e', 'cpu-clock', '-g', '-o', `${process.env.COMMIT_COST_PERF}.${s.name}`, '-t', s.pid], { stdio: 'ignore' })
      await new Promise((resolve) => setTimeout(resolve, 500))
      for (let k = 0; k < per; k++) await cycle(s.client)
      rec.kill('SIGINT')
      await new Promise((resolve) => rec.once('exit', resolve))
    }
  }
} finally {
  for (const s of servers) {
    await s.transport.close()
    s.child.kill('SIGTERM')
    await new Promise((resolve) => s.child.once('exit', resolve))
  }
}

console.log(`${perCycle} requests per cycle, ${rounds} alternating rounds${gapMs > 0 ? ` (${gapMs} ms idle after each)` : ''}, servers on ${SERVER_CODE}, node flags: ${flags.join(' ') || '(none)'}; load average ${load0.map((x) => x.toFixed(1)).join(' ')} → ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
const floorTotal = [...servers[0]!.groups.values()].reduce((a, g) => a + g.ns, 0) / servers[0]!.done
for (const s of servers) {
  const us = (ns: number): string => (ns / 1000 / s.done).toFixed(1)
  const total = [...s.groups.values()].reduce((a, g) => a + g.ns, 0)
  const user = [...s.groups.values()].reduce((a, g) => a + g.user, 0)
  const sys = [...s.groups.values()].reduce((a, g) => a + g.sys, 0)
  console.log(`\n== ${s.name}: ${s.done} cycles, ${(s.wallMs / s.done).toFixed(2)} ms/cycle (${((s.done * 1000) / s.wallMs).toFixed(0)} cycles/s)`)
  console.log(`CPU per cycle: ${us(total)} µs (${(total / s.done / floorTotal).toFixed(2)}× the floor; user ${((user * 10_000) / s.done).toFixed(0)}, system ${((sys * 10_000) / s.done).toFixed(0)} µs from ticks)`)
  for (const [group, g] of [...s.groups].sort((a, b) => b[1].ns - a[1].ns)) {
    if (g.ns === 0) continue
    console.log(`  ${group.padEnd(18)} ${us(g.ns).padStart(8)} µs  (user ${((g.user * 10_000) / s.done).toFixed(0)}, system ${((g.sys * 10_000) / s.done).toFixed(0)})`)
  }
  const q = (xs: number[], f: number): string => ([...xs].sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))] ?? 0).toFixed(2)
  const mean = (xs: number[]): string => (xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length)).toFixed(2)
  console.log(`request ms (client side), mean / p50 / p90: ${Object.entries(s.steps).filter(([, xs]) => xs.length > 0).map(([k, xs]) => `${k} ${mean(xs)} / ${q(xs, 0.5)} / ${q(xs, 0.9)}`).join('; ')}`)
  console.log(`context switches per cycle: voluntary ${(s.voluntary / s.done).toFixed(2)}, involuntary ${(s.involuntary / s.done).toFixed(2)}${process.env.COMMIT_COST_FAULTS === '1' ? `; page faults per cycle ${(s.faults / s.done).toFixed(2)}` : ''}`)
  if (flags.some((f) => f.startsWith('--trace'))) console.log(`${counted.source} lines per 1,000 cycles: ${((s.gcLines * 1000) / s.done).toFixed(1)}`)
}
rmSync(dir, { recursive: true, force: true })
