/**
 * `createIndexService(config, transport)`: wires the name store, provider table, caches, breaker
 * table, resolver pool, janitors and routes onto a core service host, per the seed's topology
 * (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { Watch, createServiceHost, noopLogger, systemClock, systemRandom, validateConfig } from '@ron/core'
import type { ServiceHost } from '@ron/core'
import type { Clock, RonService, Subscription, Transport } from '@ron/core'
import type { Resolution } from './answer.js'
import { BreakerTable } from './breakers.js'
import { TtlCache } from './cache.js'
import { IMMUTABLE_PATHS, indexConfigSchema, splitConfig, type IndexConfig, type IndexRuntimeOptions, type ResolvedIndexConfig } from './config.js'
import { registerIndexMetrics } from './metrics.js'
import { ProviderTable } from './providers.js'
import { Resolver, type CachedAnswer, type ResolveOptions } from './resolver.js'
import { indexRoutes, type IndexContext, type IndexEvent } from './routes/index.js'
import { createMemoryNameStore, openLmdbNameStore, type NameStore } from './store/index.js'
import { CHANNELS, TASKS, indexTopology } from './topology.js'

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
  const store: NameStore = cfg0.amnesia || cfg0.dataDir === undefined ? createMemoryNameStore() : await openLmdbNameStore({ dir: cfg0.dataDir })
  try {
    return build(data, cfg0, runtime, store, transport)
  } catch (e) {
    await store.close().catch(() => undefined)
    throw e
  }
}

function build(data: IndexConfig, probe: ResolvedIndexConfig, runtime: IndexRuntimeOptions, store: NameStore, transport: Transport | undefined): IndexService {
  const clock: Clock = runtime.clock ?? systemClock
  const random = runtime.random ?? systemRandom
  const host: ServiceHost<ResolvedIndexConfig> = createServiceHost<ResolvedIndexConfig>({
    id: probe.id,
    version: probe.version,
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
  const resolver = new Resolver({ config: () => cfg.get(), store, providers, cache, negative, breakers, transport, clock, random, sink, metrics })
  metrics.names.set(store.count())

  const ctx: IndexContext = {
    config: () => cfg.get(),
    resolver,
    store,
    providers,
    metrics,
    clock,
    events,
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
        tick.abort()
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
  host.readiness.setPath('resolve', true)
  host.readiness.setPath('names', true)

  host.onClose(async () => {
    wakeBreakerJanitor.close()
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
  }
}
