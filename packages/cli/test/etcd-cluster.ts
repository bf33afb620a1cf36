/**
 * A real etcd cluster for tests and benchmarks: `size` members of Debian's `etcd` (etcd-server)
 * on loopback, on free ports, each with its own temporary data directory, with fast elections
 * (heartbeat 50 ms, election timeout 500 ms) so that failures settle within a test's time. Members
 * can be killed and restarted (same name, ports and data: they rejoin the cluster). Every wait is
 * bounded; `close()` kills what is left and removes the data.
 */

import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

/** The etcd binary: `ETCD_BIN`, else the first `etcd` on the PATH, else Debian's `/usr/bin/etcd`. */
export function etcdBinary(): string | undefined {
  const env = process.env['ETCD_BIN']
  if (env !== undefined && existsSync(env)) return env
  const which = spawnSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' })
  const found = which.status === 0 ? which.stdout.trim() : ''
  if (found !== '') return found
  return existsSync('/usr/bin/etcd') ? '/usr/bin/etcd' : undefined
}

/** Why etcd tests skip here (undefined when etcd is available). */
export function etcdMissing(): string | undefined {
  return etcdBinary() === undefined ? 'etcd is not installed (apt-get install etcd-server, or set ETCD_BIN): the etcd cluster tests are skipped' : undefined
}

/** One member of the cluster. */
export interface EtcdMember {
  name: string
  clientUrl: string
  peerUrl: string
  dataDir: string
  /** True while its process runs. */
  readonly running: boolean
}

/** A running etcd cluster. */
export interface EtcdCluster {
  /** Client URLs of every member (what `coordination.etcd.endpoints` takes). */
  readonly endpoints: string[]
  readonly members: readonly EtcdMember[]
  /** Kills member `i` (SIGKILL by default) and waits for its exit. */
  stop(i: number, signal?: NodeJS.Signals): Promise<void>
  /** Restarts member `i` with its data and waits until it answers `/health` (or `/version` when the cluster has no quorum). */
  start(i: number): Promise<void>
  /** Waits until the cluster has a leader and answers `/health` true on some member. */
  healthy(timeoutMs?: number): Promise<void>
  /** Kills every member and removes the data. Idempotent. */
  close(): Promise<void>
}

/** `n` free TCP ports on 127.0.0.1 (bound together, so they are distinct, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<import('node:net').Server>((resolve, reject) => {
          const s = createServer()
          s.once('error', reject)
          s.listen(0, '127.0.0.1', () => resolve(s))
        }),
    ),
  )
  const ports = servers.map((s) => (s.address() as import('node:net').AddressInfo).port)
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))))
  return ports
}

async function answers(url: string, path: string, timeoutMs = 500): Promise<unknown> {
  try {
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(timeoutMs) })
    return res.ok ? await res.json() : undefined
  } catch {
    return undefined
  }
}

/**
 * Starts a `size`-member etcd cluster on loopback and waits (at most `timeoutMs`) until it is
 * healthy.
 * @throws when etcd is missing or the cluster does not come up in time (its logs are in the message)
 */
export async function startEtcdCluster(options: { size?: number; timeoutMs?: number } = {}): Promise<EtcdCluster> {
  const bin = etcdBinary()
  if (bin === undefined) throw new Error(etcdMissing())
  const size = options.size ?? 3
  const root = await mkdtemp(join(tmpdir(), 'ron-etcd-'))
  const ports = await freePorts(2 * size)
  const members = Array.from({ length: size }, (_, i) => ({
    name: `m${i}`,
    clientUrl: `http://127.0.0.1:${ports[2 * i]!}`,
    peerUrl: `http://127.0.0.1:${ports[2 * i + 1]!}`,
    dataDir: join(root, `m${i}`),
    proc: undefined as ChildProcess | undefined,
    started: false,
    get running(): boolean {
      return this.proc !== undefined
    },
  }))
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',')
  const token = `ron-test-${ports[0]!}`

  const launch = async (i: number): Promise<void> => {
    const m = members[i]!
    if (m.proc !== undefined) return
    await mkdir(m.dataDir, { recursive: true })
    const log = createWriteStream(join(root, `${m.name}.log`), { flags: 'a' })
    const child = spawn(
      bin,
      [
        `--name=${m.name}`,
        `--data-dir=${m.dataDir}`,
        `--listen-client-urls=${m.clientUrl}`,
        `--advertise-client-urls=${m.clientUrl}`,
        `--listen-peer-urls=${m.peerUrl}`,
        `--initial-advertise-peer-urls=${m.peerUrl}`,
        `--initial-cluster=${initialCluster}`,
        `--initial-cluster-token=${token}`,
        `--initial-cluster-state=${m.started ? 'existing' : 'new'}`,
        '--heartbeat-interval=50',
        '--election-timeout=500',
        '--log-level=warn',
        '--logger=zap',
        '--quota-backend-bytes=268435456',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ETCD_UNSUPPORTED_ARCH: process.env['ETCD_UNSUPPORTED_ARCH'] ?? '' } },
    )
    child.stdout.pipe(log)
    child.stderr.pipe(log)
    m.started = true
    m.proc = child
    child.once('exit', () => {
      if (m.proc === child) m.proc = undefined
      log.end()
    })
  }

  const healthy = async (timeoutMs = 20_000): Promise<void> => {
    const until = Date.now() + timeoutMs
    while (Date.now() < until) {
      for (const m of members) {
        if (m.proc === undefined) continue
        const h = (await answers(m.clientUrl, '/health')) as { health?: unknown } | undefined
        if (h?.health === 'true' || h?.health === true) return
      }
      await delay(50)
    }
    throw new Error(`etcd cluster not healthy within ${timeoutMs} ms (logs in ${root})`)
  }

  let closed = false
  const cluster: EtcdCluster = {
    endpoints: members.map((m) => m.clientUrl),
    members,
    async stop(i, signal = 'SIGKILL') {
      const p = members[i]!.proc
      if (p === undefined) return
      const exited = new Promise((r) => p.once('exit', r))
      p.kill(signal)
      await Promise.race([exited, delay(10_000)])
    },
    async start(i) {
      await launch(i)
      const m = members[i]!
      const until = Date.now() + 20_000
      while (Date.now() < until) {
        if ((await answers(m.clientUrl, '/version')) !== undefined) return
        if (m.proc === undefined) throw new Error(`etcd member ${m.name} exited on restart (logs in ${root})`)
        await delay(50)
      }
      throw new Error(`etcd member ${m.name} did not answer within 20 s (logs in ${root})`)
    },
    healthy,
    async close() {
      if (closed) return
      closed = true
      await Promise.all(members.map((_, i) => cluster.stop(i)))
      await rm(root, { recursive: true, force: true })
    },
  }
  try {
    await Promise.all(members.map((_, i) => launch(i)))
    await healthy(options.timeoutMs ?? 20_000)
  } catch (e) {
    await cluster.close()
    throw e
  }
  return cluster
}
