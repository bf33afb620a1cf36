/**
 * The storage service's tasks and channels as data (SPEC.md 3.4, seed svc-storage section 2–3).
 * `describe()` returns this, the metrics use these names as labels, and a golden test checks that
 * `docs/CONCURRENCY.md` contains the tables rendered from it.
 *
 * @module
 */

import type { ChannelSpec, TaskSpec, Topology } from '@ron/core'
import type { ResolvedStorageConfig } from './config.js'

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
  reader: 'reader',
  writer: 'writer',
  planner: 'repair-planner',
  repairWorker: 'repair-worker',
  replicator: 'replicator',
  announcer: 'announcer',
  probe: 'disk-probe',
} as const

/** Number of replicator tasks draining the asynchronous replication queue. */
export const REPLICATOR_TASKS = 2

/**
 * The topology of a service with the given (resolved) options: only what that service runs
 * (no replicator without peers, no announcer without an index target, no planner task when
 * repair is manual), with capacities and pool sizes from the options.
 *
 * @example
 * ```ts
 * const t = storageTopology(resolveConfig({}))
 * t.channels.find((c) => c.name === 'work')?.capacity // 512
 * ```
 * @internal
 */
export function storageTopology(o: ResolvedStorageConfig): Topology {
  const peers = o.peers.length > 0
  const announce = o.announce.target !== undefined
  const tasks: TaskSpec[] = [
    { name: TASKS.listener, count: 1, criticality: 'critical', description: 'accepts requests, applies limits and auth, admits reads and uploads into `work`' },
    { name: TASKS.reader, count: o.getConcurrency, criticality: 'critical', description: 'GET/HEAD/status requests holding a reader slot (verified streaming until the body is written)' },
    {
      name: TASKS.writer,
      count: o.writers,
      criticality: 'critical',
      description: `uploads holding a writer slot (read at a minimum rate, hash, write, fsync); at most ${o.writersPerPrincipal} per principal`,
    },
  ]
  if (o.repair.auto) tasks.push({ name: TASKS.planner, count: 1, criticality: 'important', description: 'periodic diff of should-exist vs exists; try-sends repairs, urgent first' })
  tasks.push({ name: TASKS.repairWorker, count: o.repair.workers, criticality: 'important', description: 'copies bytes from/to peers under the global token bucket, verified against the address' })
  if (peers) tasks.push({ name: TASKS.replicator, count: REPLICATOR_TASKS, criticality: 'important', description: 'pushes copies to placement peers after a put (beyond the write quorum)' })
  if (announce) tasks.push({ name: TASKS.announcer, count: 1, criticality: 'optional', description: 'announces local addresses to the index (after puts and every TTL/2)' })
  tasks.push({ name: TASKS.probe, count: 1, criticality: 'important', description: 'probes the backend for space and writability; drives write readiness' })

  const channels: ChannelSpec[] = [
    {
      name: CHANNELS.work,
      kind: 'mpsc',
      capacity: o.workQueue,
      producers: [TASKS.listener],
      consumers: [TASKS.reader, TASKS.writer],
      overflow: 'reject-new',
    },
    { name: CHANNELS.repair, kind: 'mpsc', capacity: o.repair.queue, producers: [o.repair.auto ? TASKS.planner : 'runRepair()'], consumers: [TASKS.repairWorker], overflow: 'shed' },
  ]
  if (peers) channels.push({ name: CHANNELS.replicate, kind: 'mpsc', capacity: o.replicationQueue, producers: [TASKS.writer], consumers: [TASKS.replicator], overflow: 'shed' })
  if (announce) channels.push({ name: CHANNELS.announce, kind: 'mpsc', capacity: o.announce.queue, producers: [TASKS.writer, TASKS.announcer], consumers: [TASKS.announcer], overflow: 'drop-oldest' })
  channels.push(
    { name: CHANNELS.events, kind: 'broadcast', capacity: 1024, producers: [TASKS.writer, TASKS.repairWorker], consumers: ['subscribers'], overflow: 'drop-oldest' },
    { name: CHANNELS.shutdown, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: ['all tasks'], overflow: 'last-write-wins' },
    { name: CHANNELS.config, kind: 'watch', capacity: 1, producers: ['reload()'], consumers: [TASKS.listener, TASKS.writer, TASKS.repairWorker], overflow: 'last-write-wins' },
  )
  return { service: o.id, tasks, channels }
}
