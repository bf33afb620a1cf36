/**
 * Main-thread instructions per commit cycle, counted by callgrind (see `callgrind.ts`): the
 * registry (or the protocol floor) runs under `valgrind --tool=callgrind`, this process drives
 * serial commit cycles (propose → 2 approvals signed here → commit, the bench's 4 requests; or
 * the 2-request cycle with `2`) over HTTP, a warm-up first, then callgrind counts `cycles` more.
 *
 *   npx tsx bench/tools/callgrind-commit.ts [registry|floor] [cycles=300] [requests per cycle: 4|2]
 *
 * Wall time under valgrind says nothing; the instruction count is stable on a busy box.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport, isRonError } from '@ron/core'
import { createRegistryClient, signApproval, type DescriptorSet } from '@ron/registry'
import { benchSigners } from '../lib/registry-log.js'
import { startUnderCallgrind } from '../lib/callgrind-server.js'
import { SERVER_CODE } from '../lib/process.js'
import { ORIGIN } from '../servers/registry/shared.js'

const [which = 'registry', n = '300', perCycle = '4'] = process.argv.slice(2)
const cycles = Number(n)
const dir = mkdtempSync(join(tmpdir(), 'ron-callgrind-commit-'))
const { keys, signers } = benchSigners()
const { child, url, pid, extra } = await startUnderCallgrind(dir, `registry/${which === 'floor' ? 'floor' : 'registry'}.ts`, { dir: join(dir, 'data'), signers })
const transport = new HttpTransport({ targets: { registry: url } })
// A commit under valgrind on a busy box can outlast the registry's 5 s default deadline: the client
// asks for 60 s (`x-deadline-ms`, the most the registry grants); the floor ignores the header.
const client = createRegistryClient(transport, { token: String(extra.token), timeoutMs: 60_000 })
let i = 0
const payload = (k: number): DescriptorSet => ({
  schemaVersion: 1,
  items: [{ kind: 'service', name: `storage.node-${k}`, service: 'storage', node: `node-${k}`, endpoint: `http://10.0.${(k >> 8) & 255}.${k & 255}:7701` }],
})
let refused = 0
/**
 * Runs `step`, again after a second when the registry refuses it with 503 NotReady: under
 * valgrind on a busy box its write-health check can find the disk slow and refuse writes for a
 * while. Each refusal is counted and printed (it adds a refused request to the count).
 */
async function retried<T>(step: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await step()
    } catch (e) {
      if (!isRonError(e, 'NotReady') || ++refused > 100) throw e
      await new Promise((r) => setTimeout(r, 1000))
    }
  }
}
async function cycle(): Promise<void> {
  const p = await retried(() => client.propose(payload(++i)))
  const approvals = keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
  if (perCycle === '2') {
    await retried(() => client.commit(p.proposalId, { approvals }))
    return
  }
  for (const a of approvals) await retried(() => client.approve(p.proposalId, a))
  await retried(() => client.commit(p.proposalId))
}
try {
  // A long warm-up: the counted cycles run optimised code (fewer JIT compiles on other threads).
  for (let k = 0; k < Math.max(400, cycles); k++) await cycle()
  execFileSync('callgrind_control', ['-z', pid], { stdio: 'ignore' })
  refused = 0
  for (let k = 0; k < cycles; k++) await cycle()
  execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' })
} finally {
  // A failed cycle (a 503 when the registry finds its disk slow under valgrind) must not leave
  // the server running under valgrind.
  await transport.close()
  if (child.exitCode === null) {
    process.kill(Number(pid), 'SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
}

const totals = readdirSync(dir)
  .filter((f) => /\.\d+-\d+$/.test(f))
  .map((f) => ({ f, thread: f.slice(f.lastIndexOf('-') + 1), ir: Number((/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, f), 'utf8')) ?? [])[1] ?? 0) }))
const dump = totals.filter((t) => t.thread === '01').sort((a, b) => b.ir - a.ir)[0]
if (dump === undefined) throw new Error(`no callgrind dump in ${dir}`)
const prefix = dump.f.slice(0, dump.f.lastIndexOf('-'))
const others = totals.filter((t) => t.f.startsWith(prefix) && t.thread !== '01').reduce((a, t) => a + t.ir, 0)
console.log(`${which}, ${perCycle} requests per cycle: ${cycles} cycles, servers on ${SERVER_CODE}${refused === 0 ? '' : `, ${refused} requests refused (503 NotReady) and retried in the counted cycles`}`)
console.log(`main thread ${(dump.ir / cycles).toFixed(0)} instructions/cycle, other threads ${(others / cycles).toFixed(0)}; profile: ${join(dir, dump.f)}`)
