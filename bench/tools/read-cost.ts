/**
 * Where a read request's cost goes, beyond main-thread instructions: for the registry and its
 * bare baseline (`registry/bare-read.ts`, the same bytes), each serving `path` (default
 * `/registry/head`) — CPU per request per thread (user+system, from /proc/<pid>/task/* /stat),
 * syscalls per request (strace `-f -c`, every thread), and response bytes.
 *
 *   npx tsx bench/tools/read-cost.ts [path=/registry/head] [requests=20000]
 *
 * Also per request: perf's software counters (task-clock, page faults, context switches) and the
 * idle CPU over 5 s after a warm-up. The registry gets 256 entries first (the bench's HEAD).
 *
 * `READ_COST_NODE_FLAGS` adds node flags to both servers (e.g. `--single-threaded-gc`; with a
 * `--trace…` flag, lines matching `READ_COST_COUNT` (default `Scavenge`) are counted per 10k
 * requests, and shown with `READ_COST_SHOW=1`). `READ_COST_PERF=<prefix>` records a sampled main-thread
 * profile (`perf record`, use `--perf-basic-prof`) to `<prefix>.bare` and `<prefix>.registry`.
 * `READ_COST_CALLGRIND=1` instead runs both under callgrind (warm-up `RON_CALLGRIND_WARMUP`,
 * default 15,000) and prints every event per request on the main thread; with
 * `RON_CALLGRIND_ARGS=--cache-sim=yes`, I1/D1/LL misses too. Needs strace and perf.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { HttpTransport } from '@ron/core'
import { createRegistryClient } from '@ron/registry'
import { benchSigners, fillLog } from '../lib/registry-log.js'
import { startUnderCallgrind, untilListening } from '../lib/callgrind-server.js'
import { printStraceSummary } from '../lib/strace.js'
import { readThreads } from '../lib/threads.js'
import { SERVER_CODE, SERVER_HEAP_GROWTH, SERVER_TSCONFIG, SERVER_YOUNG_GROWTH, fromBench } from '../lib/process.js'

const [path = '/registry/head', n = '20000'] = process.argv.slice(2)
const requests = Number(n)
const flags = (process.env.READ_COST_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')
const dir = mkdtempSync(join(tmpdir(), 'ron-read-cost-'))
const { keys, signers } = benchSigners()

let gcLines = 0
const counted = new RegExp(process.env.READ_COST_COUNT ?? 'Scavenge', 'g')
const traceLog: string[] = []
function start(factory: string, options: unknown): Promise<[ChildProcess, string, string, string]> {
  const child = spawn(
    process.execPath,
    [...flags, '--import', 'tsx', fileURLToPath(new URL('./callgrind-child.ts', import.meta.url)), fromBench(`./servers/${factory}`), JSON.stringify(options)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH,
        RON_BENCH_YOUNG_GROWTH: SERVER_YOUNG_GROWTH,
        TSX_TSCONFIG_PATH: SERVER_TSCONFIG,
      },
    },
  )
  return untilListening(child).then(([url, pid, extra]) => {
    child.stdout.on('data', (d: Buffer) => {
      const text = d.toString()
      const m = text.match(counted) ?? []
      gcLines += m.length
      if (m.length > 0 && process.env.READ_COST_SHOW === '1') traceLog.push(...text.split('\n').filter((l) => counted.test(l)))
    })
    return [child, url, pid, extra]
  })
}

/** Per thread: [main thread or other, user ticks + system ticks]; `system` alone with `sys`. */
function threadTicks(pid: string, sys = false): Map<string, [name: string, ticks: number]> {
  return new Map(readThreads(pid).map((t) => [t.tid, [t.tid === pid ? 'main' : 'other threads', (sys ? 0 : t.user) + t.sys]]))
}

const load = (url: string, amount: number): Promise<unknown> => autocannon({ url: url + path, connections: 50, amount })

async function measure(name: string, child: ChildProcess, url: string, pid: string): Promise<void> {
  await load(url, 20000)
  // Idle CPU over 5 s.
  const idle0 = threadTicks(pid)
  await new Promise((r) => setTimeout(r, 5000))
  const idle1 = threadTicks(pid)
  let idle = 0
  for (const [tid, [, t]] of idle1) idle += t - (idle0.get(tid)?.[1] ?? 0)
  // CPU per thread under load.
  gcLines = 0
  const t0 = threadTicks(pid)
  const s0 = threadTicks(pid, true)
  const r0 = process.hrtime.bigint()
  await load(url, requests)
  const secs = Number(process.hrtime.bigint() - r0) / 1e9
  const t1 = threadTicks(pid)
  const s1 = threadTicks(pid, true)
  let system = 0
  for (const [tid, [, t]] of s1) system += t - (s0.get(tid)?.[1] ?? 0)
  const gcs = gcLines
  const byName = new Map<string, number>()
  let total = 0
  for (const [tid, [tname, t]] of t1) {
    const d = t - (t0.get(tid)?.[1] ?? 0)
    total += d
    byName.set(tname, (byName.get(tname) ?? 0) + d)
  }
  const us = (ticks: number): string => ((ticks * 10_000) / requests).toFixed(1) // 100 Hz ticks
  console.log(`\n== ${name} (pid ${pid}): ${requests} requests in ${secs.toFixed(2)} s, ${(requests / secs).toFixed(0)} req/s; idle CPU ${idle * 10} ms / 5 s`)
  console.log(
    `CPU per request (user+system, µs): total ${us(total)} (system ${us(system)}); ${[...byName]
      .filter(([, d]) => d > 0)
      .map(([k, d]) => `${k} ${us(d)}`)
      .join(', ')}`,
  )
  if (flags.some((f) => f.startsWith('--trace'))) console.log(`${counted.source} lines per 10k requests: ${((gcs * 10000) / requests).toFixed(1)}`)
  if (process.env.READ_COST_SHOW === '1') console.log(traceLog.splice(0).slice(0, 40).join('\n'))
  if (process.env.READ_COST_PERF !== undefined) {
    // A sampled CPU profile of the main thread (run with READ_COST_NODE_FLAGS=--perf-basic-prof).
    const rec = spawn('perf', ['record', '-F', '4999', '-e', 'cpu-clock', '-g', '-o', `${process.env.READ_COST_PERF}.${name}`, '-t', pid], { stdio: 'ignore' })
    await new Promise((r) => setTimeout(r, 500))
    await load(url, requests)
    rec.kill('SIGINT')
    await new Promise((resolve) => rec.once('exit', resolve))
  }
  // Page faults and context switches per request (perf's software counters, every thread).
  const perfOut = join(dir, `${name}.perf`)
  const perf = spawn('perf', ['stat', '-x', ',', '-e', 'task-clock,page-faults,context-switches,cpu-migrations', '-o', perfOut, '-p', pid], { stdio: 'ignore' })
  await new Promise((r) => setTimeout(r, 300))
  await load(url, requests)
  perf.kill('SIGINT')
  await new Promise((resolve) => perf.once('exit', resolve))
  console.log(
    readFileSync(perfOut, 'utf8')
      .split('\n')
      .filter((l) => /^[\d.]+,/.test(l))
      .map((l) => {
        const [v, , ev] = l.split(',')
        return `${ev}: ${((Number(v) * (ev === 'task-clock' ? 1000 : 1)) / requests).toFixed(3)}${ev === 'task-clock' ? ' µs' : ''}/request`
      })
      .join(', '),
  )
  // Syscalls per request.
  const summary = join(dir, `${name}.strace`)
  const strace = spawn('strace', ['-f', '-c', '-S', 'calls', '-o', summary, '-p', pid], { stdio: ['ignore', 'ignore', 'pipe'] })
  await new Promise<void>((resolve) => {
    let err = ''
    strace.stderr.on('data', (d: Buffer) => {
      err += d.toString()
      if (err.includes('attached')) setTimeout(resolve, 500)
    })
  })
  await load(url, 5000)
  strace.kill('SIGINT')
  await new Promise((resolve) => strace.once('exit', resolve))
  printStraceSummary(summary, 5000, 'request')
}

const [reg, regUrl, regPid, extraJson] = await start('registry/registry.ts', {
  dir: join(dir, 'data'),
  signers,
})
const transport = new HttpTransport({ targets: { registry: regUrl } })
const client = createRegistryClient(transport, {
  token: String((JSON.parse(extraJson) as { token: string }).token),
})
await fillLog(client, keys, 256)
const head = await client.head()
const tile = await client.tile('tile/0/000')
await transport.close()
if (process.env.READ_COST_CALLGRIND === '1') {
  // Both servers under callgrind (RON_CALLGRIND_ARGS=--cache-sim=yes for cache misses): events per request, main thread.
  await new Promise((r) => setTimeout(r, 1000))
  reg.kill('SIGTERM')
  await new Promise((resolve) => reg.once('exit', resolve))
  const warm = Number(process.env.RON_CALLGRIND_WARMUP ?? 15000)
  await Promise.all(
    [
      ['registry/bare-read.ts', { head, tile: Buffer.from(tile).toString('base64') }],
      ['registry/registry.ts', { dir: join(dir, 'data'), signers }],
    ].map(async ([factory, options]) => {
      const cg = mkdtempSync(join(tmpdir(), 'ron-read-cg-'))
      const s = await startUnderCallgrind(cg, factory as string, options)
      await autocannon({ url: s.url + path, connections: 50, amount: warm })
      execFileSync('callgrind_control', ['-z', s.pid], { stdio: 'ignore' })
      const r = await autocannon({
        url: s.url + path,
        connections: 50,
        amount: requests,
      })
      execFileSync('callgrind_control', ['-d', s.pid], { stdio: 'ignore' })
      s.child.kill('SIGTERM')
      await new Promise((resolve) => s.child.once('exit', resolve))
      const files = readdirSync(cg)
        .filter((f) => /\.\d+-01$/.test(f))
        .map((f) => readFileSync(join(cg, f), 'utf8'))
      const best = files
        .map((t) => [t, /^events: (.*)$/m.exec(t)?.[1]?.split(' ') ?? [], (/^(?:summary|totals): (.*)$/m.exec(t)?.[1] ?? '').split(' ').map(Number)] as const)
        .sort((a, b) => (b[2][0] ?? 0) - (a[2][0] ?? 0))[0]!
      console.log(
        `${factory as string} (${r.requests.total} answered), main thread per request: ${best[1]
          .map((e, i) => `${e} ${((best[2][i] ?? 0) / r.requests.total).toFixed(1)}`)
          .join(', ')}; ${cg}`,
      )
    }),
  )
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}
const [bare, bareUrl, barePid] = await start('registry/bare-read.ts', {
  head,
  tile: Buffer.from(tile).toString('base64'),
})
console.log(`${path}, servers on ${SERVER_CODE}, node flags: ${flags.join(' ') || '(none)'}`)
for (const u of [bareUrl, regUrl]) {
  const r = await fetch(u + path)
  const b = await r.arrayBuffer()
  console.log(`${u}: ${[...r.headers].map(([k, v]) => `${k}: ${v}`).join('; ')} (body ${b.byteLength})`)
}
await measure('bare', bare, bareUrl, barePid)
await measure('registry', reg, regUrl, regPid)
for (const c of [bare, reg]) {
  c.kill('SIGTERM')
  await new Promise((resolve) => c.once('exit', resolve))
}
rmSync(dir, { recursive: true, force: true })
