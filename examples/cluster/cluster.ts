/**
 * A three-node RON cluster on loopback, in one process: three `startNode` calls, each listing the
 * other two as peers (their admin URLs). Every node runs all five services on its own ports and
 * data directory. Run by `cluster.test.ts`; `docs/cluster.md` shows the same with three
 * `ron-node start` commands.
 */
import { join } from 'node:path'
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
