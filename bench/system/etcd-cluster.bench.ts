/**
 * A cluster on etcd (issue 25), real processes on loopback: a three-member etcd (Debian's
 * etcd-server) and `ron-node` processes (the built binary), beside a single node as the baseline.
 *
 * 1. registry commits/s, one client committing in a loop (propose, then commit carrying its
 *    approval): a single node without etcd (the log fsynced to its segment files) vs one node of
 *    the etcd cluster (each commit an etcd transaction through Raft), and the whole cluster with
 *    one client per node committing concurrently (ChainMismatch retries counted);
 * 2. signer failover: SIGKILL of the node holding the checkpoint signer lease while another node
 *    commits, and the time until a survivor serves a checkpoint of a larger tree (bounded by the
 *    lease TTL + 1 s), over a few kills.
 *
 * `npx tsx bench/run.ts etcd` (needs `npm run build` and etcd).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { HttpTransport } from '@ron/core'
import { createRegistryClient, generateSignerKey, loadOrCreateLogKey, noteSigner, signApproval, verifyCheckpoint, type RegistryClient } from '@ron/registry'
import { etcdMissing, startEtcdCluster } from '../../packages/cli/test/etcd-cluster.js'
import { firstJsonLine, killAll, spawnCli, type Proc } from '../../packages/cli/test/helpers.js'
import { FULL } from '../lib/harness.js'

const ORIGIN = 'bench.ron/etcd'
const LEASE_TTL_MS = 2000

interface Node {
  proc: Proc
  dir: string
  id: string
  registryUrl: string
  admin: string
  client: RegistryClient
  transport: HttpTransport
}

type Signer = ReturnType<typeof generateSignerKey>

async function startNode(dir: string, config: string): Promise<Node> {
  const proc = spawnCli(['start', '--json', '--log-level', 'error', '--port-base', '0', '--data-dir', dir, '--drain-deadline', '300ms', '--config', config])
  const s = await firstJsonLine<{ nodeId: string; admin: string; services: Record<string, string>; tokenFile: string }>(proc, 60_000)
  const transport = new HttpTransport({ targets: { registry: s.services['registry']! } })
  const token = (await readFile(s.tokenFile, 'utf8')).trim()
  return { proc, dir, id: s.nodeId, admin: s.admin, registryUrl: s.services['registry']!, client: createRegistryClient(transport, { token }), transport }
}

/** Commits until one succeeds; returns the ChainMismatch retries it took. */
async function commitOne(n: Node, signer: Signer, label: string): Promise<number> {
  for (let retries = 0; retries < 1000; retries++) {
    const p = await n.client.propose({ schemaVersion: 1, items: [{ kind: 'policy', name: label, rules: { retries } }] })
    try {
      await n.client.commit(p.proposalId, { approvals: [signApproval(signer, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })] })
      return retries
    } catch (e) {
      if ((e as { code?: string }).code !== 'ChainMismatch') throw e
    }
  }
  throw new Error('no commit after 1000 retries')
}

async function rate(nodes: Node[], signer: Signer, perNode: number, tag: string): Promise<{ perSec: number; retries: number }> {
  const t0 = performance.now()
  const retries = await Promise.all(
    nodes.map(async (n, i) => {
      let r = 0
      for (let k = 0; k < perNode; k++) r += await commitOne(n, signer, `${tag}-${i}-${k}`)
      return r
    }),
  )
  return { perSec: (nodes.length * perNode) / ((performance.now() - t0) / 1000), retries: retries.reduce((a, b) => a + b, 0) }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export async function run(): Promise<void> {
  const missing = etcdMissing()
  if (missing !== undefined) {
    console.log(`skipped: ${missing}`)
    return
  }
  const root = await mkdtemp(join(tmpdir(), 'ron-bench-etcd-'))
  const etcd = await startEtcdCluster()
  const nodes: Node[] = []
  try {
    const logKeyFile = join(root, 'log.key')
    const logKey = noteSigner(ORIGIN, await loadOrCreateLogKey(logKeyFile)).verifierKey
    const signer = generateSignerKey('bench')
    const registry = { origin: ORIGIN, logKeyFile, signers: { threshold: 1, signers: [{ id: signer.id, publicKey: signer.publicKey }] } }
    const single = join(root, 'single.json')
    const clustered = join(root, 'cluster.json')
    await writeFile(single, JSON.stringify({ registry }))
    await writeFile(clustered, JSON.stringify({ registry, coordination: { etcd: { endpoints: etcd.endpoints, leaseTtl: `${LEASE_TTL_MS}ms` } } }))
    const [alone, ...cluster] = await Promise.all([startNode(join(root, 'alone'), single), ...[1, 2, 3].map((i) => startNode(join(root, `n${i}`), clustered))])
    nodes.push(alone, ...cluster)

    // 1. commits/s: alternate the contenders round by round.
    const perRound = FULL ? 200 : 60
    const rounds = FULL ? 5 : 3
    const samples = { single: [] as number[], etcdOne: [] as number[], etcdThree: [] as number[], retries: [] as number[] }
    await rate([alone], signer, 10, 'warm')
    await rate([cluster[0]!], signer, 10, 'warm')
    for (let r = 0; r < rounds; r++) {
      samples.single.push((await rate([alone], signer, perRound, `s${r}`)).perSec)
      samples.etcdOne.push((await rate([cluster[0]!], signer, perRound, `e${r}`)).perSec)
      const three = await rate(cluster, signer, Math.ceil(perRound / 3), `t${r}`)
      samples.etcdThree.push(three.perSec)
      samples.retries.push(three.retries)
    }
    const base = median(samples.single)
    console.log(`\n## registry commits/s (one client per node, propose + commit with its approval; ${rounds} rounds of ${perRound} commits, median [min..max])`)
    for (const [name, xs] of [
      ['single node, segment files (baseline)', samples.single],
      ['one node of a 3-node cluster on 3-member etcd', samples.etcdOne],
      ['3 nodes of the cluster, one client each, concurrently', samples.etcdThree],
    ] as const) {
      console.log(`${name.padEnd(56)} ${median(xs).toFixed(1).padStart(7)} /s  [${Math.min(...xs).toFixed(1)}..${Math.max(...xs).toFixed(1)}]  ${(median(xs) / base).toFixed(2)}×`)
    }
    console.log(`ChainMismatch retries of the concurrent rounds (another node won HEAD first): ${samples.retries.join(', ')}`)

    // 2. signer failover.
    const failovers: number[] = []
    for (let k = 0; k < (FULL ? 4 : 2); k++) {
      const st = (await (await fetch(`${cluster[0]!.admin}/status`)).json()) as { etcd?: { signer?: { holder?: string } } }
      const holderIdx = cluster.findIndex((n) => n.id === st.etcd?.signer?.holder)
      if (holderIdx < 0) throw new Error('no signer lease holder')
      const holder = cluster[holderIdx]!
      const other = cluster.find((n) => n !== holder)!
      let streaming = true
      const stream = (async () => {
        for (let i = 0; streaming; i++) await commitOne(other, signer, `f${k}-${i}`)
      })()
      await delay(300)
      const head = ((await (await fetch(`${other.registryUrl}/registry/head`)).json()) as { version: number }).version
      const killedAt = performance.now()
      holder.proc.child.kill('SIGKILL')
      await holder.proc.exited
      let ms = Infinity
      while (performance.now() - killedAt < LEASE_TTL_MS + 10_000) {
        const note = await (await fetch(`${other.registryUrl}/registry/checkpoint`)).text()
        if (verifyCheckpoint(note, logKey).treeSize > head) {
          ms = performance.now() - killedAt
          break
        }
        await delay(10)
      }
      streaming = false
      await stream
      failovers.push(ms)
      await holder.transport.close()
      cluster[holderIdx] = await startNode(holder.dir, clustered)
      nodes.push(cluster[holderIdx])
    }
    console.log(`\n## checkpoint signer failover (SIGKILL of the lease holder while another node commits; lease TTL ${LEASE_TTL_MS} ms)`)
    console.log(`kill → a survivor serves a newer checkpoint: ${failovers.map((m) => `${m.toFixed(0)} ms`).join(', ')} (bound: TTL + 1 s = ${LEASE_TTL_MS + 1000} ms)`)
  } finally {
    for (const n of nodes) await n.transport.close()
    await killAll()
    await etcd.close()
    await rm(root, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
