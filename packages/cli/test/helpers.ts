/**
 * Helpers of the end-to-end tests: spawn the real `ron-node` binary, collect its output, wait for
 * its JSON line, and make sure nothing outlives the test.
 */

import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { setTimeout as delay } from 'node:timers/promises'

/** The binary under test: `RON_NODE_BIN`, else the built `packages/cli/dist/bin.js`. */
export const BIN = process.env['RON_NODE_BIN'] ?? fileURLToPath(new URL('../dist/bin.js', import.meta.url))
/** The executable npm links (`bin/ron-node.js`): it sets up the process, then runs {@link BIN}. */
export const EXECUTABLE = fileURLToPath(new URL('../bin/ron-node.js', import.meta.url))

/** Throws a clear error when the binary has not been built. */
export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first (the root \`npm test\` does)`)
}

/** A spawned `ron-node`. */
export interface Proc {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  /** Resolves with the exit code (or 128+signal number style string when killed). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const live = new Set<ChildProcess>()

/** Spawns the binary (or `bin`) with `args`; the environment is cleaned of RON_* variables unless given. */
export function spawnCli(args: string[], env: Record<string, string> = {}, stdin: 'ignore' | 'pipe' = 'ignore', cwd?: string, bin = BIN): Proc {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('RON_') && k !== 'NODE_OPTIONS') base[k] = v
  const child = spawn(process.execPath, [bin, ...args], { env: { ...base, ...env }, stdio: [stdin, 'pipe', 'pipe'], ...(cwd === undefined ? {} : { cwd }) })
  live.add(child)
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s))
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child)
      resolve({ code, signal })
    }),
  )
  return { child, stdout: () => out, stderr: () => err, exited }
}

/** Runs the binary to completion. */
export async function runCli(args: string[], env: Record<string, string> = {}, input?: Buffer): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli(args, env, input === undefined ? 'ignore' : 'pipe')
  if (input !== undefined) p.child.stdin!.end(input)
  const { code } = await p.exited
  return { code, stdout: p.stdout(), stderr: p.stderr() }
}

/** Resolves with the first stdout line parsed as JSON; rejects if the process exits first or after `timeoutMs`. */
export async function firstJsonLine<T>(p: Proc, timeoutMs = 30_000): Promise<T> {
  const ac = new AbortController()
  try {
    return await Promise.race([
      new Promise<T>((resolve, reject) => {
        const check = (): void => {
          const nl = p.stdout().indexOf('\n')
          if (nl !== -1) {
            p.child.stdout!.off('data', check)
            try {
              resolve(JSON.parse(p.stdout().slice(0, nl)) as T)
            } catch (e) {
              reject(e instanceof Error ? e : new Error(String(e)))
            }
          }
        }
        p.child.stdout!.on('data', check)
        check()
      }),
      p.exited.then(({ code }) => {
        throw new Error(`ron-node exited (${code}) before printing its JSON line: ${p.stderr()}`)
      }),
      delay(timeoutMs, undefined, { signal: ac.signal, ref: false }).then(() => {
        throw new Error(`no JSON line within ${timeoutMs} ms: ${p.stderr()}`)
      }),
    ])
  } finally {
    ac.abort()
  }
}

/** Polls `url` until it answers 200, at most `attempts` times (a bounded loop, not a sleep). */
export async function pollOk(url: string, attempts = 200): Promise<Response> {
  let last: unknown
  for (let i = 0; i < attempts; i++) {
    try {
      const res = await fetch(url)
      if (res.status === 200) return res
      last = res.status
      await res.body?.cancel()
    } catch (e) {
      last = e
    }
    await delay(25)
  }
  throw new Error(`${url} never answered 200 (last: ${String(last)})`)
}

/** Kills every process still running (afterEach/afterAll). */
export async function killAll(): Promise<void> {
  await killAllBut([])
}

/** Kills every process still running but those of `keep` (a file's shared node, in afterEach). */
export async function killAllBut(keep: readonly Proc[]): Promise<void> {
  const waits: Promise<unknown>[] = []
  for (const c of live) {
    if (keep.some((p) => p.child === c)) continue
    waits.push(new Promise((r) => c.once('exit', r)))
    c.kill('SIGKILL')
  }
  await Promise.all(waits)
}

/** True when every port of base..base+5 can be bound on 127.0.0.1 right now. */
async function rangeFree(base: number): Promise<boolean> {
  const { createServer } = await import('node:net')
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

/**
 * `n` disjoint port ranges that are free right now (each base..base+5), for nodes that list each
 * other. Drawn from 20000–31999, below Linux's ephemeral range (32768–60999): the `--port-base 0`
 * nodes and the client sockets of the tests running beside this one (two test files at a time)
 * take their ports there, so they cannot grab a range between this check and the node's bind.
 */
export async function freeBases(n: number): Promise<number[]> {
  const out: number[] = []
  let candidate = 20_000 + Math.floor(Math.random() * 1_150) * 10
  while (out.length < n) {
    if (await rangeFree(candidate)) out.push(candidate)
    candidate += 10
  }
  return out
}

/**
 * Starts node `i` of a cluster on loopback: its port range `bases[i]`, its data directory
 * `dirs[i]`, every other node of `bases` as a peer, a short drain, then `args`. Call it again with
 * the same `i` to restart that node on the same ports and data.
 */
export function clusterNode(bases: readonly number[], dirs: readonly string[], args: readonly string[] = []): (i: number) => Proc {
  const admins = bases.map((b) => `http://127.0.0.1:${b}`)
  return (i) =>
    spawnCli(['start', '--json', '--log-level', 'warn', '--port-base', String(bases[i]), '--data-dir', dirs[i]!, '--peers', admins.filter((_, j) => j !== i).join(','), '--drain-deadline', '500ms', ...args])
}
