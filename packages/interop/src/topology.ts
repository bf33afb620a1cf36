/**
 * The interop service's tasks and channels as data (SPEC.md 3.4, seed svc-interop §2–3).
 * `describe()` returns this, the metrics use these names as labels, and a golden test checks that
 * `docs/CONCURRENCY.md` contains the tables rendered from it.
 *
 * @module
 */

import type { Topology } from '@ron/core'
import type { InteropConfig } from './config.js'

/** Names of the channels (`queue` metric labels). */
export const CHANNELS = {
  work: 'work',
  audit: 'audit',
  events: 'events',
  shutdown: 'shutdown',
  config: 'config',
} as const

/** Names of the tasks (`kind` metric labels). */
export const TASKS = {
  listener: 'http-listener',
  worker: 'work-worker',
  auditSink: 'audit-sink',
  sentinel: 'brownout-sentinel',
  dedupeJournal: 'dedupe-journal',
} as const

/**
 * The topology for a (validated) configuration.
 * @example
 * ```ts
 * interopTopology(parseInteropConfig({})).channels.find((c) => c.name === 'work')?.capacity // 512
 * ```
 */
export function interopTopology(cfg: InteropConfig): Topology {
  return {
    service: cfg.id,
    tasks: [
      {
        name: TASKS.listener,
        count: 1,
        criticality: 'critical',
        description: 'limits, brownout and rate checks, webhook verification and dedupe at the edge; try-sends jobs into `work`; reads stream through directly',
      },
      { name: TASKS.worker, count: cfg.workers, criticality: 'critical', description: 'stores webhook receipts and streams uploads to storage (capability from passport); emits audit events' },
      { name: TASKS.auditSink, count: 1, criticality: 'important', description: `writes audit events to the ${cfg.audit.sink} sink` },
      { name: TASKS.sentinel, count: 1, criticality: 'important', description: 'samples error rate, upstream p95 and queue fill; toggles brownout with hysteresis' },
      ...(cfg.dataDir === undefined
        ? []
        : [
            {
              name: TASKS.dedupeJournal,
              count: 1,
              criticality: 'important' as const,
              description: 'with a dataDir: probes a faulted dedupe journal (the local disk) every second and turns webhooks ready again once it takes writes',
            },
          ]),
    ],
    channels: [
      {
        name: CHANNELS.work,
        kind: 'mpsc',
        capacity: cfg.workQueue,
        producers: [TASKS.listener],
        consumers: [TASKS.worker],
        overflow: 'reject-new',
        pool: { concurrency: cfg.workers },
      },
      { name: CHANNELS.audit, kind: 'mpsc', capacity: cfg.audit.queue, producers: [TASKS.listener, TASKS.worker], consumers: [TASKS.auditSink], overflow: 'drop-oldest' },
      { name: CHANNELS.events, kind: 'broadcast', capacity: 1024, producers: [TASKS.worker, TASKS.sentinel], consumers: ['subscribers'], overflow: 'drop-oldest' },
      { name: CHANNELS.shutdown, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: ['all tasks'], overflow: 'last-write-wins' },
      { name: CHANNELS.config, kind: 'watch', capacity: 1, producers: ['supervisor'], consumers: [TASKS.listener], overflow: 'last-write-wins' },
    ],
  }
}
