/**
 * Instructions per request on a server's main thread, counted by callgrind: the one measure that
 * stayed stable (within 0.3% between runs) on a busy 2-core box where req/s and /proc CPU moved
 * 20–30%. The server runs a bench factory under `valgrind --tool=callgrind` (about 50x slower),
 * takes a warm-up of autocannon requests, then callgrind counts `requests` more.
 *
 *   npx tsx bench/callgrind.ts <factory in bench/servers> [path=/hello] [requests=10000] [options-json]
 *   npx tsx bench/callgrind.ts bare.ts
 *   npx tsx bench/callgrind.ts ron-hello.ts /hello 10000 '{"mode":"service"}'
 *
 * JIT frames are named (`--perf-basic-prof`), so `callgrind_annotate <the printed file>` shows
 * which functions the instructions are in. Needs valgrind (Debian: `apt install valgrind`).
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { SERVER_CODE, SERVER_HEAP_GROWTH } from './process.js'

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url))
const [factory = 'bare.ts', path = '/hello', n = '10000', optionsJson = '{}'] = process.argv.slice(2)
const requests = Number(n)
const dir = mkdtempSync(join(tmpdir(), 'ron-callgrind-'))
const child = spawn(
  'valgrind',
  ['--tool=callgrind', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${dir}/cg.%p`, process.execPath, '--import', 'tsx', '--perf-basic-prof', '--no-logfile-per-isolate', `--logfile=${dir}/v8.log`, here('./callgrind-child.ts'), here(`./servers/${factory}`), optionsJson],
  {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH, ...(SERVER_CODE === 'dist' ? { TSX_TSCONFIG_PATH: here('./tsconfig.dist.json') } : {}) },
  },
)
let stderr = ''
child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
const [url, pid] = await new Promise<[string, string]>((resolve, reject) => {
  let out = ''
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString()
    const m = /LISTENING (\S+) (\d+)/.exec(out)
    if (m) resolve([m[1]!, m[2]!])
  })
  child.once('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${stderr.slice(-2000)}`)))
})
const load = (amount: number): ReturnType<typeof autocannon> => autocannon({ url: url + path, connections: 50, amount })
await load(Math.max(3000, requests / 2))
execFileSync('callgrind_control', ['-z', pid], { stdio: 'ignore' })
const r = await load(requests)
execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' })
process.kill(Number(pid), 'SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))

// One file per thread and dump: <pid>.<dump>-<thread>; thread 01 is the main thread.
const totals = readdirSync(dir)
  .filter((f) => /\.\d+-\d+$/.test(f))
  .map((f) => ({ f, thread: f.slice(f.lastIndexOf('-') + 1), ir: Number((/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, f), 'utf8')) ?? [])[1] ?? 0) }))
const dump = totals.filter((t) => t.thread === '01').sort((a, b) => b.ir - a.ir)[0]
if (dump === undefined) throw new Error(`no callgrind dump in ${dir}`)
const prefix = dump.f.slice(0, dump.f.lastIndexOf('-'))
const others = totals.filter((t) => t.f.startsWith(prefix) && t.thread !== '01').reduce((a, t) => a + t.ir, 0)
console.log(`${factory} ${optionsJson} ${path}: ${r.requests.total} requests (${r.non2xx} non-2xx), servers on ${SERVER_CODE}`)
console.log(`main thread ${(dump.ir / requests).toFixed(0)} instructions/request, other threads ${(others / requests).toFixed(0)}; profile: ${join(dir, dump.f)}`)
