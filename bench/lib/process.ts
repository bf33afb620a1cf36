/**
 * Out-of-process benchmarking: every server under test and every baseline runs in its own child
 * process (started from a *server factory* module through `server-child.ts`), and the load comes
 * from another child process (`load-child.ts`: undici for streams/latency, autocannon for request
 * rates). The parent only orchestrates and does the arithmetic, so no measured process shares a
 * heap, an event loop or a GC with another.
 *
 * Memory is sampled inside the server process (RSS every 10 ms between `memStart()` and
 * `memStop()`), never in the parent.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { SERVER_HEAP_GROWING_FACTOR, SERVER_YOUNG_GENERATION_GROWTH } from '@ron/core'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { LoadJob, LoadResult } from './load-child.js'

export type { LoadJob, LoadResult } from './load-child.js'

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url))
/** A path relative to `bench/` (where server factories and `tsconfig.dist.json` are named from). */
export const fromBench = (p: string): string => fileURLToPath(new URL(p, new URL('../', import.meta.url)))

/** Node flags for children: the bench's own TypeScript runs through tsx. */
const EXEC_ARGV = ['--import', 'tsx']

const PACKAGES = ['core', 'storage', 'registry', 'passport', 'index', 'interop']

function newestMtime(dir: string): number {
  let newest = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs)
  }
  return newest
}

/** Whether every package's `dist/` exists and is newer than its sources. */
function builtAndFresh(): boolean {
  return PACKAGES.every((p) => {
    const dist = fromBench(`../packages/${p}/dist/index.js`)
    return existsSync(dist) && statSync(dist).mtimeMs >= newestMtime(fromBench(`../packages/${p}/src`))
  })
}

/**
 * What the server children run: `dist` — the built packages, what users install (`@ron/*`
 * resolves through the workspace links to each package's `exports`) — whenever every package is
 * built and the build is newer than its sources (`npm run bench` builds first); else `src`, the
 * TypeScript sources through tsx (tsconfig paths), which costs more than users pay: esbuild's
 * `keepNames` wraps every closure the server creates in a `__name` call. `RON_BENCH_SOURCES=1`
 * forces `src` (quick A/B while editing).
 */
export const SERVER_CODE: 'dist' | 'src' = process.env.RON_BENCH_SOURCES === '1' ? 'src' : builtAndFresh() ? 'dist' : 'src'

/**
 * V8's old-generation growing factor of every server process, services and baselines alike:
 * ron-node's default ({@link SERVER_HEAP_GROWING_FACTOR}, what `ron-node start` runs with), or
 * V8's own estimate with `RON_BENCH_V8_HEAP=auto`. Handed to `server-child.ts` in the environment,
 * so a baseline's process does not have to load `@ron/core` to apply it.
 */
export const SERVER_HEAP_GROWTH: string = process.env.RON_BENCH_V8_HEAP === 'auto' ? 'auto' : String(SERVER_HEAP_GROWING_FACTOR)

/**
 * V8's young-generation growth factor of every server process, services and baselines alike:
 * ron-node's default ({@link SERVER_YOUNG_GENERATION_GROWTH}: the semi-spaces keep their initial
 * size), or V8's own (`auto`) with `RON_BENCH_V8_HEAP=auto` (both settings) or `RON_BENCH_V8_YOUNG=auto`
 * (this one alone, for an A/B). Handed over like {@link SERVER_HEAP_GROWTH}.
 */
export const SERVER_YOUNG_GROWTH: string =
  process.env.RON_BENCH_V8_HEAP === 'auto' || process.env.RON_BENCH_V8_YOUNG === 'auto' ? 'auto' : String(SERVER_YOUNG_GENERATION_GROWTH)

/**
 * The tsconfig the children's tsx loads: `bench/tsconfig.dist.json` (no paths: `@ron/*` resolves
 * to each package's `dist`) or the root `tsconfig.json` (paths to the sources), whatever the
 * working directory the bench was started from.
 */
export const SERVER_TSCONFIG: string = SERVER_CODE === 'dist' ? fromBench('./tsconfig.dist.json') : fromBench('../tsconfig.json')

const SERVER_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH,
  RON_BENCH_YOUNG_GROWTH: SERVER_YOUNG_GROWTH,
  TSX_TSCONFIG_PATH: SERVER_TSCONFIG,
}

interface Pending {
  resolve(v: unknown): void
  reject(e: Error): void
}

/** A child speaking a tiny request/response protocol over IPC (`{id, ...}` → `{id, ok, value|error}`). */
class Rpc {
  readonly child: ChildProcess
  #seq = 0
  readonly #pending = new Map<number, Pending>()
  #exited: Error | undefined

  constructor(child: ChildProcess, label: string) {
    this.child = child
    child.on('message', (m: { id?: number; ok?: boolean; value?: unknown; error?: string }) => {
      if (m.id === undefined) return
      const p = this.#pending.get(m.id)
      if (!p) return
      this.#pending.delete(m.id)
      if (m.ok === true) p.resolve(m.value)
      else p.reject(new Error(`${label}: ${m.error ?? 'failed'}`))
    })
    child.on('exit', (code, sig) => {
      this.#exited = new Error(`${label} exited (${code ?? sig})`)
      for (const p of this.#pending.values()) p.reject(this.#exited)
      this.#pending.clear()
    })
  }

  call<T>(msg: Record<string, unknown>): Promise<T> {
    if (this.#exited) return Promise.reject(this.#exited)
    const id = ++this.#seq
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: (v) => resolve(v as T), reject })
      this.child.send({ id, ...msg })
    })
  }

  async stop(): Promise<void> {
    if (this.#exited) return
    const gone = new Promise<void>((r) => this.child.once('exit', () => r()))
    await this.call({ cmd: 'close' }).catch(() => undefined)
    const t = setTimeout(() => this.child.kill('SIGKILL'), 5000)
    await gone
    clearTimeout(t)
  }
}

/** What a server child reports once it listens. */
export interface ServerInfo {
  /** Base URL, `http://127.0.0.1:<port>`. */
  url: string
  /** Anything the factory wants the bench to know (a token, a data directory). */
  extra: Record<string, unknown>
}

/** RSS figures sampled inside the server process, in bytes. */
export interface MemSample {
  /** RSS when sampling started. */
  start: number
  /** Highest RSS seen while sampling (every 10 ms). */
  peak: number
  /** RSS when sampling stopped. */
  end: number
}

/** Garbage collections of a server over a span: counts, and milliseconds spent, by kind. */
export interface GcCounts {
  major: number
  majorMs: number
  minor: number
  minorMs: number
  other: number
  otherMs: number
}

/** A server running in its own process. */
export interface ServerProcess extends ServerInfo {
  readonly name: string
  readonly pid: number
  /** Starts sampling RSS every 10 ms. */
  memStart(): Promise<void>
  /** Stops sampling; returns start, peak and end RSS. */
  memStop(): Promise<MemSample>
  /** Current RSS after `idleMs` of doing nothing (no forced GC: what an operator would see). */
  idleRss(idleMs?: number): Promise<number>
  /**
   * `process.memoryUsage()` of the server after `idleMs` (what the RSS is made of: heap, external,
   * array buffers), and again after a full GC when `gc` is asked and the server runs with
   * `--expose-gc` (garbage not yet collected vs memory really held); `spaces`: the committed size of
   * each V8 heap space (before the GC).
   */
  memoryUsage(idleMs?: number, gc?: boolean): Promise<{ before: NodeJS.MemoryUsage; afterGc?: NodeJS.MemoryUsage; spaces: Record<string, number> }>
  /** Starts the V8 CPU profiler in the server process (only what happens from now on). */
  profStart(): Promise<void>
  /** Stops it and writes the `.cpuprofile` (Chrome DevTools format) to `path`. */
  profStop(path: string): Promise<string>
  /** Starts V8's sampling heap profiler in the server process (allocations, collected ones included). */
  heapStart(): Promise<void>
  /** Stops it and writes the `.heapprofile` (Chrome DevTools format) to `path`. */
  heapStop(path: string): Promise<string>
  /** Writes a full V8 heap snapshot (`.heapsnapshot`, Chrome DevTools format) to `path`. */
  heapSnapshot(path: string): Promise<string>
  /** Starts counting the server's garbage collections (a `gc` PerformanceObserver). */
  gcStart(): Promise<void>
  /** Stops counting; returns the collections seen since {@link gcStart} by kind, with their milliseconds. */
  gcStop(): Promise<GcCounts>
  /** Asks the factory's `close()` and waits for the process to exit. */
  stop(): Promise<void>
}

/**
 * Starts `factory` (a module path relative to `bench/`, e.g. `'./servers/baselines/bare.ts'`, whose default
 * export is a {@link import('./server-child.js').ServerFactory}) in a fresh Node process and waits
 * for it to listen. `options` is passed to the factory as JSON.
 */
export async function spawnServer(name: string, factory: string, options: Record<string, unknown> = {}, nodeArgs: string[] = []): Promise<ServerProcess> {
  const child = fork(here('./server-child.ts'), [fromBench(factory), JSON.stringify(options)], {
    execArgv: [...EXEC_ARGV, ...nodeArgs],
    env: SERVER_ENV,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const rpc = new Rpc(child, `server ${name}`)
  const info = await rpc.call<ServerInfo>({ cmd: 'start' })
  return {
    name,
    pid: child.pid!,
    ...info,
    memStart: () => rpc.call({ cmd: 'memStart' }),
    memStop: () => rpc.call<MemSample>({ cmd: 'memStop' }),
    idleRss: (idleMs = 1000) => rpc.call<number>({ cmd: 'idleRss', idleMs }),
    memoryUsage: (idleMs = 0, gc = false) => rpc.call({ cmd: 'memoryUsage', idleMs, gc }),
    profStart: () => rpc.call({ cmd: 'profStart' }),
    profStop: (path) => rpc.call<string>({ cmd: 'profStop', path }),
    heapStart: () => rpc.call({ cmd: 'heapStart' }),
    heapStop: (path) => rpc.call<string>({ cmd: 'heapStop', path }),
    heapSnapshot: (path) => rpc.call<string>({ cmd: 'heapSnapshot', path }),
    gcStart: () => rpc.call({ cmd: 'gcStart' }),
    gcStop: () => rpc.call<GcCounts>({ cmd: 'gcStop' }),
    stop: () => rpc.stop(),
  }
}

/** The load generator, in its own process. */
export interface LoadGenerator {
  run(job: LoadJob): Promise<LoadResult>
  stop(): Promise<void>
}

/** Starts the load generator process. */
export async function spawnLoad(): Promise<LoadGenerator> {
  const child = fork(here('./load-child.ts'), [], { execArgv: EXEC_ARGV, env: { ...process.env, TSX_TSCONFIG_PATH: fromBench('../tsconfig.json') }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const rpc = new Rpc(child, 'load generator')
  await rpc.call({ cmd: 'ping' })
  return { run: (job) => rpc.call<LoadResult>({ cmd: 'run', job }), stop: () => rpc.stop() }
}
