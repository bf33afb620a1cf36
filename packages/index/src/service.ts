/**
 * `createIndexService(config, transport)`: wires the name store, provider table, caches, breaker
 * table, resolver pool, janitors and routes onto a core service host, per the seed's topology
 * (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { CanceledError, ConfigError, NotReadyError, Watch, createServiceHost, generateIssuerKey, isRonError, newNodeId, nodeIdentityFromKey, noopLogger, systemClock, systemRandom, validateConfig } from '@ron/core'
import type { ServiceHost } from '@ron/core'
import type { Clock, Logger, NodeIdentity, RonService, Subscription, Transport } from '@ron/core'
import type { Resolution } from './answer.js'
import { BreakerTable } from './breakers.js'
import { TtlCache } from './cache.js'
import { IMMUTABLE_PATHS, indexConfigSchema, splitConfig, type IndexConfig, type IndexRuntimeOptions, type ResolvedIndexConfig } from './config.js'
import { registerIndexMetrics } from './metrics.js'
import { signNameRecord, type SignedNameRecord } from './name-record.js'
import { ProviderTable } from './providers.js'
import { RemoteNames, type NameConflict } from './remote-names.js'
import { Resolver, type CachedAnswer, type ResolveOptions } from './resolver.js'
import { indexRoutes, type IndexContext, type IndexEvent } from './routes/index.js'
import { createMemoryNameStore, openLmdbNameStore, type NameRecord, type NameStore } from './store/index.js'
import { CHANNELS, TASKS, indexTopology } from './topology.js'
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

/**
 * The reason a janitor cancels the other half of its wait with: one constant error, so a tick
 * builds no `DOMException` nor `CanceledError` (and their stacks) every second.
 */
const WAIT_OVER = new CanceledError('janitor wait over')

/** The disk-fault reasons of SPEC §4 that turn name writes unready. */
const DISK_FAULTS = new Set(['disk_full', 'io_error', 'read_only'])

/** The disk fault in `e`, if it is one (a {@link NotReadyError} with a disk `details.reason`). */
function diskFault(e: unknown): NotReadyError | undefined {
  if (!isRonError(e, 'NotReady')) return undefined
  const reason = (e.details as { reason?: unknown } | undefined)?.reason
  return typeof reason === 'string' && DISK_FAULTS.has(reason) ? (e as NotReadyError) : undefined
}

/**
 * The record of a binding homed on `identity`: the stored one when it is this node's and says what
 * the binding says, otherwise one signed now from the binding (`signedAt` = when it was written, so
 * the signature is the same every time: Ed25519 is deterministic).
 */
function recordOfBinding(identity: NodeIdentity, name: string, b: NameRecord): SignedNameRecord {
  const r = b.record
  if (r !== undefined && r.node === identity.id && r.name === name && r.manifestAddress === b.manifestAddress) return r
  return signNameRecord(identity, { name, manifestAddress: b.manifestAddress, seq: r?.seq ?? 1, node: identity.id, signedAt: b.updatedAt })
}

/** Signs, in the store, every record that is not this node's (written before records were signed, or under another identity). */
async function signStoredRecords(store: NameStore, identity: NodeIdentity): Promise<number> {
  return store.migrate({
    binding: (name, b) => {
      const r = recordOfBinding(identity, name, b)
      return r === b.record ? undefined : { ...b, record: r }
    },
    tombstone: (name, t) => (t.node === identity.id && t.name === name ? undefined : signNameRecord(identity, { ...t, name, node: identity.id })),
  })
}

function identityOf(config: IndexConfig): NodeIdentity {
  const { identity, nodes } = config
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
 * through `transport`.
 *
 * @throws {@link ConfigError} for invalid configuration (the message names the field).
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createIndexService } from '@ron/index'
 *
 * const index = await createIndexService({ dataDir: './data/index', auth: { keys: jwks } }, transport)
 * createServer(index.handle).listen(7704)
 * ```
 */
export async function createIndexService(config: IndexConfig = {}, transport?: Transport): Promise<IndexService> {
  const { data, runtime } = splitConfig(config)
  // Validates the config (ConfigError naming the field) before anything is opened.
  const cfg0 = validateConfig(indexConfigSchema, data)
  const identity = identityOf(config)
  const store: NameStore = runtime.nameStore ?? (cfg0.amnesia || cfg0.dataDir === undefined ? createMemoryNameStore() : await openLmdbNameStore({ dir: cfg0.dataDir }))
  try {
    // Bindings stored before records were signed are homed here: sign them now. A disk that
    // refuses the write does not stop the start: the names are served (their records signed on
    // the fly, byte for byte the same), writes stay unready, and the store janitor retries.
    let fault: NotReadyError | undefined
    try {
      // A shared store keeps the record of the node that wrote each binding.
      if (store.shared !== true) await signStoredRecords(store, identity)
    } catch (e) {
      fault = diskFault(e)
      if (fault === undefined) throw e
    }
    return build(data, cfg0, { ...runtime, identity }, store, transport, fault)
  } catch (e) {
    await store.close().catch(() => undefined)
    throw e
  }
}

function build(
  data: IndexConfig,
  probe: ResolvedIndexConfig,
  runtime: IndexRuntimeOptions & { identity: NodeIdentity },
  store: NameStore,
  transport: Transport | undefined,
  startFault: NotReadyError | undefined,
): IndexService {
  const clock: Clock = runtime.clock ?? systemClock
  const random = runtime.random ?? systemRandom
  const host: ServiceHost<ResolvedIndexConfig> = createServiceHost<ResolvedIndexConfig>({
    id: probe.id,
    version: probe.version ?? packageVersion(),
    topology: indexTopology(probe),
    ...(transport === undefined ? {} : { transport }),
    ...(runtime.auth === undefined ? {} : { auth: runtime.auth as NonNullable<Parameters<typeof createServiceHost>[0]['auth']> }),
    drainDeadlineMs: probe.drainDeadlineMs,
    ...(runtime.cors === undefined ? {} : { cors: runtime.cors }),
    ...(runtime.limits === undefined ? {} : { limits: runtime.limits }),
    admission: { maxConcurrentPerIp: probe.maxConcurrentPerIp, ...(probe.ratePerIp === undefined ? {} : { ratePerIp: probe.ratePerIp }) },
    // The config snapshot (seed `cfg_watch`): `reload(partial)` validates, swaps it atomically and
    // rolls back on failure; readers take `cfg.get()` once per job.
    config: { schema: indexConfigSchema, input: data, immutable: IMMUTABLE_PATHS },
    clock,
    random,
    logger: runtime.logger ?? noopLogger,
  })
  const cfg0 = host.config.get()
  const cfg = host.config
  const sink = host.metrics.sink
  const metrics = registerIndexMetrics(host.metrics, cfg0.peers.targets)
  const providers = new ProviderTable(cfg0.maxProviderRecords)
  const cache = new TtlCache<CachedAnswer>(cfg0.cache.maxEntries)
  const negative = new TtlCache<true>(cfg0.cache.negativeMaxEntries)
  const breakers = new BreakerTable(clock, sink)
  breakers.sync(cfg0)
  const events = host.broadcast<IndexEvent>(CHANNELS.events)
  const identity = runtime.identity
  const nodes = runtime.nodes
  const logger: Logger = runtime.logger ?? noopLogger
  const remote = new RemoteNames()
  const recordOf = (name: string, b: NameRecord): SignedNameRecord => recordOfBinding(identity, name, b)
  const resolver = new Resolver({ config: () => cfg.get(), store, providers, cache, negative, breakers, transport, clock, random, sink, metrics, nodes, selfId: identity.id, remote, recordOf })
  metrics.names.set(store.count())
  // A shared store: what another node wrote replaces what was cached or learnt of the name.
  const offStoreChange = store.onChange?.((name) => {
    remote.forget(name)
    resolver.invalidate(name)
    metrics.names.set(store.count())
  })

  // Name writes need the disk: a write or commit it refuses (full, failing, read-only volume)
  // turns them unready — 503 NotReady with the fault's reason, `/readyz` writeReady false with
  // `disk` missing — while reads go on; the store janitor probes until the disk takes a write.
  let fault: NotReadyError | undefined
  let probeAt = 0
  let unsigned = startFault !== undefined
  const faultChanged = new Watch<number>(0)
  host.readiness.declare('disk', 'write', true)
  const setFault = (e: NotReadyError | undefined): void => {
    fault = e
    probeAt = clock.now() + cfg.get().storeProbeMs
    const reason = (e?.details as { reason?: string } | undefined)?.reason
    host.readiness.set('disk', e === undefined, reason)
    host.readiness.setPath('names', e === undefined, reason)
    if (!faultChanged.closed) faultChanged.set(faultChanged.get() + 1)
  }
  const storeFailed = (e: unknown, count = true): void => {
    const f = diskFault(e)
    if (f === undefined) return
    if (count) metrics.storeFaults.inc({ reason: (f.details as { reason: string }).reason })
    if (fault === undefined) logger.warn({ err: e }, 'index: the disk refused a name write; name writes are unready until it takes one')
    setFault(f)
  }
  const writable = (): void => {
    if (fault === undefined) return
    throw new NotReadyError(fault.message, { details: { ...(fault.details as object) }, retryAfterMs: Math.max(1000, cfg.get().storeProbeMs) })
  }

  const ctx: IndexContext = {
    config: () => cfg.get(),
    resolver,
    store,
    providers,
    metrics,
    clock,
    events,
    identity,
    nodes,
    remote,
    recordOf,
    writable,
    storeFailed,
    work: (job, signal) => host.pool(CHANNELS.work).submit(job, signal),
    manifests: {
      transport,
      get storage() {
        return cfg.get().storage
      },
      get timeoutMs() {
        return cfg.get().storageTimeoutMs
      },
      get maxBytes() {
        return cfg.get().maxManifestBytes
      },
      onIntegrityFail: () => metrics.integrityFail.inc(),
      clock,
    },
  }
  host.routes(indexRoutes(ctx))
  // Ready once the config is loaded and the store is open; peers are optional (dead peers
  // degrade answers, they do not unready the service).
  host.readiness.declare('store', 'both', true)
  host.readiness.setPath('resolve', true)
  host.readiness.setPath('names', true)
  if (startFault !== undefined) storeFailed(startFault)

  // The store janitor: the only background writer of the store. It signs what the start could
  // not, purges expired tombstones every `purgeIntervalMs`, and while a disk fault stands probes
  // every `storeProbeMs` until the disk takes a write again.
  host.supervisor.spawn(TASKS.storeJanitor, async (signal) => {
    let purgeAt = clock.now() + cfg.get().purgeIntervalMs
    for (;;) {
      const c = cfg.get()
      const wait = Math.max(0, (fault === undefined ? purgeAt : probeAt) - clock.now())
      // Sleep until the next purge or probe, or until a fault is reported; the other wait is
      // cancelled so nothing is left behind per round.
      const round = new AbortController()
      const both = AbortSignal.any([signal, round.signal])
      try {
        await Promise.race([clock.sleep(wait, both), faultChanged.changed(both)])
      } finally {
        round.abort(WAIT_OVER)
      }
      signal.throwIfAborted()
      try {
        if (fault !== undefined) {
          if (clock.now() < probeAt) continue
          await store.probe()
          if (unsigned) await signStoredRecords(store, identity)
          unsigned = false
          logger.info({}, 'index: the disk takes writes again; name writes are ready')
          setFault(undefined)
        } else if (clock.now() >= purgeAt) {
          purgeAt = clock.now() + c.purgeIntervalMs
          await store.purgeTombstones(clock.now() - c.tombstoneTtlSec * 1000)
        }
      } catch (e) {
        if (diskFault(e) === undefined) throw e
        // A failed probe keeps the fault (and its reason up to date); only refused writes count.
        storeFailed(e, fault === undefined)
      }
    }
  })

  const purge = (): void => {
    const now = clock.now()
    cache.purge(now)
    negative.purge(now)
    providers.purge(now)
    metrics.cacheEntries.set({ cache: 'positive' }, cache.size)
    metrics.cacheEntries.set({ cache: 'negative' }, negative.size)
    metrics.providerRecords.set(providers.size)
  }
  host.supervisor.spawn(TASKS.cacheJanitor, async (signal) => {
    for (;;) {
      await clock.sleep(cfg.get().purgeIntervalMs, signal)
      purge()
    }
  })
  // Breaker table changes (reload) are handed to the janitor, its only writer.
  let peersChanged = false
  const wakeBreakerJanitor = new Watch<number>(0)
  host.supervisor.spawn(TASKS.breakerJanitor, async (signal) => {
    for (;;) {
      // Sleep until the next tick or a reload, whichever comes first; the other wait is
      // cancelled so no timer or waiter is left behind per tick.
      const tick = new AbortController()
      const both = AbortSignal.any([signal, tick.signal])
      try {
        await Promise.race([clock.sleep(cfg.get().breakerJanitorMs, both), wakeBreakerJanitor.changed(both)])
      } finally {
        tick.abort(WAIT_OVER)
      }
      if (peersChanged) {
        peersChanged = false
        breakers.sync(cfg.get())
      } else breakers.publish()
    }
  })
  if (cfg0.warmupKeys.length > 0) {
    host.supervisor.spawn(
      TASKS.warmup,
      async (signal) => {
        for (const key of cfg0.warmupKeys) {
          if (signal.aborted) return
          await resolver.resolve(key, { signal }).catch(() => undefined)
        }
      },
      { restart: 'never', critical: false },
    )
  }

  // A reload swaps the snapshot; the caches follow their new bounds, and a changed peer list or
  // breaker setting is handed to the breaker janitor (the table's only writer).
  host.onReload(() => {
    const next = cfg.get()
    cache.resize(next.cache.maxEntries)
    negative.resize(next.cache.negativeMaxEntries)
    providers.resize(next.maxProviderRecords)
    peersChanged = true
    wakeBreakerJanitor.set(wakeBreakerJanitor.get() + 1)
  })

  host.onClose(async () => {
    offStoreChange?.()
    wakeBreakerJanitor.close()
    faultChanged.close()
    remote.clear()
    cache.clear()
    negative.clear()
    providers.clear()
    await store.close()
  })

  return {
    ...host.service,
    resolve: (key, options = {}) => resolver.resolve(key, { ...options, signal: options.signal === undefined ? host.signal : AbortSignal.any([options.signal, host.signal]) }),
    config: () => cfg.get(),
    subscribe: () => events.subscribe(),
    durable: store.durable,
    identity,
    conflicts: () => remote.conflicts(),
  }
}
