/**
 * Storage data path, out of process (issue 10). Servers, each in its own process, on the same
 * disk: the storage service on its defaults (`servers/storage/storage.ts`), a bare `node:http` server
 * (`servers/baselines/bare.ts`: reads the file per request; PUT = temp file + fsync + rename + dir fsync)
 * and `serve-handler` (GETs). The load generator is another process (`lib/load-child.ts`). Cases
 * alternate within each round; every figure is the median of the rounds, every ratio the median
 * [min..max] of per-round ratios. Memory is sampled inside each server process.
 *
 * Quick by default (about a minute); `--full` for longer rounds, 1 GiB objects and a PUT soak.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CpuPerRequest, FULL, alternate, median, printRounds, spread } from '../lib/harness.js'
import { spawnLoad, spawnServer, type LoadGenerator, type LoadResult, type ServerProcess } from '../lib/process.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB
const ROUNDS = FULL ? 7 : 5

const P = FULL
  ? { getBig: 4, getBig4: 8, rateSec: 5, range: 16 * 40, put1: 60, put16: 16 * 8, bigSize: GiB, bigRounds: 5, slowRate: 128 * MiB, soak: 30 }
  : { getBig: 2, getBig4: 4, rateSec: 0.5, range: 16 * 20, put1: 12, put16: 16 * 2, bigSize: 32 * MiB, bigRounds: 5, slowRate: 64 * MiB, soak: 0 }

const mib = (b: number): string => `${(b / MiB).toFixed(0)} MiB`

function checkOk(name: string, r: LoadResult, what: string): LoadResult {
  const bad = Object.entries(r.statuses).filter(([k, v]) => !k.startsWith('2') && v > 0)
  if (r.errors > 0 || bad.length > 0) throw new Error(`${name} ${what}: ${r.errors} errors, statuses ${JSON.stringify(r.statuses)}`)
  return r
}

export async function run(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ron-bench-storage-'))
  const bareDir = join(root, 'bare')
  await mkdir(bareDir, { recursive: true })
  const started: Array<{ stop(): Promise<void> }> = []
  try {
    const load = await spawnLoad()
    started.push(load)
    const ron = await spawnServer('storage service', './servers/storage/storage.ts', { dir: join(root, 'ron') })
    started.push(ron)
    const bare = await spawnServer('bare node:http', './servers/baselines/bare.ts', { dir: bareDir })
    started.push(bare)
    const sh = await spawnServer('serve-handler', './servers/baselines/serve-handler.ts', { dir: bareDir })
    started.push(sh)
    const tokenOf = (s: ServerProcess): Record<string, string> => ({ authorization: `Bearer ${String(s.extra.token)}` })
    const headersOf = (s: ServerProcess): Record<string, string> => (s.extra.token === undefined ? {} : tokenOf(s))

    // Seed the same bytes on both stores (bare names the file after the address).
    const seed = async (size: number, seedNo: number): Promise<string> => {
      let address = ''
      for (const s of [ron, bare]) {
        const job = { url: s.url, path: '/o', size, seed: seedNo, headers: headersOf(s), expectAddress: true }
        const r = size > 64 * MiB ? await load.run({ kind: 'put-stream', ...job }) : await load.run({ kind: 'put', ...job, concurrency: 1, requests: 1, fresh: false })
        checkOk(s.name, r, 'seed')
        address = (JSON.parse(r.lastBody!) as { address: string }).address
      }
      return address
    }
    const small = await seed(4 * KiB, 1)
    const big = await seed(64 * MiB, 2)
    console.log(`mode: ${FULL ? 'full' : 'quick'}; ${ROUNDS} rounds + 1 warm-up; servers and load generator in separate processes`)

    const getters = [bare, sh, ron]
    const names = getters.map((s) => (s === ron ? 'storage service (verified)' : s.name))
    const getCase = async (title: string, job: (s: ServerProcess) => Parameters<LoadGenerator['run']>[0], pick: (r: LoadResult) => number, unit: string, lowerIsBetter = false): Promise<LoadResult[][]> => {
      const results = await alternate(
        getters.map((s) => ({ name: s.name, measure: async () => checkOk(s.name, await load.run(job(s)), title) })),
        { rounds: ROUNDS },
      )
      printRounds(title, unit, names, results.map((rs) => rs.map(pick)), { lowerIsBetter })
      return results
    }

    await getCase(`GET 64 MiB, one stream (${P.getBig} per round)`, (s) => ({ kind: 'get', url: s.url, path: `/o/${big}`, concurrency: 1, requests: P.getBig, headers: headersOf(s) }), (r) => r.bytesPerSec / 1e6, 'MB/s')
    await getCase(`GET 64 MiB, 4 streams (${P.getBig4} per round)`, (s) => ({ kind: 'get', url: s.url, path: `/o/${big}`, concurrency: 4, requests: P.getBig4, headers: headersOf(s) }), (r) => r.bytesPerSec / 1e6, 'MB/s')
    await getCase(`GET 4 KiB, autocannon -c50 for ${P.rateSec} s (bare reads the file per request)`, (s) => ({ kind: 'rate', url: s.url, path: `/o/${small}`, connections: 50, durationSec: P.rateSec, headers: headersOf(s) }), (r) => r.rps, 'req/s')
    const range = await getCase(
      `Range GET 64 KiB of the 64 MiB object, c=16 (${P.range} per round): p95`,
      (s) => ({ kind: 'get', url: s.url, path: `/o/${big}`, concurrency: 16, requests: P.range, headers: headersOf(s), ranges: { objectSize: 64 * MiB, length: 64 * KiB, seed: 42 } }),
      (r) => r.p95,
      'p95 ms',
      true,
    )
    printRounds('Range GET 64 KiB, c=16: p50', 'p50 ms', names, range.map((rs) => rs.map((r) => r.p50)), { lowerIsBetter: true })

    // PUTs: bare (fsync + rename + dir fsync) vs the service.
    const putters = [bare, ron]
    const putNames = ['bare node:http (tmp+fsync+rename+dir fsync)', 'storage service']
    const putCase = async (title: string, targets: ServerProcess[], conc: number, requests: number, note?: string): Promise<void> => {
      const cpu = new CpuPerRequest(targets.length)
      const results = await alternate(
        targets.map((s, i) => ({
          name: s.name,
          measure: () =>
            cpu.around(
              i,
              s.pid,
              async () => checkOk(s.name, await load.run({ kind: 'put', url: s.url, path: '/o', size: MiB, seed: 100 + conc * 10 + i, concurrency: conc, requests, headers: headersOf(s) }), title),
              () => requests,
            ),
        })),
        { rounds: ROUNDS },
      )
      for (const [label, pick] of [['p50', (r: LoadResult) => r.p50], ['p95', (r: LoadResult) => r.p95], ['p99', (r: LoadResult) => r.p99]] as const) {
        printRounds(`${title}: ${label}`, `${label} ms`, putNames, results.map((rs) => rs.map(pick)), { lowerIsBetter: true, ...(label === 'p50' && note ? { note } : {}) })
      }
      printRounds(`${title}: throughput`, 'MB/s', putNames, results.map((rs) => rs.map((r) => r.bytesPerSec / 1e6)))
      cpu.print(title, putNames, ROUNDS)
    }
    await putCase(`PUT 1 MiB, c=1 (${P.put1} per round)`, putters, 1, P.put1)
    await putCase(`PUT 1 MiB, c=16 (${P.put16} per round)`, putters, 16, P.put16)

    // Big PUT and slow-reading big GET, with RSS sampled in each server process.
    const memRows: string[] = []
    const bigPut = await alternate(
      putters.map((s, i) => ({
        name: s.name,
        measure: async () => {
          await s.memStart()
          const r = checkOk(s.name, await load.run({ kind: 'put-stream', url: s.url, path: '/o', size: P.bigSize, seed: 300 + i * 50 + Math.floor(Math.random() * 40), headers: headersOf(s) }), 'big PUT')
          const m = await s.memStop()
          const idle = await s.idleRss(1000)
          return { mbps: r.bytesPerSec / 1e6, peak: m.peak, start: m.start, idle }
        },
      })),
      { rounds: P.bigRounds, warmup: 0 },
    )
    printRounds(`PUT ${mib(P.bigSize)}, one stream: throughput`, 'MB/s', putNames, bigPut.map((rs) => rs.map((r) => r.mbps)))
    for (const i of putters.keys()) {
      const rs = bigPut[i]!
      memRows.push(
        `${putNames[i]!.padEnd(44)} PUT ${mib(P.bigSize)}: RSS before ${mib(rs[0]!.start)}, peak during ${mib(spread(rs.map((r) => r.peak)).max)} (max of rounds), idle after each: ${rs.map((r) => mib(r.idle)).join(' → ')}`,
      )
    }
    // The slow reader: seed the big object on both, then read it at P.slowRate.
    const huge = await seed(P.bigSize, 9)
    for (const s of [bare, sh, ron]) {
      await s.memStart()
      const r = checkOk(s.name, await load.run({ kind: 'slow-get', url: s.url, path: `/o/${huge}`, bytesPerSec: P.slowRate, headers: headersOf(s) }), 'slow GET')
      const m = await s.memStop()
      const idle = await s.idleRss(1000)
      if (r.bytes !== P.bigSize) throw new Error(`${s.name}: slow GET read ${r.bytes} bytes`)
      memRows.push(`${(s === ron ? 'storage service (verified)' : s.name).padEnd(44)} GET ${mib(P.bigSize)} read at ${mib(P.slowRate)}/s: RSS before ${mib(m.start)}, peak ${mib(m.peak)} (+${mib(m.peak - m.start)}), idle after ${mib(idle)}`)
    }
    console.log(`\n## Memory, sampled every 10 ms inside each server process`)
    for (const row of memRows) console.log(row)

    if (P.soak > 0) {
      // Fresh servers (so earlier cases do not blur the picture), storage then the bare baseline,
      // with --expose-gc so the end of the soak can tell garbage from memory really held.
      const soaked: Array<{ name: string; plateau: number }> = []
      for (const [name, factory] of [
        ['storage service (soak)', './servers/storage/storage.ts'],
        ['bare fsync+rename (soak)', './servers/baselines/bare.ts'],
      ] as const) {
        await mkdir(join(root, `soak-${soaked.length}`), { recursive: true })
        const s = await spawnServer(name, factory, { dir: join(root, `soak-${soaked.length}`) }, ['--expose-gc'])
        started.push(s)
        const auth = headersOf(s)
        const idle: number[] = [await s.idleRss(500)]
        for (let i = 1; i <= P.soak; i++) {
          checkOk(name, await load.run({ kind: 'put-stream', url: s.url, path: '/o', size: 64 * MiB, seed: 1000 + i, headers: auth }), 'soak')
          if (i % 5 === 0) idle.push(await s.idleRss(1000))
        }
        console.log(`\n## Soak, ${name}: ${P.soak} PUTs of fresh 64 MiB objects; idle RSS every 5: ${idle.map(mib).join(' → ')}`)
        const { before: u, afterGc: g } = await s.memoryUsage(500, true)
        const show = (m: NodeJS.MemoryUsage): string => `rss ${mib(m.rss)}, V8 heap used ${mib(m.heapUsed)} of ${mib(m.heapTotal)}, external ${mib(m.external)} (array buffers ${mib(m.arrayBuffers)})`
        const plateau = median(idle.slice(idle.length >> 1))
        console.log(`median of the last half: ${mib(plateau)}`)
        console.log(`the plateau holds: ${show(u)}${g === undefined ? '' : `; after a full GC: ${show(g)}`}`)
        soaked.push({ name, plateau })
        await s.stop()
      }
      const [r, b] = soaked
      console.log(`\nidle RSS after the soak: storage ${mib(r!.plateau)} vs bare ${mib(b!.plateau)}: +${mib(r!.plateau - b!.plateau)} (goal <= bare + 32 MiB)`)
    }
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => undefined)
    await rm(root, { recursive: true, force: true })
  }
}
