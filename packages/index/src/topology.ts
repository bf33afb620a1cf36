/**
 * The index service's tasks and channels as data (SPEC §3.4, seed svc-index sections 2–3).
 * `describe()` returns this, the metrics use these names as labels, and a golden test checks that
 * `docs/CONCURRENCY.md` contains the tables rendered from it.
 *
 * @module
 */

import type { Topology } from '@ron/core'
import type { ResolvedIndexConfig } from './config.js'

/** Names of the index's channels, used as `queue` metric labels. */
export const CHANNELS = {
  work: 'work',
  names: 'names',
  events: 'events',
  config: 'config',
  shutdown: 'shutdown',
} as const

/** Names of the index's tasks, used as `kind` metric labels. */
export const TASKS = {
  supervisor: 'supervisor',
  listener: 'http-listener',
  resolver: 'resolver',
  nameWriter: 'name-writer',
  reloader: 'config-reloader',
  cacheJanitor: 'cache-janitor',
  breakerJanitor: 'breaker-janitor',
  warmup: 'warmup-prefetcher',
  storeJanitor: 'store-janitor',
} as const

/** Route names (the `endpoint`/`route` metric labels). */
export const ROUTES = {
  resolve: '/resolve/:key',
  providers: '/providers/:address',
  announce: '/providers',
  names: '/names/:name',
  nameList: '/names',
  reindex: '/admin/reindex',
  pin: '/admin/pins/:key',
  pins: '/admin/pins',
} as const

/** Readiness paths (SPEC §3.3a): reads (`resolve`, `providers`) and name writes and announcements. */
export const PATHS = {
  resolve: 'resolve',
  names: 'names',
} as const

/**
 * The topology for the given (resolved) configuration: pool size and queue capacity follow it.
 *
 * @example
 * ```ts
 * indexTopology(resolveIndexConfig({})).channels.find((c) => c.name === 'work')?.capacity // 512
 * ```
 */
export function indexTopology(c: ResolvedIndexConfig): Topology {
  return {
    service: c.id,
    tasks: [
      { name: TASKS.supervisor, count: 1, criticality: 'critical', description: 'owns the config snapshot, spawns and joins every task, propagates shutdown' },
      { name: TASKS.listener, count: 1, criticality: 'critical', description: 'routes requests; per-IP cap and token bucket; answers cache hits; capability check before enqueue; try-sends jobs into `work` and `names`' },
      { name: TASKS.resolver, count: c.resolverWorkers, criticality: 'critical', description: 'resolve misses, providers and announcements: cache → negative cache → store → hedged peers → rank' },
      { name: TASKS.nameWriter, count: c.nameWriters, criticality: 'critical', description: 'name writes and deletes: home check, manifest check, record kept (signed when served), compare-and-set; waits for the disk flush it shares with the writes in flight' },
      { name: TASKS.reloader, count: 1, criticality: 'important', description: '`reload(partial)`: validates, swaps the config snapshot atomically, rolls back on failure' },
      { name: TASKS.cacheJanitor, count: 1, criticality: 'important', description: 'only writer of cache metadata: evicts expired answers and NotFounds, purges expired provider records every `purgeIntervalMs`' },
      { name: TASKS.breakerJanitor, count: 1, criticality: 'important', description: 'only writer of the breaker table: follows the peer list, publishes `breaker_state{target}`' },
      { name: TASKS.storeJanitor, count: 1, criticality: 'important', description: 'only background writer of the name store: homes the records the start could not, purges expired tombstones, probes the disk while a fault keeps name writes unready' },
      { name: TASKS.warmup, count: c.warmupKeys.length > 0 ? 1 : 0, criticality: 'optional', description: 'resolves `warmupKeys` once at start to fill the cache' },
    ],
    channels: [
      {
        name: CHANNELS.work,
        kind: 'mpsc',
        capacity: c.workQueue,
        producers: [TASKS.listener],
        consumers: [TASKS.resolver],
        overflow: 'reject-new',
        pool: { concurrency: c.resolverWorkers },
      },
      {
        name: CHANNELS.names,
        kind: 'mpsc',
        capacity: c.nameQueue,
        producers: [TASKS.listener],
        consumers: [TASKS.nameWriter],
        overflow: 'reject-new',
        pool: { concurrency: c.nameWriters },
      },
      { name: CHANNELS.events, kind: 'broadcast', capacity: c.eventsCapacity, producers: [TASKS.resolver, TASKS.nameWriter], consumers: ['subscribers'], overflow: 'drop-oldest' },
      { name: CHANNELS.config, kind: 'watch', capacity: 1, producers: [TASKS.reloader], consumers: [TASKS.listener, TASKS.resolver, TASKS.nameWriter, TASKS.cacheJanitor, TASKS.breakerJanitor], overflow: 'last-write-wins' },
      { name: CHANNELS.shutdown, kind: 'watch', capacity: 1, producers: [TASKS.supervisor], consumers: ['all tasks'], overflow: 'last-write-wins' },
    ],
  }
}
