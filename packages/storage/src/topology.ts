/**
 * The storage service's tasks and channels as data (SPEC.md 3.4, seed svc-storage section 2–3).
 * `describe()` returns this, the metrics use these names as labels, and a golden test checks that
 * `docs/CONCURRENCY.md` contains the tables rendered from it.
 *
 * @module
 */

import type { Topology } from '@ron/core'
import type { ResolvedStorageOptions } from './config.js'

/** Names of the storage service's channels, used as `queue` metric labels. */
export const CHANNELS = {
  work: 'work',
  repair: 'repair',
  replicate: 'replicate',
  announce: 'announce',
  events: 'events',
  shutdown: 'shutdown',
  config: 'config',
} as const

/** Names of the storage service's tasks, used as `kind` metric labels. */
export const TASKS = {
  listener: 'http-listener',
  work: 'work-worker',
  planner: 'repair-planner',
  repairWorker: 'repair-worker',
  replicator: 'replicator',
  announcer: 'announcer',
  probe: 'disk-probe',
} as const

/** Number of replicator tasks draining the asynchronous replication queue. */
export const REPLICATOR_TASKS = 2

/**
 * The topology for the given (resolved) options: capacities and pool sizes follow the options.
 *
 * @example
 * ```ts
 * const t = storageTopology(resolveOptions({}))
 * t.channels.find((c) => c.name === 'work')?.capacity // 512
 * ```
 */
export function storageTopology(o: ResolvedStorageOptions): Topology {
  return {
    service: o.id,
    tasks: [
      { name: TASKS.listener, count: 1, criticality: 'critical', description: 'accepts requests, applies limits and auth, try-sends jobs into `work`' },
      {
        name: TASKS.work,
        count: o.getConcurrency + o.putConcurrency,
        criticality: 'critical',
        description: `GET/HEAD (verified streaming) and PUT (hash, write, fsync) jobs; at most ${o.putConcurrency} PUTs at once`,
      },
      { name: TASKS.planner, count: 1, criticality: 'important', description: 'periodic diff of should-exist vs exists; try-sends repairs, urgent first' },
      { name: TASKS.repairWorker, count: o.repair.workers, criticality: 'important', description: 'copies bytes from/to peers under the global token bucket, verified against the address' },
      { name: TASKS.replicator, count: REPLICATOR_TASKS, criticality: 'important', description: 'pushes copies to placement peers after a put (beyond the write quorum)' },
      { name: TASKS.announcer, count: 1, criticality: 'optional', description: 'announces local addresses to the index (after puts and every TTL/2)' },
      { name: TASKS.probe, count: 1, criticality: 'important', description: 'probes the backend for space and writability; drives write readiness' },
    ],
    channels: [
      {
        name: CHANNELS.work,
        kind: 'mpsc',
        capacity: o.workQueue,
        producers: [TASKS.listener],
        consumers: [TASKS.work],
        overflow: 'reject-new',
        pool: { concurrency: o.getConcurrency + o.putConcurrency },
      },
      { name: CHANNELS.repair, kind: 'mpsc', capacity: o.repair.queue, producers: [TASKS.planner], consumers: [TASKS.repairWorker], overflow: 'shed' },
      { name: CHANNELS.replicate, kind: 'mpsc', capacity: o.replicationQueue, producers: [TASKS.work], consumers: [TASKS.replicator], overflow: 'shed' },
      { name: CHANNELS.announce, kind: 'mpsc', capacity: o.announce.queue, producers: [TASKS.work, TASKS.announcer], consumers: [TASKS.announcer], overflow: 'drop-oldest' },
      { name: CHANNELS.events, kind: 'broadcast', capacity: 1024, producers: [TASKS.work, TASKS.repairWorker], consumers: ['subscribers'], overflow: 'drop-oldest' },
      { name: CHANNELS.shutdown, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: ['all tasks'], overflow: 'last-write-wins' },
      { name: CHANNELS.config, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: [TASKS.listener], overflow: 'last-write-wins' },
    ],
  }
}
