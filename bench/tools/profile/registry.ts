/**
 * Profile cases of the registry server (its own process, V8 sampling profiler), `[seconds=5]`:
 *
 * - `commit`: this process runs the serial commit cycle (propose → 2 approvals signed here →
 *   commit) and times each step on the client side (signing apart from the round trips); this
 *   process is profiled too;
 * - `commit-floor`: the same cycle against the protocol floor (`servers/registry/floor.ts`);
 * - `head`: autocannon -c50 on `GET /registry/head` from the load process.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { Session } from 'node:inspector/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, generateSignerKey, signApproval, type DescriptorSet, type SignerSet } from '@ron/registry'
import { printProfile, profileDir, readProfile, topTotal, type Profile } from '../../lib/cpuprofile.js'
import { spawnLoad, spawnServer } from '../../lib/process.js'
import { ORIGIN } from '../../servers/registry/shared.js'

export const cases: Record<string, string> = {
  commit: 'serial commit cycles (propose, 2 approvals, commit), client and server profiled [seconds=5]',
  'commit-floor': 'the same cycles against the protocol floor (servers/registry/floor.ts) [seconds=5]',
  head: 'GET /registry/head, autocannon -c50 [seconds=5]',
}

export async function run(which: string, args: string[]): Promise<void> {
  const seconds = Number(args[0] ?? 5)
  const profDir = await profileDir()
  const root = await mkdtemp(join(tmpdir(), 'ron-prof-registry-'))
  const keys = ['s1', 's2', 's3'].map(generateSignerKey)
  const signers: SignerSet = { threshold: 2, signers: keys.map((k) => ({ id: k.id, publicKey: k.publicKey })) }
  // `commit-floor`: the same cycle against the bench's protocol floor (bare node:http).
  const server = await spawnServer('registry', which === 'commit-floor' ? './servers/registry/floor.ts' : './servers/registry/registry.ts', { dir: join(root, 'log'), signers })
  const transport = new HttpTransport({ targets: { registry: server.url } })
  const client = createRegistryClient(transport, { token: String(server.extra.token) })
  const payload = (i: number): DescriptorSet => ({
    schemaVersion: 1,
    items: [{ kind: 'service', name: `storage.node-${i}`, service: 'storage', node: `node-${i}`, endpoint: `http://10.0.${(i >> 8) & 255}.${i & 255}:7701` }],
  })

  let n = 0
  const t = { propose: 0, sign: 0, approve: 0, commit: 0 }
  async function cycle(): Promise<void> {
    let a = performance.now()
    const p = await client.propose(payload(++n))
    let b = performance.now()
    t.propose += b - a
    for (const k of keys.slice(0, 2)) {
      a = performance.now()
      const s = signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })
      b = performance.now()
      t.sign += b - a
      await client.approve(p.proposalId, s)
      a = performance.now()
      t.approve += a - b
    }
    a = performance.now()
    await client.commit(p.proposalId)
    t.commit += performance.now() - a
  }

  // Warm up (JIT, connections).
  for (let i = 0; i < 50; i++) await cycle()
  Object.assign(t, { propose: 0, sign: 0, approve: 0, commit: 0 })
  n = n + 0

  // The client side is profiled too (this process: signing, the transport, JSON).
  const self = new Session()
  self.connect()
  await self.post('Profiler.enable')
  await self.post('Profiler.setSamplingInterval', { interval: 100 })
  await self.post('Profiler.start')
  await server.profStart()
  let summary: string
  let cycles = 0
  if (which.startsWith('commit')) {
    const t0 = performance.now()
    let done = 0
    while (performance.now() - t0 < seconds * 1000) {
      await cycle()
      done++
    }
    const ms = performance.now() - t0
    cycles = done
    const per = (x: number): string => (x / done).toFixed(3)
    summary = `commit: ${done} cycles, ${((done * 1000) / ms).toFixed(1)}/s, ${(ms / done).toFixed(2)} ms per cycle; client ms per cycle: propose ${per(t.propose)}, sign x2 ${per(
      t.sign,
    )}, approve x2 ${per(t.approve)}, commit ${per(t.commit)}`
  } else {
    const load = await spawnLoad()
    const r = await load.run({ kind: 'rate', url: server.url, path: '/registry/head', connections: 50, durationSec: seconds })
    summary = `head: ${r.requests} requests, ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, statuses ${JSON.stringify(r.statuses)}`
    await load.stop()
  }
  const file = await server.profStop(join(profDir, `registry-${which}-${Date.now()}.cpuprofile`))
  const { profile: clientProfile } = (await self.post('Profiler.stop')) as { profile: Profile }
  self.disconnect()
  console.log(summary)
  if (which.startsWith('commit')) {
    const cfile = join(profDir, `registry-${which}-client-${Date.now()}.cpuprofile`)
    await writeFile(cfile, JSON.stringify(clientProfile))
    console.log(`client profile ${cfile}`)
    console.log('client inclusive time:')
    for (const row of topTotal(clientProfile, 40)) console.log(`${row.pct.toFixed(1).padStart(5)}%  ${row.fn}`)
  }
  await transport.close()
  await server.stop()
  const p = readProfile(file)
  if (which.startsWith('commit')) {
    // Main-thread time the server spent not idle, per cycle (less sensitive to a busy machine than wall time).
    const byId = new Map(p.nodes.map((x) => [x.id, x.callFrame.functionName]))
    let busy = 0
    for (let i = 0; i < p.samples.length; i++) if (byId.get(p.samples[i]!) !== '(idle)') busy += p.timeDeltas[i] ?? 0
    console.log(`server main thread busy: ${(busy / 1000 / cycles).toFixed(3)} ms per cycle`)
  }
  printProfile(file, p)
  await rm(root, { recursive: true, force: true })
}
