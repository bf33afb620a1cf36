/**
 * A bench server factory started under `valgrind --tool=callgrind` (`tools/callgrind-child.ts`
 * in the child), with JIT frames named through `--perf-basic-prof`: what `tools/callgrind.ts` and
 * `tools/callgrind-commit.ts` count instructions on. Resolves once the child prints its
 * `LISTENING` line; rejects, with the end of its stderr, when it exits first.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { SERVER_HEAP_GROWTH, SERVER_TSCONFIG, SERVER_YOUNG_GROWTH, fromBench } from './process.js'

/** A server running under callgrind. */
export interface CallgrindServer {
  child: ChildProcess
  url: string
  /** The server's pid, for `callgrind_control`. */
  pid: string
  /** The factory's `extra`: a bearer token, the manifests of `index/names.ts`, … */
  extra: { token?: string; manifests?: string[] }
}

/**
 * Starts `factory` (a path under `bench/servers/`) with `options` under callgrind, writing its
 * profiles (`cg.<pid>…`) and V8's code map log into `dir`.
 */
export async function startUnderCallgrind(dir: string, factory: string, options: unknown): Promise<CallgrindServer> {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      // RON_CALLGRIND_ARGS: more valgrind options, e.g. `--cache-sim=yes` (D1/LL misses per request).
      ...(process.env.RON_CALLGRIND_ARGS ?? '').split(' ').filter((a) => a !== ''),
      `--callgrind-out-file=${dir}/cg.%p`,
      process.execPath,
      '--import',
      'tsx',
      '--perf-basic-prof',
      '--no-logfile-per-isolate',
      `--logfile=${dir}/v8.log`,
      fileURLToPath(new URL('../tools/callgrind-child.ts', import.meta.url)),
      fromBench(`./servers/${factory}`),
      JSON.stringify(options),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RON_BENCH_HEAP_GROWTH: SERVER_HEAP_GROWTH, RON_BENCH_YOUNG_GROWTH: SERVER_YOUNG_GROWTH, TSX_TSCONFIG_PATH: SERVER_TSCONFIG } },
  )
  const [url, pid, extraJson] = await untilListening(child)
  return { child, url, pid, extra: JSON.parse(extraJson) as CallgrindServer['extra'] }
}

/**
 * Resolves with the URL, pid and `extra` JSON of a bench server child's `LISTENING` line
 * (`tools/callgrind-child.ts` prints it); rejects, with the end of its stderr when piped, when the
 * child exits first.
 */
export function untilListening(child: ChildProcess): Promise<[url: string, pid: string, extraJson: string]> {
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /LISTENING (\S+) (\d+) (.*)\n/.exec(out)
      if (m) resolve([m[1]!, m[2]!, m[3]!])
    })
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${stderr.slice(-2000)}`)))
  })
}
