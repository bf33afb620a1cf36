/**
 * Syscalls per registry commit cycle, counted by strace on the server process (every thread):
 * the disk syncs, file opens and thread-pool wake-ups a CPU profile does not show. The registry
 * (or the protocol floor) runs a warm-up of serial cycles (propose → 2 approvals → commit, the
 * bench's 4 requests), then strace attaches (`-f -p`: every thread) for `cycles` more and this
 * prints the calls per cycle of every syscall seen.
 *
 *   npx tsx bench/tools/strace-commit.ts [registry|floor] [cycles=200]
 *
 * `STRACE_LOG=<file>` keeps a timed trace (`-ttt -T`) of every call instead, for reading by hand.
 * Needs strace; the bench runs as root, so strace may attach.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, signApproval, type DescriptorSet } from '@ron/registry'
import { benchSigners } from '../lib/registry-log.js'
import { untilListening } from '../lib/callgrind-server.js'
import { printStraceSummary } from '../lib/strace.js'
import { SERVER_CODE, SERVER_HEAP_GROWTH, SERVER_TSCONFIG, SERVER_YOUNG_GROWTH, fromBench } from '../lib/process.js'
import { ORIGIN } from '../servers/registry/shared.js'

const [which = 'registry', n = '200'] = process.argv.slice(2)
const cycles = Number(n)
const dir = mkdtempSync(join(tmpdir(), 'ron-strace-commit-'))
const { keys, signers } = benchSigners()
const factory = `registry/${which === 'floor' ? 'floor' : 'registry'}.ts`
const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./callgrind-child.ts', import.meta.url)), fromBench(`./servers/${factory}`), JSON.stringify({ dir: join(dir, 'data'), signers })], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH, RON_BENCH_YOUNG_GROWTH: SERVER_YOUNG_GROWTH, TSX_TSCONFIG_PATH: SERVER_TSCONFIG },
})
const [url, pid, extraJson] = await untilListening(child)
const extra = JSON.parse(extraJson) as { token?: string }
const transport = new HttpTransport({ targets: { registry: url } })
const client = createRegistryClient(transport, { token: String(extra.token) })
let i = 0
const payload = (k: number): DescriptorSet => ({
  schemaVersion: 1,
  items: [{ kind: 'service', name: `storage.node-${k}`, service: 'storage', node: `node-${k}`, endpoint: `http://10.0.${(k >> 8) & 255}.${k & 255}:7701` }],
})
async function cycle(): Promise<void> {
  const p = await client.propose(payload(++i))
  for (const k of keys.slice(0, 2)) await client.approve(p.proposalId, signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
  await client.commit(p.proposalId)
}

for (let k = 0; k < 500; k++) await cycle()
const summary = join(dir, 'summary.txt')
const args = process.env.STRACE_LOG === undefined ? ['-f', '-c', '-S', 'calls', '-o', summary, '-p', pid] : ['-f', '-ttt', '-T', '-o', process.env.STRACE_LOG, '-p', pid]
const strace = spawn('strace', args, { stdio: ['ignore', 'ignore', 'pipe'] })
// strace says it attached (on stderr) once per thread; give it the time to reach them all.
await new Promise<void>((resolve) => {
  let err = ''
  strace.stderr.on('data', (d: Buffer) => {
    err += d.toString()
    if (err.includes('attached')) setTimeout(resolve, 500)
  })
})
for (let k = 0; k < cycles; k++) await cycle()
strace.kill('SIGINT')
await new Promise((resolve) => strace.once('exit', resolve))
await transport.close()
child.kill('SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))

console.log(`${which}: ${cycles} commit cycles (4 requests each), servers on ${SERVER_CODE}`)
if (process.env.STRACE_LOG !== undefined) {
  console.log(`trace: ${process.env.STRACE_LOG}`)
} else {
  printStraceSummary(summary, cycles, 'cycle')
}
rmSync(dir, { recursive: true, force: true })
