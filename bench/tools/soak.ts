/**
 * The storage soak in short: fresh storage and bare servers, `n` PUTs of fresh 64 MiB objects
 * each (one stream), idle RSS after every 5 and what the plateau holds (before and after a GC).
 *   npx tsx bench/tools/soak.ts [n=15] [idleMs=1000]
 *   SOAK_NODE_ARGS='--max-semi-space-size=2'   more node flags for both servers (what-if runs)
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { median } from '../lib/harness.js'
import { spawnLoad, spawnServer } from '../lib/process.js'

const MiB = 1 << 20
const mib = (b: number): string => `${(b / MiB).toFixed(0)} MiB`
const [nArg = '15', idleArg = '1000'] = process.argv.slice(2)
const n = Number(nArg)
const root = await mkdtemp(join(tmpdir(), 'ron-soak-'))
const load = await spawnLoad()
const plateaus: number[] = []
try {
  for (const [name, factory] of [
    ['storage', './servers/storage/storage.ts'],
    ['bare', './servers/baselines/bare.ts'],
  ] as const) {
    const dir = join(root, name)
    await mkdir(dir, { recursive: true })
    const s = await spawnServer(name, factory, { dir }, ['--expose-gc', ...(process.env.SOAK_NODE_ARGS?.split(' ').filter(Boolean) ?? [])])
    const token = s.extra.token
    const headers = typeof token === 'string' ? { authorization: `Bearer ${token}` } : {}
    const idle: number[] = [await s.idleRss(500)]
    for (let i = 1; i <= n; i++) {
      const r = await load.run({ kind: 'put-stream', url: s.url, path: '/o', size: 64 * MiB, seed: 1000 + i + Math.floor(Math.random() * 1e6), headers })
      if (r.errors > 0) throw new Error(`${name}: ${JSON.stringify(r.statuses)}`)
      if (i % 5 === 0) idle.push(await s.idleRss(Number(idleArg)))
    }
    const { before: u, afterGc: g, spaces } = await s.memoryUsage(500, true)
    const show = (m: NodeJS.MemoryUsage): string => `rss ${mib(m.rss)}, heap ${mib(m.heapUsed)}/${mib(m.heapTotal)}, external ${mib(m.external)} (ab ${mib(m.arrayBuffers)})`
    const plateau = median(idle.slice(idle.length >> 1))
    plateaus.push(plateau)
    console.log(`${name}: idle every 5: ${idle.map(mib).join(' → ')}; plateau ${mib(plateau)}`)
    console.log(`  holds: ${show(u)}${g === undefined ? '' : `; after GC: ${show(g)}`}`)
    console.log(`  spaces: ${Object.entries(spaces).map(([k, v]) => `${k} ${mib(v)}`).join(', ')}`)
    await s.stop()
  }
  console.log(`storage - bare: +${mib(plateaus[0]! - plateaus[1]!)}`)
} finally {
  await load.stop()
  await rm(root, { recursive: true, force: true })
}
