import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { placement } from '@ron/storage'
import { startCluster, type Cluster } from './cluster.js'

async function rangeFree(base: number): Promise<boolean> {
  for (let p = base; p <= base + 5; p++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(false))
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)))
    })
    if (!ok) return false
  }
  return true
}

async function eventually(check: () => Promise<boolean>, attempts = 400): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check().catch(() => false)) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return false
}

const has = async (storageUrl: string, address: string): Promise<boolean> => (await fetch(`${storageUrl}/o/${address}`, { method: 'HEAD' })).status === 200

let root: string
let cluster: Cluster
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'ron-example-cluster-'))
  const bases: number[] = []
  for (let c = 30_000 + Math.floor(Math.random() * 1500) * 10; bases.length < 3; c += 10) if (await rangeFree(c)) bases.push(c)
  cluster = await startCluster(root, bases)
}, 60_000)
afterAll(async () => {
  await cluster?.close()
  await rm(root, { recursive: true, force: true })
})

describe('examples/cluster: three nodes on loopback', () => {
  it('rf=2 puts land on a second node, stay readable through C while that node is down, and repair restores its copy', async () => {
    const [a, , c] = cluster.nodes
    const ids = cluster.nodes.map((n) => n.nodeId)
    const token = (await readFile(a!.tokenFile!, 'utf8')).trim()
    const put = await fetch(`${a!.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: randomBytes(50_000) })
    expect(put.status).toBe(201)
    const { address } = (await put.json()) as { address: `b3:${string}` }
    const holderId = placement(address, ids, 2).find((id) => id !== ids[0])!
    const h = ids.indexOf(holderId)
    expect(await eventually(() => has(cluster.nodes[h]!.services['storage']!, address))).toBe(true)

    // A's announcement of its own copy has reached A's index (announcements are asynchronous).
    const providersAt = async (indexUrl: string): Promise<string[]> => {
      const r = (await (await fetch(`${indexUrl}/providers/${address}`)).json()) as { providers?: { endpoint: string }[] }
      return (r.providers ?? []).map((p) => p.endpoint)
    }
    expect(await eventually(async () => (await providersAt(a!.services['index']!)).includes(a!.services['storage']!))).toBe(true)

    // Stop the holder: C's index still finds a live provider and the object reads from it. That
    // provider is A (A's index, which C's index asks, knows A's copy), or C itself when repair has
    // meanwhile placed a copy on C (C's index then answers from its own records).
    const holderStorage = cluster.nodes[h]!.services['storage']!
    await cluster.nodes[h]!.close()
    const reader = h === 2 ? cluster.nodes[1]! : c!
    let live: string | undefined
    const readable = async (): Promise<boolean> => {
      const r = (await (await fetch(`${reader.services['index']}/resolve/${address}`)).json()) as { providers?: { endpoint: string }[] }
      for (const p of r.providers ?? []) {
        if (p.endpoint === holderStorage) continue
        const got = await fetch(`${p.endpoint}/o/${address}`)
        await got.body?.cancel()
        if (got.status === 200) {
          live = p.endpoint
          return true
        }
      }
      return false
    }
    expect(await eventually(readable)).toBe(true)
    expect([a!.services['storage'], reader.services['storage']]).toContain(live)

    // Back: the copy is there (kept on disk), and objects put meanwhile are repaired onto it.
    const more: `b3:${string}`[] = []
    for (let i = 0; more.length < 2 && i < 40; i++) {
      const r = await fetch(`${a!.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: randomBytes(10_000) })
      const { address: x } = (await r.json()) as { address: `b3:${string}` }
      if (placement(x, ids, 2).includes(holderId)) more.push(x)
    }
    const back = await cluster.start(h)
    for (const x of [address, ...more]) expect(await eventually(() => has(back.services['storage']!, x)), x).toBe(true)
  }, 120_000)
})
