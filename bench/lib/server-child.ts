/**
 * Entry point of a server child process (see `process.ts`): `node --import tsx server-child.ts
 * <factory module> <options json>`. Starts the factory on command, samples its own RSS on
 * command, closes on command.
 */
import { writeFile } from 'node:fs/promises'
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks'
import { Session } from 'node:inspector/promises'
import { pathToFileURL } from 'node:url'
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8'
import { applyBenchHeapGrowth } from './heap-setting.js'

/** What a server factory returns once it listens. */
export interface StartedServer {
  /** Base URL (`http://127.0.0.1:<port>`). */
  url: string
  /** Extra facts for the bench (a bearer token, a directory). Must be JSON. */
  extra?: Record<string, unknown>
  close(): Promise<void>
}

/**
 * A benchmark server factory: the default export of a module in `bench/servers/`. Runs in its own
 * process; receives the options the bench passed to `spawnServer`.
 */
export type ServerFactory = (options: Record<string, unknown>) => Promise<StartedServer>

applyBenchHeapGrowth()
// tsx turns Node's source-map support on when it registers, and Node then parses and keeps the
// map of every module that names one: each built package's chunks. `ron-node` (plain `node`)
// does not, so a service child would carry megabytes of heap (about 4 MiB for storage) that its
// users do not, and a baseline that loads no package would not. Stack traces of the children
// point into the built files instead.
process.setSourceMapsEnabled(false)

const [factoryPath, optionsJson] = process.argv.slice(2)
let server: StartedServer | undefined
let timer: ReturnType<typeof setInterval> | undefined
let mem = { start: 0, peak: 0, end: 0 }

const rss = (): number => process.memoryUsage.rss()

let profiler: Session | undefined

/** Garbage collections seen since `gcStart`: count and milliseconds by kind. */
let gcSeen = { major: 0, majorMs: 0, minor: 0, minorMs: 0, other: 0, otherMs: 0 }
let gcObserver: PerformanceObserver | undefined

async function handle(m: { cmd: string; idleMs?: number; path?: string; gc?: boolean }): Promise<unknown> {
  switch (m.cmd) {
    case 'start': {
      const mod = (await import(pathToFileURL(factoryPath!).href)) as { default: ServerFactory }
      server = await mod.default(JSON.parse(optionsJson ?? '{}') as Record<string, unknown>)
      return { url: server.url, extra: server.extra ?? {} }
    }
    case 'memStart': {
      const r = rss()
      mem = { start: r, peak: r, end: r }
      clearInterval(timer)
      timer = setInterval(() => {
        const now = rss()
        if (now > mem.peak) mem.peak = now
      }, 10)
      return undefined
    }
    case 'memStop': {
      clearInterval(timer)
      timer = undefined
      mem.end = rss()
      if (mem.end > mem.peak) mem.peak = mem.end
      return mem
    }
    case 'profStart': {
      profiler = new Session()
      profiler.connect()
      await profiler.post('Profiler.enable')
      await profiler.post('Profiler.setSamplingInterval', { interval: 100 })
      await profiler.post('Profiler.start')
      return undefined
    }
    case 'profStop': {
      const { profile } = (await profiler!.post('Profiler.stop')) as { profile: unknown }
      profiler!.disconnect()
      profiler = undefined
      await writeFile(m.path!, JSON.stringify(profile))
      return m.path
    }
    case 'heapStart': {
      // Sampling heap profiler, counting objects the GC has already collected too: where the
      // allocations come from, not only what survives.
      profiler = new Session()
      profiler.connect()
      await profiler.post('HeapProfiler.enable')
      await profiler.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.HEAP_SURVIVORS !== '1' } as object)
      return undefined
    }
    case 'heapStop': {
      // HEAP_SURVIVORS=1: only what survived scavenges (two forced ones end the count).
      if (process.env.HEAP_SURVIVORS === '1') for (let k = 0; k < 2; k++) (globalThis as { gc?: (o: object) => void }).gc?.({ type: 'minor' })
      const { profile } = (await profiler!.post('HeapProfiler.stopSampling')) as { profile: unknown }
      profiler!.disconnect()
      profiler = undefined
      await writeFile(m.path!, JSON.stringify(profile))
      return m.path
    }
    case 'memoryUsage': {
      await new Promise((r) => setTimeout(r, m.idleMs ?? 0))
      const before = process.memoryUsage()
      const spaces = Object.fromEntries(getHeapSpaceStatistics().map((x) => [x.space_name, x.space_size]))
      const gc = (globalThis as { gc?: () => void }).gc
      if (m.gc !== true || gc === undefined) return { before, spaces }
      gc()
      return { before, spaces, afterGc: process.memoryUsage() }
    }
    case 'gcStart': {
      gcSeen = { major: 0, majorMs: 0, minor: 0, minorMs: 0, other: 0, otherMs: 0 }
      gcObserver?.disconnect()
      gcObserver = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          const kind = (e as { detail?: { kind?: number } }).detail?.kind
          const k = kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR ? 'major' : kind === perfConstants.NODE_PERFORMANCE_GC_MINOR ? 'minor' : 'other'
          gcSeen[k]++
          gcSeen[`${k}Ms`] += e.duration
        }
      })
      gcObserver.observe({ entryTypes: ['gc'] })
      return undefined
    }
    case 'gcStop': {
      // Entries are delivered asynchronously: let the last ones arrive.
      await new Promise((r) => setTimeout(r, 20))
      gcObserver?.disconnect()
      gcObserver = undefined
      return gcSeen
    }
    case 'heapSnapshot':
      // A full heap snapshot (what holds memory, with retainers) written to `path`.
      return writeHeapSnapshot(m.path)
    case 'idleRss':
      await new Promise((r) => setTimeout(r, m.idleMs ?? 1000))
      return rss()
    case 'close':
      clearInterval(timer)
      await server?.close()
      setImmediate(() => process.exit(0))
      return undefined
    default:
      throw new Error(`unknown command ${m.cmd}`)
  }
}

process.on('message', (m: { id: number; cmd: string }) => {
  handle(m).then(
    (value) => process.send!({ id: m.id, ok: true, value }),
    (e: unknown) => process.send!({ id: m.id, ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
  )
})
process.on('disconnect', () => process.exit(0))
