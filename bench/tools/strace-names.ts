/**
 * Syscalls per name write, counted by strace on the server process (every thread): where a
 * sequential write's latency goes that a CPU profile does not show (fsyncs, commits, wake-ups).
 * The server runs a bench factory (`index/names.ts` or `baselines/lmdb.ts`), takes a warm-up of
 * writes, then strace attaches (`-f -p`: every thread) for `count` more, one at a time or
 * `concurrency` at once, and prints the calls per write and the time spent in each.
 *
 *   npx tsx bench/tools/strace-names.ts index/names.ts [count=200] [concurrency=1] [syscalls]
 *   npx tsx bench/tools/strace-names.ts baselines/lmdb.ts 200 1
 *
 * `syscalls` is strace's `-e trace=` list (default: the sync, write, map and wake-up calls);
 * `none` runs no strace and prints the rate and p50 of five rounds instead.
 * `STRACE_LOG=<file>` also keeps a timed trace (`-ttt -T`) of every call for reading by hand.
 * Needs strace (Debian: `apt install strace`); the bench runs as root, so strace may attach.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { untilListening } from '../lib/callgrind-server.js'
import { printStraceSummary } from '../lib/strace.js'
import { SERVER_CODE, SERVER_HEAP_GROWTH, SERVER_TSCONFIG, SERVER_YOUNG_GROWTH, fromBench } from '../lib/process.js'

const [factory = 'index/names.ts', n = '200', c = '1', traced = 'fdatasync,fsync,msync,pwrite64,pwritev,write,writev,futex,epoll_wait,io_uring_enter,mmap,munmap,madvise'] = process.argv.slice(2)
const count = Number(n)
const concurrency = Number(c)
const dir = mkdtempSync(join(tmpdir(), 'ron-strace-'))

const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./callgrind-child.ts', import.meta.url)), fromBench(`./servers/${factory}`), JSON.stringify({ dir })], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH, RON_BENCH_YOUNG_GROWTH: SERVER_YOUNG_GROWTH, TSX_TSCONFIG_PATH: SERVER_TSCONFIG },
})
const [url, pid, extraJson] = await untilListening(child)
const extra = JSON.parse(extraJson) as { token?: string; manifests?: string[] }
const manifests = extra.manifests ?? []
const headers = { 'content-type': 'application/json', ...(extra.token === undefined ? {} : { authorization: `Bearer ${extra.token}` }) }
let seq = 0
/** `amount` writes, `concurrency` at once; returns the per-write latencies in ms. */
async function writes(amount: number): Promise<number[]> {
  const lat: number[] = []
  let left = amount
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) {
        const i = ++seq
        const t = performance.now()
        const r = await fetch(`${url}/names/name-${i % 1000}.bench`, { method: 'PUT', headers, body: JSON.stringify({ manifestAddress: manifests[i % manifests.length] }) })
        await r.arrayBuffer()
        if (r.status !== 200) throw new Error(`write ${i}: ${r.status}`)
        lat.push(performance.now() - t)
      }
    }),
  )
  return lat
}

await writes(1000)
if (traced === 'none') {
  // Latency only, no strace: several rounds, so two servers can be compared in the same minute.
  for (let round = 0; round < 5; round++) {
    const t = performance.now()
    const l = (await writes(count)).sort((a, b) => a - b)
    console.log(`${factory} round ${round}: ${((count * 1000) / (performance.now() - t)).toFixed(0)} writes/s, p50 ${l[l.length >> 1]!.toFixed(2)} ms`)
  }
  child.kill('SIGTERM')
  await new Promise((resolve) => child.once('exit', resolve))
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}
const summary = join(dir, 'summary.txt')
const args = ['-f', '-c', '-S', 'calls', '-o', summary, '-e', `trace=${traced}`, '-p', pid]
const strace = spawn('strace', process.env.STRACE_LOG === undefined ? args : ['-f', '-ttt', '-T', '-o', process.env.STRACE_LOG, '-e', `trace=${traced}`, '-p', pid], { stdio: ['ignore', 'ignore', 'pipe'] })
// strace says it attached (on stderr) once per thread; give it the time to reach them all.
await new Promise<void>((resolve) => {
  let err = ''
  strace.stderr.on('data', (d: Buffer) => {
    err += d.toString()
    if (err.includes('attached')) setTimeout(resolve, 500)
  })
})
const lat = await writes(count)
strace.kill('SIGINT')
await new Promise((resolve) => strace.once('exit', resolve))
child.kill('SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))

lat.sort((a, b) => a - b)
const pct = (p: number): string => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))]!.toFixed(2)
console.log(`${factory}: ${count} writes, ${concurrency} at once, servers on ${SERVER_CODE}; latency under strace p50 ${pct(0.5)} ms, p95 ${pct(0.95)} ms`)
if (process.env.STRACE_LOG !== undefined) {
  console.log(`trace: ${process.env.STRACE_LOG}`)
} else {
  printStraceSummary(summary, count, 'write')
}
rmSync(dir, { recursive: true, force: true })
