/**
 * `ron-node start`: runs a node until SIGTERM/SIGINT.
 *
 * @module
 */

import { setHeapGrowingFactor, setYoungGenerationGrowth } from '@ron/core'
import { defaultDataDir } from '../data-dir.js'
import { etcdSettings, loadNodeConfig, remoteServices, type NodeConfig, type NodeConfigInput } from '../config.js'
import { createLogger } from '../logger.js'
import { writeNodeRecords } from '../node-records.js'
import { startNode, type NodeBase, type NodeReloadable, type NodeStorageOptions, type NodeSummary, type RonNode } from '../node.js'

/** Arguments of {@link startCommand} (flags; `undefined` means "not given"). */
export interface StartArgs {
  config?: string | undefined
  flags: NodeConfigInput
  /** Print one JSON line once ready instead of the human summary. */
  json?: boolean | undefined
}

/** Everything the start command touches outside itself; injectable for tests. */
export interface StartIo {
  stdout: NodeJS.WritableStream
  env: Record<string, string | undefined>
  /** Registers a handler for SIGTERM and SIGINT; returns a disposer. */
  onSignal(handler: (signal: NodeJS.Signals) => void): () => void
  /** Registers a handler for SIGHUP (config reload); returns a disposer. */
  onReload?(handler: () => void): () => void
  /** Applies the config's `heapGrowth` to the process (`setHeapGrowingFactor`). */
  tuneHeap?(factor: number | 'auto'): void
  /** Applies the config's `youngGenGrowth` to the process (`setYoungGenerationGrowth`). */
  tuneYoungGen?(factor: number | 'auto'): void
}

const processIo: StartIo = {
  stdout: process.stdout,
  env: process.env,
  onSignal(handler) {
    process.on('SIGTERM', handler)
    process.on('SIGINT', handler)
    return () => {
      process.off('SIGTERM', handler)
      process.off('SIGINT', handler)
    }
  },
  onReload(handler) {
    process.on('SIGHUP', handler)
    return () => process.off('SIGHUP', handler)
  },
  tuneHeap: setHeapGrowingFactor,
  tuneYoungGen: setYoungGenerationGrowth,
}

/** The human-readable summary printed by `start` without `--json`. */
export function humanSummary(s: NodeSummary): string {
  const width = Math.max(10, ...Object.keys(s.services).map((n) => n.length))
  const lines = [
    `ron-node ${s.nodeId} is ready`,
    `  ${'admin'.padEnd(width)}  ${s.admin}   (/ /metrics /healthz /readyz /status)`,
    ...Object.entries(s.services).map(([name, url]) => `  ${name.padEnd(width)}  ${url}`),
    ...(s.tokenFile === undefined ? [] : [`  ${'token file'.padEnd(width)}  ${s.tokenFile}`]),
    ...(s.dataDir === undefined ? [] : [`  ${'data dir'.padEnd(width)}  ${s.dataDir}`]),
    ...(s.token === undefined ? [] : [`  ${'amnesia'.padEnd(width)}  nothing is written to disk; admin token (kept nowhere):`, `  ${s.token}`]),
    'Press Ctrl+C to stop.',
  ]
  return `${lines.join('\n')}\n`
}

/** Drops `undefined` entries (zod output vs exactOptionalPropertyTypes). */
function withoutUndefined<T extends object>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> }
}

/** The other services' own config sections (without `passport.url` / `registry.url`, which are the node's). */
function serviceSections(config: NodeConfig): NodeReloadable {
  const out: NodeReloadable = {}
  const remote = remoteServices(config)
  for (const k of ['index', 'interop'] as const) if (config[k] !== undefined) out[k] = config[k]
  if (remote.passport !== undefined) out.passport = remote.passport
  if (remote.registry !== undefined) out.registry = remote.registry
  return out
}

/** The node-level base keys of every hosted service (`[http]`, `[cors]`, drain deadline and read window). */
export function nodeBase(config: Pick<NodeConfig, 'http' | 'cors' | 'drainReadWindow'> & { drainDeadline?: number | undefined }): NodeBase {
  return withoutUndefined({
    http: config.http === undefined ? undefined : withoutUndefined(config.http),
    cors: config.cors === undefined ? undefined : withoutUndefined(config.cors),
    drainDeadlineMs: config.drainDeadline,
    drainReadWindowMs: config.drainReadWindow,
  })
}

/** The node's storage settings from its config. */
export function nodeStorageOptions(config: NodeConfig): NodeStorageOptions {
  const { repair, ...rest } = config.storage
  const r = withoutUndefined({ intervalMs: repair.interval, bytesPerSec: repair.bytesPerSec, burst: repair.burst })
  return { ...withoutUndefined(rest), ...(Object.keys(r).length > 0 ? { repair: r } : {}) }
}

function writeAndWait(out: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve) => {
    if (out.write(text)) resolve()
    else out.once('drain', () => resolve())
  })
}

/**
 * Loads the config, starts the node, prints its URLs (or the JSON line) once ready, and waits for
 * SIGTERM/SIGINT. The first signal runs the shutdown sequence and resolves with 0. A later signal
 * is harmless (SPEC §3.3): it cannot cut short the writes being made durable; the drain deadline
 * already bounds the shutdown.
 * @throws {@link CliError} for bad config (exit 2), an unusable data dir or a port in use (exit 1).
 */
export async function startCommand(args: StartArgs, io: StartIo = processIo): Promise<number> {
  const config = loadNodeConfig({ file: args.config, env: io.env, flags: args.flags })
  // Before any service allocates: the node owns its process, so it picks V8's heap sizing.
  io.tuneHeap?.(config.heapGrowth)
  // The executable already applied the default young-generation factor before loading anything
  // (bin/ron-node.js); this applies the config's, which may differ.
  io.tuneYoungGen?.(config.youngGenGrowth)
  const logger = await createLogger({ level: config.logLevel })
  let node: RonNode | undefined
  let removeRecords: (() => void) | undefined
  let signaled: NodeJS.Signals | undefined
  let wake: (() => void) | undefined
  let wakeReady: (() => void) | undefined
  const stopped = new Promise<void>((resolve) => (wake = resolve))
  const dispose = io.onSignal((signal) => {
    if (signaled !== undefined) {
      logger.warn({ signal, drainDeadlineMs: config.drainDeadline }, 'shutdown already in progress: in-flight work has until the drain deadline, then it is aborted')
      return
    }
    signaled = signal
    logger.info({ signal }, 'signal received')
    wake?.()
    wakeReady?.()
  })
  const dispose2 = io.onReload?.(() => {
    if (node === undefined) return
    logger.info({}, 'SIGHUP: reloading config')
    node.reload().catch((e: unknown) => logger.error({ err: e }, 'config reload failed; the previous config stays in force'))
  })
  try {
    if (config.amnesia && config.dataDir !== undefined) logger.warn({ dataDir: config.dataDir }, 'amnesia mode: the data directory is ignored, nothing is written to disk')
    node = await startNode({
      ...(config.amnesia ? { amnesia: true } : { dataDir: config.dataDir ?? defaultDataDir({ env: io.env }) }),
      host: config.host,
      portBase: config.portBase,
      services: config.services,
      peers: config.peers,
      ...(config.advertise === undefined ? {} : { advertise: config.advertise }),
      ...(config.tls === undefined ? {} : { tls: config.tls }),
      ...withoutUndefined({ passportUrl: remoteServices(config).passportUrl, registryUrl: remoteServices(config).registryUrl, etcd: etcdSettings(config) }),
      // The node's base keys (drain deadline and read window, [http], [cors]): every service's defaults.
      ...nodeBase(config),
      adminTokenTtlSec: Math.max(60, Math.floor(config.adminTokenTtl / 1000)),
      storage: nodeStorageOptions(config),
      config: serviceSections(config),
      // SIGHUP and POST /admin/reload re-read the file and the environment (flags still win).
      reloadSource: () => {
        const c = loadNodeConfig({ file: args.config, env: io.env, flags: args.flags })
        return { ...nodeBase(c), storage: nodeStorageOptions(c), ...serviceSections(c) }
      },
      logger,
    })
    const readyAbort = new AbortController()
    wakeReady = () => readyAbort.abort()
    if (signaled === undefined) await node.whenReady(readyAbort.signal).catch(() => undefined)
    if (signaled === undefined) {
      const summary = node.summary()
      // Where the client commands find this node (`--data-dir`) and its token (`--node`); no token inside.
      if (summary.dataDir !== undefined) {
        try {
          removeRecords = writeNodeRecords({ pid: process.pid, nodeId: summary.nodeId, admin: summary.admin, services: summary.services, dataDir: summary.dataDir }, io.env, (msg, err) => logger.warn({ err }, msg))
        } catch (e) {
          logger.warn({ err: e }, 'could not write <data-dir>/run.json; ron-node --data-dir will not find this node')
        }
      }
      await writeAndWait(io.stdout, args.json === true ? `${JSON.stringify(summary)}\n` : humanSummary(summary))
      // The amnesia admin token is saved nowhere: stdout's ready line is its only copy, never a log
      // line (logs are collected, shipped and kept).
      const { token: _token, ...loggable } = summary
      logger.info(loggable, 'ready')
      await stopped
    }
    await node.close()
    return 0
  } finally {
    if (node !== undefined) await node.close()
    removeRecords?.()
    dispose()
    dispose2?.()
  }
}
