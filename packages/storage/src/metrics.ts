/**
 * Every metric the storage service can emit, registered at startup with its label values set to
 * zero (SPEC.md 4: a fresh `/metrics` shows each of them), and the storage-specific families'
 * names and help in one table (the README lists them; a test checks that it does).
 *
 * @module
 */

import type { ServiceHost, Topology } from '@ron/core'

type Kind = 'counter' | 'gauge' | 'histogram'

/** Storage's own metric families: name → type, help, labels. */
export const STORAGE_METRICS: Readonly<Record<string, { type: Kind; help: string; labels: readonly string[] }>> = {
  integrity_failures_total: { type: 'counter', help: 'Reads that hit a chunk failing verification.', labels: [] },
  put_commit_seconds: { type: 'histogram', help: 'Time from the end of an upload body to a durable copy.', labels: [] },
  work_wait_seconds: { type: 'histogram', help: 'Time a request waited in the work queue for a reader or writer slot.', labels: ['kind'] },
  work_active: { type: 'gauge', help: 'Reader and writer slots in use.', labels: ['kind'] },
  repair_wait_seconds: { type: 'histogram', help: 'Time repair chunks waited for the byte budget (pacing).', labels: [] },
  repair_skipped_total: { type: 'counter', help: 'Non-urgent repairs shed because the repair queue was full.', labels: ['reason'] },
  repair_bytes_total: { type: 'counter', help: 'Bytes moved by repairs.', labels: [] },
  repairs_total: { type: 'counter', help: 'Finished repair items by action and outcome (ok, failed, obsolete).', labels: ['action', 'outcome'] },
  replicas_written_total: { type: 'counter', help: 'Replica copies written to a peer.', labels: ['peer'] },
  replication_failures_total: { type: 'counter', help: 'Replica writes to a peer that failed.', labels: ['peer'] },
  replication_skipped_total: { type: 'counter', help: 'Asynchronous replications not queued (full, closed); the planner catches up.', labels: ['reason'] },
  announcements_total: { type: 'counter', help: 'Provider announcements accepted by the index.', labels: [] },
  announce_failures_total: { type: 'counter', help: 'Provider announcements that failed, by error code.', labels: ['reason'] },
  storage_objects: { type: 'gauge', help: 'Objects stored on this node (sampled by the disk probe).', labels: [] },
  storage_bytes: { type: 'gauge', help: 'Bytes of objects stored on this node (sampled by the disk probe).', labels: [] },
  storage_free_bytes: { type: 'gauge', help: 'Free bytes of the backend, when it knows (sampled by the disk probe).', labels: [] },
}

/** Routes whose 429s are labelled by endpoint. */
const ENDPOINTS = ['GET /o/:addr', 'HEAD /o/:addr', 'GET /o/:addr/status', 'GET /o', 'PUT /o', 'POST /o', 'PUT /replica']
/** `io_timeouts_total{op}` values storage can report. */
const IO_OPS = ['read', 'read_rate', 'read_deadline', 'write', 'peer']

/**
 * Registers storage's families and sets every known label combination to zero: the seed's
 * (`queue_depth`, `queue_dropped_total`, `busy_rejections_total`, `tasks_*_total`,
 * `io_timeouts_total`, `repair_wait_seconds`, `bus_lagged_total`) for this service's topology,
 * and storage's own.
 */
export function registerStorageMetrics(metrics: ServiceHost['metrics'], topology: Topology, peers: readonly string[]): void {
  const families = new Map<string, { zero(labels: Record<string, string>): void }>()
  for (const [name, m] of Object.entries(STORAGE_METRICS)) {
    if (m.type === 'counter') {
      const c = metrics.counter(name, m.help, m.labels)
      families.set(name, { zero: (l) => c.inc(l, 0) })
      if (m.labels.length === 0) c.inc(0)
    } else if (m.type === 'gauge') {
      const g = metrics.gauge(name, m.help, m.labels)
      families.set(name, { zero: (l) => g.set(l, 0) })
      if (m.labels.length === 0) g.set(0)
    } else {
      const h = metrics.histogram(name, m.help, m.labels)
      families.set(name, { zero: (l) => h.zero(l) })
    }
  }
  const zero = (name: string, labels: Record<string, string>): void => families.get(name)?.zero(labels)
  const counter = (name: string, labels: Record<string, string>): void => metrics.counter(name, '', Object.keys(labels)).inc(labels, 0)
  const gauge = (name: string, labels: Record<string, string>): void => metrics.gauge(name, '', Object.keys(labels)).set(labels, 0)

  for (const kind of ['read', 'write']) {
    zero('work_wait_seconds', { kind })
    zero('work_active', { kind })
  }
  zero('repair_skipped_total', { reason: 'full' })
  for (const reason of ['full', 'closed']) zero('replication_skipped_total', { reason })
  for (const peer of peers) {
    zero('replicas_written_total', { peer })
    zero('replication_failures_total', { peer })
  }

  // The seed's families (created by core's metrics, with their label names fixed there).
  for (const c of topology.channels) {
    if (c.kind === 'mpsc') gauge('queue_depth', { queue: c.name })
    if (c.overflow !== 'last-write-wins') counter('queue_dropped_total', { queue: c.name })
    if (c.kind === 'broadcast') counter('bus_lagged_total', { topic: c.name })
  }
  for (const endpoint of ENDPOINTS) counter('busy_rejections_total', { endpoint, queue: 'work' })
  for (const kind of [...topology.tasks.map((t) => t.name), 'request']) {
    counter('tasks_spawned_total', { kind })
    counter('tasks_aborted_total', { kind })
    counter('tasks_canceled_total', { kind })
  }
  for (const op of IO_OPS) counter('io_timeouts_total', { op })
}
