/**
 * `status` (a table of every service of a node) and `doctor` (checks that say what to do).
 *
 * @module
 */

import { lstat, readFile, statfs } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { output, resolveNodeUrl, type ClientOptions } from '../client.js'
import { defaultDataDir, errnoText } from '../data-dir.js'
import { CliError, ExitCode } from '../exit-codes.js'
import { DATA_DIR_FORMAT } from '../identity.js'
import { DEFAULT_PORT_BASE, PORT_OFFSETS } from '../ports.js'

/** Options of these commands. */
export interface StatusArgs extends ClientOptions {
  json?: boolean | undefined
}

interface StatusDoc {
  nodeId: string
  version: string
  ready: boolean
  uptimeSec: number
  services: Record<string, { url: string; ready: boolean; writeReady: boolean; missing: string[]; queues: { name: string; depth: number; capacity: number; dropped?: number }[] }>
  peers?: { admin: string; state?: string; nodeId?: string; error?: string }[]
  /** The etcd connection (SPEC §6c), when the cluster coordinates on etcd. */
  etcd?: { endpoints: string[]; prefix: string; reachable: boolean; lastOkAt?: number; error?: string; signer?: { holder?: string; self: boolean } }
}

/** The `etcd` line of `status`. */
function etcdLine(e: NonNullable<StatusDoc['etcd']>): string {
  const signer = e.signer === undefined ? '' : `  checkpoint signer ${e.signer.self ? 'this node' : (e.signer.holder ?? 'none (lease free)')}`
  return `etcd ${e.endpoints.join(',')}  prefix ${e.prefix}  ${e.reachable ? 'reachable' : `UNREACHABLE (${e.error ?? 'no quorum'}): writes that need it answer 503`}${signer}`
}

async function fetchStatus(node: string): Promise<StatusDoc> {
  let res: Response
  try {
    res = await fetch(`${node}/status`, { signal: AbortSignal.timeout(5000) })
  } catch (e) {
    throw new CliError(`cannot reach ${node}: ${errnoText((e as { cause?: unknown }).cause ?? e)}; is the node running? (ron-node start, or --node)`, ExitCode.Unavailable, { cause: e })
  }
  if (!res.ok) throw new CliError(`${node}/status answered ${res.status}; --node must be a node's admin URL`, ExitCode.Unavailable)
  return (await res.json()) as StatusDoc
}

function duration(sec: number): string {
  if (sec < 120) return `${sec}s`
  if (sec < 7200) return `${Math.round(sec / 60)}m`
  if (sec < 172_800) return `${Math.round(sec / 3600)}h`
  return `${Math.round(sec / 86_400)}d`
}

/** The registry's keys: the log's verifier key (Go's `note` form, what clients pin) and this node's witness key. */
async function registryKeys(url: string): Promise<{ logKey: string; witnessKey?: string } | undefined> {
  try {
    const res = await fetch(`${url}/registry/head`, { signal: AbortSignal.timeout(5000) })
    if (!res.ok) return undefined
    const h = (await res.json()) as { logKey?: unknown; witnessKey?: unknown }
    if (typeof h.logKey !== 'string') return undefined
    return typeof h.witnessKey === 'string' ? { logKey: h.logKey, witnessKey: h.witnessKey } : { logKey: h.logKey }
  } catch {
    return undefined
  }
}

/** `status`: every service with readiness, queue depths (and drops), the node's uptime and the registry's keys. */
export async function statusCommand(args: StatusArgs, out: NodeJS.WritableStream): Promise<void> {
  const node = resolveNodeUrl(args)
  const s = await fetchStatus(node)
  const reg = s.services['registry']
  const keys = reg === undefined ? undefined : await registryKeys(reg.url)
  const rows = Object.entries(s.services).map(([name, v]) => [
    name,
    v.ready ? 'ready' : `NOT READY (${v.missing.join(', ') || '?'})`,
    v.writeReady ? 'yes' : 'no',
    v.queues.filter((q) => q.capacity > 1).map((q) => `${q.name} ${q.depth}/${q.capacity}${q.dropped ? ` -${q.dropped}` : ''}`).join(', '),
    v.url,
  ])
  const head = ['service', 'ready', 'writes', 'queues (depth/capacity -dropped)', 'url']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const fmt = (r: string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')
  const lines = [
    `node ${s.nodeId}  ron-node ${s.version}  up ${duration(s.uptimeSec)}  ${s.ready ? 'ready' : 'NOT READY'}`,
    fmt(head),
    ...rows.map(fmt),
    ...(s.peers ?? []).map((p) => `peer ${p.admin}  ${p.state ?? ''}  ${p.nodeId ?? '?'}${p.error === undefined ? '' : `  (${p.error})`}`),
    ...(s.etcd === undefined ? [] : [etcdLine(s.etcd)]),
    ...(keys === undefined ? [] : [`registry log key  ${keys.logKey}`]),
    ...(keys?.witnessKey === undefined ? [] : [`witness key       ${keys.witnessKey}`]),
  ]
  output(out, args.json, keys === undefined ? s : { ...s, registryKeys: keys }, lines.join('\n'))
}

/** The first network error code in a `cause` chain. */
function networkCodeOf(e: unknown): string | undefined {
  let cur: unknown = e
  for (let i = 0; i < 6 && cur !== null && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('E')) return code
    cur = (cur as { cause?: unknown }).cause
  }
  return undefined
}

/** The admin port of a loopback node URL (the base of its service ports); else undefined (nothing to probe here). */
function basePort(node: string | undefined): number | undefined {
  if (node === undefined) return DEFAULT_PORT_BASE
  const u = new URL(node)
  if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost' && u.hostname !== '[::1]') return undefined
  const port = Number(u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : u.port)
  return port + 5 <= 65_535 ? port : undefined
}

/** One finding of `doctor`. */
export interface Finding {
  check: string
  status: 'ok' | 'warn' | 'fail'
  detail: string
  /** What to do about it (warn/fail). */
  fix?: string
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

async function modeOf(path: string): Promise<number | undefined> {
  try {
    return (await lstat(path)).mode & 0o777
  } catch {
    return undefined
  }
}

/**
 * `doctor`: node reachability, data directory and key file permissions, format version, ports,
 * disk space, peers' reachability and clock skew. Exit 1 when a check fails.
 */
export async function doctorCommand(args: StatusArgs, out: NodeJS.WritableStream): Promise<Finding[]> {
  const findings: Finding[] = []
  const add = (f: Finding): void => void findings.push(f)
  const node = resolveNodeUrl(args, true)
  const dataDir = args.dataDir ?? defaultDataDir({ env: args.env ?? process.env })
  let status: StatusDoc | undefined
  let refused = node === undefined
  if (node !== undefined) {
    try {
      status = await fetchStatus(node)
      add({ check: 'node', status: status.ready ? 'ok' : 'warn', detail: `${node} answers, ${status.ready ? 'every service ready' : 'not every service is ready'}`, ...(status.ready ? {} : { fix: 'see ron-node status for what is missing' }) })
    } catch (e) {
      refused = networkCodeOf(e) === 'ECONNREFUSED'
      if (!refused) add({ check: 'node', status: 'fail', detail: (e as Error).message, fix: 'check --node: it must be a running node\'s admin URL' })
    }
  }
  if (refused) {
    // One finding, not one per port: nothing listens there, so the ports are not what is wrong.
    add({
      check: 'node',
      status: 'fail',
      detail: node === undefined ? `not running: no node runs on data dir ${dataDir}` : `not running: nothing listens at ${node}`,
      fix: `start it: ron-node start${args.dataDir === undefined ? '' : ` --data-dir ${args.dataDir}`}`,
    })
    const base = basePort(node)
    if (base !== undefined) {
      const busy: number[] = []
      for (const off of Object.values(PORT_OFFSETS)) if (off !== 0 && !(await portFree(base + off))) busy.push(base + off)
      if (busy.length > 0) add({ check: 'ports', status: 'warn', detail: `${busy.join(', ')} in use by another program: a start on port base ${base} would fail`, fix: 'stop that program or start ron-node with --port-base' })
    }
  }

  const dirMode = await modeOf(dataDir)
  if (dirMode === undefined) add({ check: 'data dir', status: 'warn', detail: `${dataDir} does not exist`, fix: 'it is created by ron-node start; pass --data-dir if the node uses another' })
  else {
    add({ check: 'data dir', status: (dirMode & 0o077) === 0 ? 'ok' : 'fail', detail: `${dataDir} mode ${dirMode.toString(8)}`, ...((dirMode & 0o077) === 0 ? {} : { fix: `chmod 700 ${dataDir}` }) })
    for (const f of ['keys/issuer.json', 'keys/node.json', 'admin.token']) {
      const m = await modeOf(join(dataDir, f))
      if (m === undefined) add({ check: f, status: 'warn', detail: 'missing', fix: 'created at the next ron-node start' })
      else add({ check: f, status: (m & 0o077) === 0 ? 'ok' : 'fail', detail: `mode ${m.toString(8)}`, ...((m & 0o077) === 0 ? {} : { fix: `chmod 600 ${join(dataDir, f)}` }) })
    }
    try {
      const nodeFile = JSON.parse(await readFile(join(dataDir, 'node.json'), 'utf8')) as { format?: number }
      const ok = nodeFile.format === DATA_DIR_FORMAT
      add({ check: 'format', status: ok ? 'ok' : 'warn', detail: `data directory format ${String(nodeFile.format)} (this release: ${DATA_DIR_FORMAT})`, ...(ok ? {} : { fix: (nodeFile.format ?? 0) > DATA_DIR_FORMAT ? 'upgrade ron-node' : 'the next start migrates it' }) })
    } catch (e) {
      add({ check: 'format', status: 'warn', detail: `node.json: ${errnoText(e)}`, fix: 'created at the next ron-node start' })
    }
    try {
      const fs = await statfs(dataDir)
      const free = fs.bavail * fs.bsize
      const gib = free / 2 ** 30
      add({ check: 'disk', status: gib >= 1 ? 'ok' : 'warn', detail: `${gib.toFixed(1)} GiB free`, ...(gib >= 1 ? {} : { fix: 'free some space: storage turns writes unready when the disk is nearly full' }) })
    } catch (e) {
      add({ check: 'disk', status: 'warn', detail: errnoText(e) })
    }
  }

  const etcd = status?.etcd
  if (etcd !== undefined) {
    // The node's own view (a quorum read every second), then each member's health from here.
    add({
      check: 'etcd',
      status: etcd.reachable ? 'ok' : 'fail',
      detail: etcd.reachable ? `quorum reachable, prefix ${etcd.prefix}` : `no quorum: ${etcd.error ?? '?'}`,
      ...(etcd.reachable ? {} : { fix: 'start the stopped etcd members (a majority must run); registry commits, revocations and name writes answer 503 until then' }),
    })
    for (const url of etcd.endpoints) {
      try {
        const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(3000) })
        const h = (await res.json()) as { health?: unknown }
        const ok = h.health === 'true' || h.health === true
        add({ check: `etcd ${url}`, status: ok ? 'ok' : 'warn', detail: ok ? 'healthy' : `unhealthy (${res.status})`, ...(ok ? {} : { fix: 'see that member\'s log: etcdctl endpoint status --cluster' }) })
      } catch (e) {
        // A member behind TLS or only reachable from the node is not a failure of the cluster.
        add({ check: `etcd ${url}`, status: 'warn', detail: `not reachable from here: ${errnoText((e as { cause?: unknown }).cause ?? e)}`, fix: 'check that member is running (etcdctl endpoint health --cluster)' })
      }
    }
  }

  for (const p of status?.peers ?? []) {
    if (p.state === 'refused') {
      add({ check: `peer ${p.admin}`, status: 'fail', detail: `refused: ${p.error ?? '?'}`, fix: `if that node was reinstalled on purpose: ron-node peers forget ${p.admin}` })
      continue
    }
    if (p.error !== undefined) {
      add({ check: `peer ${p.admin}`, status: 'warn', detail: p.error, fix: 'check that node is running and reachable from here' })
      continue
    }
    try {
      const t0 = Date.now()
      const res = await fetch(`${p.admin}/version`, { signal: AbortSignal.timeout(3000) })
      const t1 = Date.now()
      await res.body?.cancel()
      const date = Date.parse(res.headers.get('date') ?? '')
      const skewSec = Number.isFinite(date) ? Math.round((date - (t0 + t1) / 2) / 1000) : 0
      const ok = Math.abs(skewSec) <= 10
      add({ check: `peer ${p.admin}`, status: ok ? 'ok' : 'warn', detail: `reachable, clock skew ${skewSec}s`, ...(ok ? {} : { fix: 'synchronise clocks (NTP): tokens carry exp/nbf with a 30 s tolerance' }) })
    } catch (e) {
      add({ check: `peer ${p.admin}`, status: 'fail', detail: errnoText((e as { cause?: unknown }).cause ?? e), fix: 'check that node is running and reachable from here' })
    }
  }

  const mark = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' } as const
  const lines = findings.map((f) => `${mark[f.status]}  ${f.check.padEnd(18)} ${f.detail}${f.fix === undefined ? '' : `\n      → ${f.fix}`}`)
  output(out, args.json, findings, lines.join('\n'))
  if (findings.some((f) => f.status === 'fail')) throw new CliError(`doctor found ${findings.filter((f) => f.status === 'fail').length} problem(s)`, ExitCode.Error)
  return findings
}
