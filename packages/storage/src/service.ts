/**
 * `createStorageService(config, transport, runtime)`: storage on the service contract
 * (docs/service-contract.md). The host owns the lifecycle, limits, CORS, readiness and metrics
 * registration; this file only wires storage's parts onto it, per the seed's topology (see
 * `topology.ts`, `parts.ts`, `tasks.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { join } from 'node:path'
import { ConfigError, createServiceHost, noTransport, splitRuntime } from '@ron/core'
import type { Address, RonService, ServiceHost, Subscription, Transport } from '@ron/core'
import { STORAGE_IMMUTABLE_KEYS, STORAGE_RUNTIME_KEYS, resolveConfig, resolvedStorageConfigSchema, type ResolvedStorageConfig, type StorageConfig, type StorageRuntime, type StorageServiceOptions } from './config.js'
import { DISK_DEPENDENCY, DiskWatch, type StorageUsage } from './disk-watch.js'
import type { StorageEvent } from './events.js'
import { PEER_SERIES, STORAGE_METRICS } from './metrics.js'
import { storageParts } from './parts.js'
import { PinSet } from './pins.js'
import type { RepairPlan } from './repair-state.js'
import { storageRoutes } from './routes/index.js'
import { storageContext } from './service-context.js'
import { createFsStore, createMemoryStore } from './store/index.js'
import type { BlobStore } from './store/types.js'
import { spawnStorageTasks } from './tasks.js'
import { storageTopology } from './topology.js'
import { packageVersion } from './version.js'

export type { StorageUsage } from './disk-watch.js'

/** The storage service: a {@link RonService} plus storage-specific handles. */
export interface StorageService extends RonService {
  /** This node's transport name. */
  readonly nodeId: string
  /** The backend (for hosts and tests; writing to it directly bypasses replication and announcements). */
  readonly store: BlobStore
  /**
   * Runs a repair planner tick now; with `dryRun` only computes the plan.
   * @throws `CanceledError` when `signal` aborts or the service closes.
   */
  runRepair(opts?: { dryRun?: boolean; signal?: AbortSignal }): Promise<RepairPlan>
  /** Resolves when no repair is queued or running. */
  repairIdle(): Promise<void>
  /** The nodes that should hold `address` (rendezvous placement over this node and its peers). */
  placement(address: Address): string[]
  /** Subscribes to the `events` broadcast (drop-oldest, 1024 per subscriber). */
  subscribe(): Subscription<StorageEvent>
  /** Objects, bytes and free space, as last sampled by the disk probe (also in `GET /status`). */
  usage(): StorageUsage
}

/** The `store` dependency: the backend is open (a backend given in the runtime may be closed by its owner). */
const STORE_DEPENDENCY = 'store'

/**
 * Creates a storage service. With `dataDir` it stores objects durably on disk, without it in
 * memory; with `peers` (other storage nodes reachable through `transport`) it keeps `rf` copies
 * and repairs missing or corrupt ones. `runtime` carries the injected objects: `auth`, outgoing
 * `tokens`, `peerKeys`, a `backend`, `clock`, `logger`… (a config that still carries them, the
 * form before the runtime argument, is accepted: they are split out; deprecated, see
 * {@link StorageServiceOptions}).
 *
 * @throws {@link ConfigError} (code `Malformed`) for an invalid config (`details.path` names the key),
 *   or when `peers` or `announce.target` are configured without a transport.
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createStorageService } from '@ron/storage'
 *
 * const storage = await createStorageService({ dataDir: './data' }, undefined, { auth: { keys: jwks } })
 * createServer(storage.handle).listen(7701)
 * ```
 */
export async function createStorageService(config: StorageServiceOptions = {}, transport?: Transport, runtime: StorageRuntime = {}): Promise<StorageService> {
  const { data, runtime: rt } = splitRuntime<StorageRuntime>(config, runtime, STORAGE_RUNTIME_KEYS)
  const o = resolveConfig(data)
  if (transport === undefined && (o.peers.length > 0 || o.announce.target !== undefined)) {
    throw new ConfigError('storage config: peers and announce.target need a transport', { details: { path: 'peers' } })
  }
  const ownStore = rt.backend === undefined
  const store: BlobStore =
    rt.backend ?? (o.dataDir !== undefined ? await createFsStore({ dir: o.dataDir, chunkSize: o.chunkSize }) : createMemoryStore({ chunkSize: o.chunkSize }))
  try {
    const pins = await PinSet.open(o.dataDir === undefined ? undefined : join(o.dataDir, 'meta'))
    return await build(data, o, transport, rt, store, ownStore, pins)
  } catch (e) {
    if (ownStore) await store.close().catch(() => undefined)
    throw e
  }
}

async function build(input: StorageConfig, o: ResolvedStorageConfig, transport: Transport | undefined, rt: StorageRuntime, store: BlobStore, ownStore: boolean, pins: PinSet): Promise<StorageService> {
  const host: ServiceHost<ResolvedStorageConfig> = createServiceHost({
    id: o.id,
    version: o.version ?? packageVersion(),
    topology: storageTopology(o),
    runtime: rt,
    ...(transport === undefined ? {} : { transport }),
    config: { schema: resolvedStorageConfigSchema, input, immutable: STORAGE_IMMUTABLE_KEYS, extendsBase: true },
    readiness: {
      dependencies: [
        { name: STORE_DEPENDENCY, gates: 'both', check: () => (store.closed === true ? 'closed' : true) },
        { name: DISK_DEPENDENCY, gates: 'write', ok: true },
      ],
      // SPEC 3.3a: uploads shed first (a full or slow disk, the drain's write phase), reads stay up.
      paths: { get: { needs: [STORE_DEPENDENCY], shed: 'reads' }, put: { needs: [STORE_DEPENDENCY, DISK_DEPENDENCY], shed: 'writes' } },
    },
  })
  host.metrics.register(STORAGE_METRICS)
  for (const peer of o.peers) for (const name of PEER_SERIES) host.metrics.zero(name, { peer })
  const net = transport ?? noTransport(o.id)
  const parts = storageParts(host, rt, store, net, pins)
  const disk = new DiskWatch({ store, readiness: host.readiness, config: () => host.config.get(), clock: host.clock, metrics: host.metrics.sink, logger: host.logger })
  host.routes(storageRoutes(storageContext(host, parts, disk, store, pins, rt, net)))
  // Writability before the service is handed out; the first usage count (a walk of every object)
  // is the probe task's, so a start does not wait for it.
  await disk.probe(host.signal, false)
  let replicating = o.peers.length > 0
  if (replicating) parts.replicator.start()
  // The host swapped the validated snapshot (and applied the base keys); apply storage's own.
  host.onReload(() => {
    parts.reconfigure()
    if (!replicating && host.config.get().peers.length > 0) {
      replicating = true
      parts.replicator.start()
    }
  })
  spawnStorageTasks(host, parts, disk)
  host.onClose(async () => {
    parts.repairQueue.close()
    parts.replicator.close()
    parts.announcer?.close()
    if (ownStore) await store.close()
  })
  return {
    ...host.service,
    usage: () => disk.usage,
    nodeId: o.nodeId,
    store,
    runRepair: (opts) => parts.planner.plan(opts?.signal === undefined ? host.signal : AbortSignal.any([opts.signal, host.signal]), opts?.dryRun ?? false),
    repairIdle: () => parts.repair.idle(),
    placement: (address: Address) => parts.ranking(address).slice(0, host.config.get().rf),
    subscribe: (): Subscription<StorageEvent> => parts.events.subscribe(),
  }
}
