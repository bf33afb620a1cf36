/**
 * JS heap allocated per registry commit cycle (the bench's 4 requests: propose → 2 approvals signed
 * here → commit), in the server process: V8's sampling heap profiler counting collected objects
 * too, over `cycles` serial cycles after a warm-up, with the garbage collections seen and the
 * top allocating functions (self bytes per cycle).
 *
 *   npx tsx bench/tools/alloc-commit.ts [registry|floor] [cycles=2000] [top=25]
 *
 * Sampled (one sample per 4 KiB on average), so two runs differ by a few per cent; allocation
 * does not depend on the machine's load, unlike rates. Also the heap retained per cycle (heap
 * used after a full GC, before and after the counted cycles: the server runs with --expose-gc)
 * and, with `TRACE_GC=1`, V8's `--trace-gc-nvp` lines of the server on stdout (sum
 * `semi_space_copied` and `promoted` for what scavenges copy).
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, signApproval, type DescriptorSet } from '@ron/registry'
import { benchSigners } from '../lib/registry-log.js'
import { SERVER_CODE, spawnServer } from '../lib/process.js'
import { ORIGIN } from '../servers/registry/shared.js'

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children?: HeapNode[]
}

const [which = 'registry', n = '2000', topN = '25'] = process.argv.slice(2)
const cycles = Number(n)
const root = await mkdtemp(join(tmpdir(), 'ron-alloc-commit-'))
const { keys, signers } = benchSigners()
const server = await spawnServer(which, which === 'floor' ? './servers/registry/floor.ts' : './servers/registry/registry.ts', { dir: join(root, 'log'), signers }, [
  '--expose-gc',
  ...(process.env.TRACE_GC === '1' ? ['--trace-gc-nvp'] : []),
  ...(process.env.NODE_EXTRA ?? '').split(' ').filter((f) => f !== ''),
])
const transport = new HttpTransport({ targets: { registry: server.url } })
const client = createRegistryClient(transport, { token: String(server.extra.token) })
const payload = (k: number): DescriptorSet => ({
  schemaVersion: 1,
  items: [{ kind: 'service', name: `storage.node-${k}`, service: 'storage', node: `node-${k}`, endpoint: `http://10.0.${(k >> 8) & 255}.${k & 255}:7701` }],
})
let i = 0
const variant = process.env.CYCLE ?? ''
let fixed: Awaited<ReturnType<typeof client.propose>> | undefined
async function cycle(): Promise<void> {
  if (variant !== '') {
    fixed ??= await client.propose(payload(0))
    const sig = signApproval(keys[0]!, { origin: ORIGIN, baseVersion: fixed.baseVersion, payloadB3: fixed.payloadB3 })
    for (let r = 0; r < 4; r++) {
      if (variant === 'approve404') await client.approve('p-nonexistent', sig).catch(() => undefined)
      else await client.commit('p-nonexistent').catch(() => undefined)
    }
    return
  }
  const p = await client.propose(payload(++i))
  for (const k of keys.slice(0, 2)) await client.approve(p.proposalId, signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
  await client.commit(p.proposalId)
}
try {
  for (let k = 0; k < 500; k++) await cycle()
  const before = (await server.memoryUsage(0, true)).afterGc!.heapUsed
  if (process.env.TRACE_GC === '1') console.log('@@counted cycles start')
  await server.gcStart()
  // TRACE_GC=1: no heap sampling (the profiler's own work would be in the trace).
  const sampling = process.env.TRACE_GC !== '1'
  if (sampling) await server.heapStart()
  for (let k = 0; k < cycles; k++) await cycle()
  const file = sampling ? await server.heapStop(join(root, 'alloc.heapprofile')) : undefined
  const gc = await server.gcStop()
  if (process.env.TRACE_GC === '1') console.log('@@counted cycles end')
  const after = (await server.memoryUsage(0, true)).afterGc!.heapUsed
  const profile = file === undefined ? { head: { callFrame: { functionName: '(not sampled)', url: '', lineNumber: 0 }, selfSize: 0 } } : (JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode })
  const bySelf = new Map<string, number>()
  let total = 0
  const walk = (node: HeapNode): void => {
    total += node.selfSize
    const f = node.callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|packages)\//, '$1/')}:${f.lineNumber + 1}`
    bySelf.set(key, (bySelf.get(key) ?? 0) + node.selfSize)
    for (const c of node.children ?? []) walk(c)
  }
  walk(profile.head)
  if (file !== undefined && process.env.KEEP_PROFILE !== undefined) (await import('node:fs')).copyFileSync(file, process.env.KEEP_PROFILE)
  console.log(`${which} on ${SERVER_CODE}: ${cycles} cycles (4 requests each), ${(total / cycles / 1024).toFixed(1)} KiB allocated per cycle (sampled)`)
  console.log(`retained: ${((after - before) / cycles).toFixed(0)} B of heap per cycle (heap used after a full GC, ${(before / 2 ** 20).toFixed(1)} → ${(after / 2 ** 20).toFixed(1)} MiB)`)
  console.log(`GCs: ${gc.minor} minor (${(gc.minorMs / cycles * 1000).toFixed(1)} µs/cycle), ${gc.major} major (${(gc.majorMs / cycles * 1000).toFixed(1)} µs/cycle), ${gc.other} other`)
  for (const [fn, bytes] of [...bySelf.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(topN))) console.log(`${(bytes / cycles).toFixed(0).padStart(7)} B  ${fn}`)
} finally {
  await transport.close()
  await server.stop()
  await rm(root, { recursive: true, force: true })
}
