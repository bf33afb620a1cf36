/**
 * `createIndexService(config, transport, runtime)`: the index on the service contract
 * (docs/service-contract.md). The host owns the lifecycle, limits, CORS, readiness and metrics
 * registration; this file only wires the index's parts onto it, per the seed's topology (see
 * `topology.ts`, `parts.ts`, `tasks.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { ConfigError, createServiceHost, generateIssuerKey, newNodeId, noTransport, nodeIdentityFromKey, splitRuntime, systemRandom, validateConfig } from '@ron/core'
import type { DependencyCheck, NodeIdentity, NotReadyError, RonService, ServiceHost, Subscription, Transport } from '@ron/core'
import type { Resolution } from './answer.js'
import { INDEX_IMMUTABLE_KEYS, INDEX_RUNTIME_KEYS, indexConfigSchema, type IndexRuntime, type IndexServiceOptions, type ResolvedIndexConfig } from './config.js'
import { DISK_DEPENDENCY, diskFault } from './disk-gate.js'
import { indexContext, indexParts, homeStoredRecords, type IndexParts } from './parts.js'
import type { NameConflict } from './remote-names.js'
import type { ResolveOptions } from './resolver.js'
import { indexRoutes, type IndexEvent } from './routes/index.js'
import { createMemoryNameStore, openLmdbNameStore, type NameStore } from './store/index.js'
import { spawnIndexTasks } from './tasks.js'
import { PATHS, indexTopology } from './topology.js'
import { packageVersion } from './version.js'

/** The index service: a {@link RonService} plus index-specific handles. */
export interface IndexService extends RonService {
  /** Resolves in-process, exactly as `GET /resolve/:key` (without the HTTP layer or the work queue). */
  resolve(key: string, options?: ResolveOptions): Promise<Resolution>
  /** The current configuration snapshot. */
  config(): ResolvedIndexConfig
  /** Subscribes to the `events` broadcast (drop-oldest). */
  subscribe(): Subscription<IndexEvent>
  /** True when names are kept on disk (LMDB); false in amnesia or memory mode. */
  readonly durable: boolean
  /** This node's identity: the home of the names this index stores (ephemeral unless `identity` was given). */
  readonly identity: NodeIdentity
  /**
   * Names two remote homes both claim (SPEC §6a: the lower node id is believed), for the node to
   * show in `/status`. Memory only, at most 1024, most recent last.
   */
  conflicts(): NameConflict[]
}

/** Readiness dependencies: the name store is open; some source of answers is alive. */
const STORE_DEPENDENCY = 'store'
const SOURCES_DEPENDENCY = 'sources'

function identityOf(rt: IndexRuntime): NodeIdentity {
  const { identity, nodes } = rt
  if (identity === undefined) {
    if (nodes !== undefined) throw new ConfigError('identity: required with nodes (the node directory names this node)', { details: { path: 'identity' } })
    return nodeIdentityFromKey(newNodeId(), generateIssuerKey())
  }
  if (nodes !== undefined && nodes.selfId !== identity.id) {
    throw new ConfigError(`identity: node ${identity.id} is not the directory's own node ${nodes.selfId}`, { details: { path: 'identity' } })
  }
  return identity
}

/**
 * Creates an index service. With `dataDir` (and not `amnesia`) names are durable in LMDB; provider
 * records are always soft state. Peers (`peers.targets`) and the storage target are reached
 * through `transport` (none: peers are a {@link ConfigError}, manifest fetches answer 503
 * `Unavailable` `no_transport`). `runtime` carries the injected objects: `auth`, `identity`,
 * `nodes`, a `nameStore`, `clock`, `logger`… (a config that still carries them, the form before the
 * runtime argument, is accepted: they are split out; deprecated, see {@link IndexServiceOptions}).
 *
 * @throws {@link ConfigError} for invalid configuration (`details.path` names the key).
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createIndexService } from '@ron/index'
 *
 * const index = await createIndexService({ dataDir: './data/index' }, transport, { auth: { keys: jwks } })
 * createServer(index.handle).listen(7704)
 * ```
 */
export async function createIndexService(config: IndexServiceOptions = {}, transport?: Transport, runtime: IndexRuntime = {}): Promise<IndexService> {
  const { data, runtime: rt } = splitRuntime<IndexRuntime>(config, runtime, INDEX_RUNTIME_KEYS)
  // Validates the config (ConfigError naming the field) before anything is opened.
  const o = validateConfig(indexConfigSchema, data)
  if (transport === undefined && o.peers.targets.length > 0) throw new ConfigError('index config: peers.targets need a transport', { details: { path: 'peers.targets' } })
  const identity = identityOf(rt)
  const store: NameStore = rt.nameStore ?? (o.amnesia || o.dataDir === undefined ? createMemoryNameStore() : await openLmdbNameStore({ dir: o.dataDir }))
  try {
    // Bindings stored before records were signed (or under another identity) are homed here now:
    // their records are rewritten as this node's, and signed when served. A disk that refuses the
    // write does not stop the start: the names are served (their records homed on the fly, byte
    // for byte the same), writes stay unready, and the store janitor retries.
    let fault: NotReadyError | undefined
    try {
      // A shared store keeps the record of the node that wrote each binding.
      if (store.shared !== true) await homeStoredRecords(store, identity)
    } catch (e) {
      fault = diskFault(e)
      if (fault === undefined) throw e
    }
    return build(data, o, transport, rt, identity, store, fault)
  } catch (e) {
    await store.close().catch(() => undefined)
    throw e
  }
}

function build(input: Record<string, unknown>, o: ResolvedIndexConfig, transport: Transport | undefined, rt: IndexRuntime, identity: NodeIdentity, store: NameStore, fault: NotReadyError | undefined): IndexService {
  let parts: IndexParts | undefined
  const host: ServiceHost<ResolvedIndexConfig> = createServiceHost({
    id: o.id,
    version: o.version ?? packageVersion(),
    topology: indexTopology(o),
    runtime: rt,
    ...(transport === undefined ? {} : { transport }),
    config: { schema: indexConfigSchema, input, immutable: INDEX_IMMUTABLE_KEYS, extendsBase: true },
    readiness: {
      dependencies: [
        { name: STORE_DEPENDENCY, gates: 'both', check: () => (store.closed === true ? 'closed' : true) },
        { name: SOURCES_DEPENDENCY, gates: 'read', check: () => sourcesAlive(host, parts, store) },
        { name: DISK_DEPENDENCY, gates: 'write', ok: true },
      ],
      paths: { [PATHS.resolve]: { needs: [STORE_DEPENDENCY, SOURCES_DEPENDENCY], shed: 'reads' }, [PATHS.names]: { needs: [STORE_DEPENDENCY, DISK_DEPENDENCY], shed: 'writes' } },
    },
    // SPEC §3.3a: the index turns unready as a whole at the start of a drain (no read window).
    drain: { readWindow: false },
  })
  const net = transport ?? noTransport(o.id)
  const p = (parts = indexParts(host, store, net, rt.random ?? systemRandom, identity, rt.nodes))
  host.routes(indexRoutes(indexContext(host, p, store, net, identity, rt.nodes)))
  // Per-IP admission refusals are counted as rejections too (SPEC §4 `rejected_total{reason}`).
  host.onError((err) => {
    const reason = err.status === 429 ? (err.details as { reason?: unknown }).reason : undefined
    if (reason === 'per_ip' || reason === 'per_ip_rate') p.metrics.nameRecordsRejected.inc({ reason })
  })
  p.metrics.names.set(store.count())
  // A shared store: what another node wrote replaces what was cached or learnt of the name.
  const offStoreChange = store.onChange?.((name) => {
    p.remote.forget(name)
    p.resolver.invalidate(name)
    p.metrics.names.set(store.count())
  })
  if (fault !== undefined) {
    p.unsigned = true
    p.disk.failed(fault)
  }
  const tasks = spawnIndexTasks(host, p, store, identity)
  // The host swapped the validated snapshot (and applied the base keys); the caches follow their
  // new bounds, and a changed peer list or breaker setting goes to the breaker janitor.
  host.onReload(() => {
    p.reconfigure()
    tasks.peersChanged()
  })
  host.onClose(async () => {
    offStoreChange?.()
    tasks.close()
    // Write-backs in flight land (or fail) before the store closes; those still waiting are dropped.
    await p.writeBack.close()
    p.clear()
    await store.close()
  })
  return {
    ...host.service,
    resolve: (key, options = {}) => p.resolver.resolve(key, { ...options, signal: options.signal === undefined ? host.signal : AbortSignal.any([options.signal, host.signal]) }),
    config: () => host.config.get(),
    subscribe: () => p.events.subscribe(),
    durable: store.durable,
    identity,
    conflicts: () => p.remote.conflicts(),
  }
}

/**
 * The `sources` dependency: the index can answer from somewhere. Ready without peers (the index is
 * its own source), while at least one peer's breaker is not open, or while it holds names or
 * provider records of its own; `no_sources` when every peer's breaker is open and it holds nothing.
 */
function sourcesAlive(host: ServiceHost<ResolvedIndexConfig>, p: IndexParts | undefined, store: NameStore): ReturnType<DependencyCheck> {
  if (p === undefined || host.config.get().peers.targets.length === 0) return true
  if (p.breakers.all().some((b) => b.breaker.state !== 'open')) return true
  if (p.providers.size > 0 || (store.closed !== true && store.list('', undefined, 1).length > 0)) return true
  return 'no_sources'
}
