/**
 * `createIndexService(config, transport)`: wires the name store, provider table, caches, breaker
 * table, resolver pool, janitors and routes onto a core service host, per the seed's topology
 * (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { Watch, createServiceHost, noopLogger, systemClock, systemRandom } from '@ron/core'
import type { Clock, RonService, Subscription, Transport } from '@ron/core'
import type { Resolution } from './answer.js'
import { BreakerTable } from './breakers.js'
import { TtlCache } from './cache.js'
import { mergeReload, resolveIndexConfig, type IndexConfig, type ResolvedIndexConfig } from './config.js'
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
  /**
   * Applies a partial configuration live (SPEC §3.3b): validated, swapped in as one immutable
   * snapshot, rolled back whole on failure.
   * @throws {@link ConfigError} for invalid values or fields that cannot change while running.
   */
  reload(partial: unknown): Promise<void>
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
  const cfg0 = resolveIndexConfig(config)
  const store: NameStore = cfg0.amnesia || cfg0.dataDir === undefined ? createMemoryNameStore() : await openLmdbNameStore({ dir: cfg0.dataDir })
  try {
    return build(cfg0, store, transport)
  } catch (e) {
    await store.close().catch(() => undefined)
    throw e
  }
}

function build(cfg0: ResolvedIndexConfig, store: NameStore, transport: Transport | undefined): IndexService {
  const clock: Clock = cfg0.clock ?? systemClock
  const random = cfg0.random ?? systemRandom
  const host = createServiceHost({
    id: cfg0.id,
    version: cfg0.version,
    topology: indexTopology(cfg0),
    ...(transport === undefined ? {} : { transport }),
    ...(cfg0.auth === undefined ? {} : { auth: cfg0.auth as NonNullable<Parameters<typeof createServiceHost>[0]['auth']> }),
    drainDeadlineMs: cfg0.drainDeadlineMs,
    admission: { maxConcurrentPerIp: cfg0.maxConcurrentPerIp, ...(cfg0.ratePerIp === undefined ? {} : { ratePerIp: cfg0.ratePerIp }) },
    clock,
    random,
    logger: cfg0.logger ?? noopLogger,
  })
  const sink = host.metrics.sink
  const metrics = registerIndexMetrics(host.metrics, cfg0.peers.targets)
  // The config snapshot (seed `cfg_watch`): readers take `cfg.get()` once per job.
  const cfg = new Watch<ResolvedIndexConfig>(cfg0)
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
      await Promise.race([clock.sleep(cfg.get().breakerJanitorMs, signal), wakeBreakerJanitor.changed(signal)])
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

  // Reloads are serialised: each validates against the snapshot the previous one left.
  let reloadTail: Promise<void> = Promise.resolve()
  const reload = (partial: unknown): Promise<void> => {
    const run = (): void => {
      const started = clock.now()
      const previous = cfg.get()
      try {
        const next = mergeReload(previous, partial)
        cfg.set(Object.freeze(next))
        cache.resize(next.cache.maxEntries)
        negative.resize(next.cache.negativeMaxEntries)
        if (next.peers.targets.join('\n') !== previous.peers.targets.join('\n') || next.breaker !== previous.breaker) {
          peersChanged = true
          wakeBreakerJanitor.set(wakeBreakerJanitor.get() + 1)
        }
        sink.inc('config_reloads_total')
      } catch (e) {
        cfg.set(previous)
        cache.resize(previous.cache.maxEntries)
        negative.resize(previous.cache.negativeMaxEntries)
        sink.inc('config_reload_errors_total')
        throw e
      } finally {
        sink.observe('config_reload_duration_seconds', undefined, Math.max(0, clock.now() - started) / 1000)
      }
    }
    const p = reloadTail.then(run)
    reloadTail = p.catch(() => undefined)
    return p
  }
  sink.inc('config_reloads_total', undefined, 0)
  sink.inc('config_reload_errors_total', undefined, 0)

  host.onClose(async () => {
    wakeBreakerJanitor.close()
    cfg.close()
    cache.clear()
    negative.clear()
    providers.clear()
    await store.close()
  })

  return {
    ...host.service,
    resolve: (key, options = {}) => resolver.resolve(key, { ...options, signal: options.signal === undefined ? host.signal : AbortSignal.any([options.signal, host.signal]) }),
    reload,
    config: () => cfg.get(),
    subscribe: () => events.subscribe(),
    durable: store.durable,
  }
}
