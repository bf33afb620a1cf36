/**
 * Three real `ron-node` processes on loopback forming a cluster (SPEC.md §6b): replication with
 * rf=2 across nodes that each sign their replica traffic with their own issuer, and repair of what
 * a node missed while it was down.
 */

import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { placement } from '@ron/storage'
import { assertBuilt, clusterNode, firstJsonLine, freeBases, killAll, runCli } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-cluster-'))
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

async function present(storageUrl: string, address: string): Promise<boolean> {
  try {
    const res = await fetch(`${storageUrl}/o/${address}`, { method: 'HEAD' })
    return res.status === 200
  } catch {
    return false
  }
}

/** Bounded poll: resolves true once `check` holds (at most ~attempts × 50 ms). */
async function eventually(check: () => Promise<boolean>, attempts = 400): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return false
}

describe('three ron-node processes on loopback', () => {
  it('replicate with rf=2 and repair what a stopped node missed once it is back', async () => {
    const bases = await freeBases(3)
    const dirs = bases.map((_, i) => join(root, `node-${i}`))
    const start = clusterNode(bases, dirs, ['--rf', '2', '--repair-interval', '300ms'])
    const procs = [start(0), start(1), start(2)]
    const summaries = await Promise.all(procs.map((p) => firstJsonLine<Summary>(p, 60_000)))
    const ids = summaries.map((s) => s.nodeId)
    expect(new Set(ids).size).toBe(3)
    // Each node learnt the others' ids from their /status.
    for (const s of summaries) {
      const status = (await (await fetch(`${s.admin}/status`)).json()) as { peers: { nodeId?: string }[] }
      expect(status.peers.map((p) => p.nodeId).sort()).toEqual(ids.filter((id) => id !== s.nodeId).sort())
    }

    const a = summaries[0]!
    const file = join(root, 'first.bin')
    await writeFile(file, randomBytes(100_000))
    const put = await runCli(['put', file, '--node', a.admin, '--data-dir', dirs[0]!])
    expect(put.code, put.stderr).toBe(0)
    const first = put.stdout.trim()
    const holders = placement(first as `b3:${string}`, ids, 2).filter((id) => id !== ids[0])
    const holder = ids.indexOf(holders[0]!)
    expect(holder).toBeGreaterThan(0)
    expect(await eventually(() => present(summaries[holder]!.services['storage']!, first))).toBe(true)

    // Stop the holder, put more on A: what is placed on the holder cannot reach it now.
    procs[holder]!.child.kill('SIGTERM')
    expect((await procs[holder]!.exited).code).toBe(0)
    const missed: string[] = []
    for (let i = 0; missed.length < 3 && i < 40; i++) {
      const f = join(root, `more-${i}.bin`)
      await writeFile(f, randomBytes(20_000))
      const r = await runCli(['put', f, '--node', a.admin, '--data-dir', dirs[0]!])
      expect(r.code, r.stderr).toBe(0)
      const addr = r.stdout.trim()
      if (placement(addr as `b3:${string}`, ids, 2).includes(ids[holder]!)) missed.push(addr)
    }
    expect(missed.length).toBe(3)

    // Back on the same ports and data: repair brings it what it missed.
    procs[holder] = start(holder)
    const again = await firstJsonLine<Summary>(procs[holder], 60_000)
    expect(again.nodeId).toBe(ids[holder])
    for (const addr of missed) expect(await eventually(() => present(again.services['storage']!, addr)), addr).toBe(true)
    expect(await present(again.services['storage']!, first)).toBe(true)

    for (const p of procs) p.child.kill('SIGTERM')
    const codes = await Promise.all(procs.map(async (p) => (await p.exited).code))
    expect(codes).toEqual([0, 0, 0])
  }, 120_000)
})
