/**
 * What a server's idle RSS is made of around the storage soak: for each server (fresh storage and
 * bare by default), `/proc/<pid>/smaps` grouped into file-backed pages, anonymous mappings (V8's
 * heap, thread stacks) and glibc's `[heap]` (malloc's main arena: socket read buffers, body
 * pieces), with `process.memoryUsage()` and V8's new/old space, at start, every 5 PUTs of fresh
 * 64 MiB objects, and 1, 11 and 21 s idle after them (V8's memory reducer starts ~8 s after the
 * last activity), then after a forced GC.
 *   npx tsx bench/tools/soak-smaps.ts [n=15] [servers=storage,bare] [snap]
 *   `snap`: also writes a heap snapshot of each server to /tmp/<name>.heapsnapshot
 *   STORAGE_NODE_ARGS='--max-semi-space-size=1'   node flags for the storage server only
 *   SOAK_NODE_ARGS='...'                          node flags for both (what-if runs)
 */
import { mkdir, mkdtemp, rm, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnLoad, spawnServer } from '../lib/process.js'

const MiB = 1 << 20
const n = Number(process.argv[2] ?? 15)
const which = (process.argv[3] ?? 'storage,bare').split(',')
const snap = process.argv[4] === 'snap'
const root = await mkdtemp(join(tmpdir(), 'ron-anat-'))
const load = await spawnLoad()

async function smaps(pid: number): Promise<string> {
  const txt = await readFile(`/proc/${pid}/smaps`, 'utf8')
  const groups = new Map<string, number>()
  let name = ''
  let size = 0
  const lines = txt.split('\n')
  const rows: { name: string; size: number; rss: number }[] = []
  for (const l of lines) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(l)
    if (m) { name = m[3] || '[anon]'; size = (parseInt(m[2]!, 16) - parseInt(m[1]!, 16)); continue }
    const r = /^Rss:\s+(\d+) kB/.exec(l)
    if (r) { const k = name.startsWith('/') ? 'file' : name; groups.set(k, (groups.get(k) ?? 0) + Number(r[1]) * 1024); rows.push({ name, size, rss: Number(r[1]) * 1024 }) }
  }
  const big = rows.filter((x) => x.name === '[anon]' && x.rss > 1 * MiB).sort((a, b) => b.rss - a.rss).slice(0, 25).map((x) => `${(x.size / MiB).toFixed(1)}/${(x.rss / MiB).toFixed(1)}`)
  const roll = (await readFile(`/proc/${pid}/smaps_rollup`, 'utf8')).split('\n').filter((l) => /^(Rss|Anonymous|Pss_File|Pss_Anon)/.test(l)).join('; ').replace(/\s+/g, ' ')
  return `${[...groups].map(([k, v]) => `${k} ${(v / MiB).toFixed(1)}`).join(', ')}\n  anon regions >1MiB (size/rss): ${big.join(' ')}\n  ${roll}`
}
try {
  for (const name of which) {
    const factory = name === 'storage' ? './servers/storage/storage.ts' : './servers/baselines/bare.ts'
    const dir = join(root, name)
    await mkdir(dir, { recursive: true })
    const s = await spawnServer(name, factory, { dir }, ['--expose-gc', ...((name === 'storage' ? process.env.STORAGE_NODE_ARGS : undefined) ?? '').split(' ').filter(Boolean), ...(process.env.SOAK_NODE_ARGS?.split(' ').filter(Boolean) ?? [])])
    const token = s.extra.token
    const headers = typeof token === 'string' ? { authorization: `Bearer ${token}` } : {}
    { const { before: u, afterGc: g, spaces } = await s.memoryUsage(500, true); console.log(`${name} start`, JSON.stringify(u), JSON.stringify(g), JSON.stringify(spaces)) }
    console.log('  ' + (await smaps(s.pid)))
    for (let i = 1; i <= n; i++) {
      const r = await load.run({ kind: 'put-stream', url: s.url, path: '/o', size: 64 * MiB, seed: 1000 + i + Math.floor(Math.random() * 1e6), headers })
      if (r.errors > 0) throw new Error(`${name}: ${JSON.stringify(r.statuses)}`)
      if (i % 5 === 0) { const { before: u } = await s.memoryUsage(1000, false); console.log(`  ${i}: rss ${(u.rss / MiB).toFixed(0)} ab ${(u.arrayBuffers / MiB).toFixed(0)} ` + (await smaps(s.pid)).split('\n')[0]) }
    }
    for (const wait of [1000, 10000, 10000]) {
      const { before: u, spaces } = await s.memoryUsage(wait, false)
      console.log(`${name} after +${wait}ms: rss ${(u.rss / MiB).toFixed(0)} heapTotal ${(u.heapTotal / MiB).toFixed(0)} ext ${(u.external / MiB).toFixed(0)} ab ${(u.arrayBuffers / MiB).toFixed(0)} new ${(spaces.new_space! / MiB).toFixed(0)} old ${(spaces.old_space! / MiB).toFixed(0)}`)
      console.log('  ' + (await smaps(s.pid)))
    }
    const { afterGc: g } = await s.memoryUsage(0, true)
    console.log(`${name} after gc: rss ${(g!.rss / MiB).toFixed(0)} heapTotal ${(g!.heapTotal / MiB).toFixed(0)} ab ${(g!.arrayBuffers / MiB).toFixed(1)}`)
    if (snap) console.log(await s.heapSnapshot(`/tmp/${name}.heapsnapshot`))
    await s.stop()
  }
} finally {
  await load.stop()
  await rm(root, { recursive: true, force: true })
}
