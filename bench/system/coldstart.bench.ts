/**
 * Cold start (issue 10 item 6): where the time from process start to "listening" goes. Each
 * figure is the median of fresh plain `node` processes running the BUILT packages (`dist/`:
 * `npm run build -w @ron/core -w @ron/storage` at least; a package without a build is reported
 * as such), after one warm-up run for the page cache:
 *
 * - time to `import()` each module a node loads (every `@ron/*` package and the heavy third-party
 *   ones), each in its own process;
 * - process start → listening, for a bare `node:http` listener, a RON service host with a hello
 *   route, and the storage service on a fresh data directory.
 *
 * Issue 24's rows, with their baselines in the same run, when the CLI is built (`npm run build`;
 * skipped with a note otherwise):
 *
 * - `ron-node start` (five services, fresh data directory) to its JSON ready line vs a bare
 *   `node` process listening on six ports (goal ≤ 5×);
 * - `ron-node put` of a 4 KiB file through the executable npm links (`bin/ron-node.js`), against a running node, vs `node -e 0`
 *   (goal ≤ 4×);
 * - `npm start` on the already-built tree (its freshness check, then `ron-node start`) to the same
 *   ready line vs `ron-node start` (goal ≤ 2×); a start whose freshness check rebuilt a package
 *   fails the row instead of timing the build.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FULL, median } from '../lib/harness.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const RUNS = FULL ? 7 : 3

/** Runs `code` (an ES module body) in a fresh `node`; returns its `TOOK n` figure, or the wall time to its `READY` line. */
function runFresh(code: string, args: string[] = []): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, ['--input-type=module', '-e', code, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    child.on('exit', () => clearTimeout(timer))
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /READY (\d+(?:\.\d+)?)/.exec(out)
      if (m) {
        // Wall time from spawn to the ready line, as the parent saw it.
        resolve(performance.now() - t0)
        child.kill()
      }
    })
    child.on('exit', () => {
      const m = /TOOK (\d+(?:\.\d+)?)/.exec(out)
      if (m) resolve(Number(m[1]))
      else reject(new Error(`no result from: ${code.slice(0, 80)}… ${out}`))
    })
  })
}

async function medianOf(code: string): Promise<number> {
  await runFresh(code) // warm the transpile cache and the page cache
  const xs: number[] = []
  for (let i = 0; i < RUNS; i++) xs.push(await runFresh(code))
  return median(xs)
}

const importCode = (spec: string): string =>
  `const t = performance.now(); await import(${JSON.stringify(spec)}); console.log('TOOK ' + (performance.now() - t)); process.exit(0)`

export async function run(): Promise<void> {
  console.log(`\n## Import time of each module in a fresh process (median of ${RUNS}, ms)`)
  const mods = ['node:http', 'zod', 'pino', 'prom-client', 'undici', 'yargs', 'lmdb', '@noble/curves/ed25519.js', '@ron/core', '@ron/storage', '@ron/registry', '@ron/passport', '@ron/index', '@ron/interop']
  for (const m of mods) {
    try {
      console.log(`${m.padEnd(30)} ${(await medianOf(importCode(m))).toFixed(1).padStart(8)}`)
    } catch (e) {
      console.log(`${m.padEnd(30)} (failed: ${String(e).split('\n')[0]})`)
    }
  }

  const dir = await mkdtemp(join(tmpdir(), 'ron-coldstart-'))
  try {
    console.log(`\n## Process start → listening (median of ${RUNS}, ms, wall time seen by the parent)`)
    const cases: Array<[string, string]> = [
      ['bare node:http listen', `import { createServer } from 'node:http'; createServer((q, s) => s.end()).listen(0, () => console.log('READY 0'))`],
      [
        'ron service host + hello',
        `import { createServiceHost, serve } from '@ron/core'; const h = createServiceHost({ id: 'x', version: '0', topology: { service: 'x', tasks: [], channels: [] } }); h.routes([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, json: {} }) }]); await serve(h.service, { port: 0 }); console.log('READY 0')`,
      ],
      [
        'storage service (fresh data dir)',
        `import { serve } from '@ron/core'; import { createStorageService } from '@ron/storage'; const s = await createStorageService({ dataDir: ${JSON.stringify(join(dir, 's'))} + process.pid }); await serve(s, { port: 0 }); console.log('READY 0')`,
      ],
    ]
    const base = await medianOf(cases[0]![1])
    for (const [name, code] of cases) {
      try {
        const t = name === cases[0]![0] ? base : await medianOf(code)
        console.log(`${name.padEnd(44)} ${t.toFixed(0).padStart(6)} ms  (+${(t - base).toFixed(0)} ms over bare)`)
      } catch (e) {
        console.log(`${name.padEnd(44)} (failed: ${String(e).split('\n')[0]}; built? npm run build -w @ron/core -w @ron/storage)`)
      }
    }
    if (existsSync(BUILT)) await cliRows(dir)
    else console.log(`\n(ron-node rows skipped: ${BUILT} is not built; npm run build)`)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const BUILT = join(ROOT, 'packages/cli/dist/bin.js')
/** The executable npm links (it tunes V8, then imports {@link BUILT}): what a user runs. */
const BIN = join(ROOT, 'packages/cli/bin/ron-node.js')

/** Wall time of `node <args>` from spawn to exit (ms); rejects on a non-zero exit. */
function timeExit(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(performance.now() - t0)
      else reject(new Error(`node ${args.join(' ')} exited ${code}: ${err.slice(-300)}`))
    })
  })
}

/** `ron-node start --data-dir <dataDir>`; resolves once it printed its JSON ready line. */
function startNode(dataDir: string): Promise<{ ms: number; stop: () => Promise<void> }> {
  return startUntilReady(process.execPath, [BIN, 'start', '--port-base', '0', '--json', '--data-dir', dataDir], 'ron-node start')
}

/**
 * `npm start` (the root script: the freshness check, then `bin/ron-node.js start`) with the same
 * arguments; resolves at the same JSON ready line. It runs in its own process group (npm, its
 * shell and the node), which `stop` ends; a freshness check that rebuilds a package rejects.
 */
function npmStart(dataDir: string): Promise<{ ms: number; stop: () => Promise<void> }> {
  return startUntilReady('npm', ['start', '--silent', '--', '--port-base', '0', '--json', '--data-dir', dataDir], 'npm start', true)
}

/** Spawns `command args` and resolves once it printed a JSON line (the ready line). */
function startUntilReady(command: string, args: string[], what: string, group = false): Promise<{ ms: number; stop: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: group })
    const kill = (signal: NodeJS.Signals): void => {
      if (group && child.pid !== undefined) process.kill(-child.pid, signal)
      else child.kill(signal)
    }
    const timer = setTimeout(() => kill('SIGKILL'), 60_000)
    const stop = (): Promise<void> =>
      new Promise((r) => {
        if (child.exitCode !== null || child.signalCode !== null) return r()
        child.once('exit', () => r())
        kill('SIGTERM')
      })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${what} exited (${code}) before its ready line`))
    })
    child.stderr.on('data', (d: Buffer) => {
      if (d.toString().includes('build-stale: building')) {
        kill('SIGKILL')
        reject(new Error(`${what} rebuilt a package: build the tree first (npm run build)`))
      }
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('{')) {
        clearTimeout(timer)
        resolve({ ms: performance.now() - t0, stop })
      }
    })
  })
}

/** Six ports listening in one fresh process, as ron-node's five services and admin listener. */
const SIX_PORTS = `import { createServer } from 'node:http'; let n = 0; for (let i = 0; i < 6; i++) createServer((q, s) => s.end()).listen(0, '127.0.0.1', () => { if (++n === 6) console.log('READY 0') })`

async function cliRows(dir: string): Promise<void> {
  // ron-node start vs six bare listeners, alternated; each start on a fresh data directory.
  const bare: number[] = []
  const ron: number[] = []
  await runFresh(SIX_PORTS)
  await (await startNode(join(dir, 'warm'))).stop()
  for (let i = 0; i < RUNS; i++) {
    bare.push(await runFresh(SIX_PORTS))
    const n = await startNode(join(dir, `start-${i}`))
    ron.push(n.ms)
    await n.stop()
  }
  console.log(`\n## ron-node start, five services on a fresh data dir → JSON ready line (${RUNS} runs alternated, ms, load ${loadavg()[0]!.toFixed(1)})`)
  console.log(row('bare node, six ports listening', bare))
  console.log(row('ron-node start', ron, bare, 'goal <= 5x'))

  // npm start on the built tree vs ron-node start, alternated: the freshness check finds nothing to build.
  const direct: number[] = []
  const viaNpm: number[] = []
  await (await npmStart(join(dir, 'npm-warm'))).stop()
  for (let i = 0; i < RUNS; i++) {
    const n = await startNode(join(dir, `direct-${i}`))
    direct.push(n.ms)
    await n.stop()
    const m = await npmStart(join(dir, `npm-${i}`))
    viaNpm.push(m.ms)
    await m.stop()
  }
  console.log(`\n## npm start on an already-built tree → the same ready line (${RUNS} runs alternated, ms, load ${loadavg()[0]!.toFixed(1)})`)
  console.log(row('ron-node start', direct))
  console.log(row('npm start (nothing rebuilt)', viaNpm, direct, 'goal <= 2x'))

  // ron-node put of a 4 KiB file against a running node vs node -e 0.
  const nodeDir = join(dir, 'put-node')
  const node = await startNode(nodeDir)
  try {
    const file = join(dir, 'four-kib')
    const puts: number[] = []
    const empty: number[] = []
    await timeExit(['-e', '0'])
    await writeFile(file, randomBytes(4096))
    await timeExit([BIN, 'put', file, '--data-dir', nodeDir])
    for (let i = 0; i < RUNS; i++) {
      empty.push(await timeExit(['-e', '0']))
      // Fresh content each time: a put of stored content is not the same work.
      await writeFile(file, randomBytes(4096))
      puts.push(await timeExit([BIN, 'put', file, '--data-dir', nodeDir]))
    }
    console.log(`\n## ron-node put of a 4 KiB file through the built bin, to a running node (${RUNS} runs alternated, wall ms, load ${loadavg()[0]!.toFixed(1)})`)
    console.log(row('node -e 0', empty))
    console.log(row('ron-node put (4 KiB)', puts, empty, 'goal <= 4x'))
  } finally {
    await node.stop()
  }
}

/** `name  median [min..max]`, and the ratio of medians to `base` when given. */
function row(name: string, xs: number[], base?: number[], goal?: string): string {
  const sorted = [...xs].sort((a, b) => a - b)
  const fig = `${median(xs).toFixed(0).padStart(6)} [${sorted[0]!.toFixed(0)}..${sorted[sorted.length - 1]!.toFixed(0)}]`
  return `${name.padEnd(44)} ${fig}${base === undefined ? '' : `  ${(median(xs) / median(base)).toFixed(2)}x${goal === undefined ? '' : ` (${goal})`}`}`
}
