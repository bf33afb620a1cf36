/**
 * A three-node RON cluster on loopback, in one process: three `startNode` calls, each listing the
 * other two as peers (their admin URLs). Every node runs all five services on its own ports and
 * data directory. Run by `cluster.test.ts`; `docs/cluster.md` shows the same with three
 * `ron-node start` commands. Run it directly (`npx tsx examples/cluster/cluster.ts`) and it starts
 * the three nodes in a temporary directory, stores an object on the first, reads it back through
 * every node's gateway — the nodes without a copy fetch it from one that has it, verified — and
 * says so.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
// ron-node's entry (`import { startNode } from 'ron-node'` in an app); the source path keeps the
// example runnable before a build, like the @ron/* packages the test suite aliases to sources.
import { startNode, type RonNode, type StartNodeOptions } from '../../packages/cli/src/index.js'

export interface Cluster {
  nodes: RonNode[]
  /** (Re)starts node `i` on its ports and data directory. */
  start(i: number): Promise<RonNode>
  close(): Promise<void>
}

/** Starts three nodes on `bases` (admin ports; services on base+1..base+5), data under `root`. */
export async function startCluster(root: string, bases: readonly number[], extra: Partial<StartNodeOptions> = {}): Promise<Cluster> {
  const admins = bases.map((b) => `http://127.0.0.1:${b}`)
  const options = (i: number): StartNodeOptions => ({
    dataDir: join(root, `node-${i}`),
    portBase: bases[i]!,
    peers: admins.filter((_, j) => j !== i),
    storage: { rf: 2, repair: { intervalMs: 300 } },
    drainDeadlineMs: 500,
    ...extra,
  })
  // Started together: each waits (bounded) for the others' /status, so they agree on placement.
  const nodes = await Promise.all(bases.map((_, i) => startNode(options(i))))
  await Promise.all(nodes.map((n) => n.whenReady()))
  const cluster: Cluster = {
    nodes,
    async start(i) {
      const node = await startNode(options(i))
      await node.whenReady()
      nodes[i] = node
      return node
    },
    async close() {
      await Promise.all(nodes.map((n) => n.close()))
    },
  }
  return cluster
}

/** Three free ranges of six ports on 127.0.0.1 (admin = base, services base+1..base+5). */
export async function freeBases(n = 3): Promise<number[]> {
  const free = (p: number): Promise<boolean> =>
    new Promise((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(false))
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)))
    })
  const bases: number[] = []
  for (let c = 30_000 + Math.floor(Math.random() * 1500) * 10; bases.length < n; c += 10) {
    let ok = true
    for (let p = c; ok && p <= c + 5; p++) ok = await free(p)
    if (ok) bases.push(c)
  }
  return bases
}

/** What running the file does (see the module comment), printed to `out`. */
export async function demo(out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ron-cluster-'))
  const cluster = await startCluster(root, await freeBases())
  try {
    const [a] = cluster.nodes
    out.write(`cluster: three nodes up (${cluster.nodes.map((n) => n.admin).join(', ')}), data in ${root}\n`)
    const token = (await readFile(a!.tokenFile!, 'utf8')).trim()
    const bytes = randomBytes(20_000)
    const put = await fetch(`${a!.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: bytes })
    const { address } = (await put.json()) as { address: string }
    out.write(`PUT on ${a!.nodeId} → ${put.status} ${address}\n`)
    for (const n of cluster.nodes) {
      const local = (await fetch(`${n.services['storage']}/o/${address}`, { method: 'HEAD' })).status === 200
      const res = await fetch(`${n.services['interop']}/o/${address}`)
      const same = Buffer.from(await res.arrayBuffer()).equals(bytes)
      out.write(`GET through ${n.nodeId}'s gateway → ${res.status}${same ? ', the same bytes' : ''} (${local ? 'its own copy' : 'fetched from another node, verified'})\n`)
    }
  } finally {
    await cluster.close()
    await rm(root, { recursive: true, force: true })
  }
  out.write('cluster: closed\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await demo()
