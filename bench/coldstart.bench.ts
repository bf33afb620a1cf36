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
 * The built `ron-node start` (cli) is measured by the integrator: `RON_COLDSTART_CLI=1` adds it
 * (needs `npm run build`), timed to its JSON ready line.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FULL, median } from './harness.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
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
    if (process.env.RON_COLDSTART_CLI === '1') {
      cases.push(['ron-node start (built cli) → ready line', `import { spawn } from 'node:child_process'; const c = spawn(process.execPath, ['packages/cli/dist/bin.js', 'start', '--port-base', '0', '--json', '--data-dir', ${JSON.stringify(join(dir, 'node'))} + process.pid], { stdio: ['ignore', 'pipe', 'inherit'] }); c.stdout.on('data', (d) => { if (String(d).includes('{')) { console.log('READY 0'); c.kill() } })`])
    }
    const base = await medianOf(cases[0]![1])
    for (const [name, code] of cases) {
      try {
        const t = name === cases[0]![0] ? base : await medianOf(code)
        console.log(`${name.padEnd(44)} ${t.toFixed(0).padStart(6)} ms  (+${(t - base).toFixed(0)} ms over bare)`)
      } catch (e) {
        console.log(`${name.padEnd(44)} (failed: ${String(e).split('\n')[0]}; built? npm run build -w @ron/core -w @ron/storage)`)
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
