/**
 * Every metric the storage service can emit, as ONE declaration (core's `defineMetrics`):
 * storage's own families with their zero series, and the label values of the SPEC/seed families
 * core creates (`busy_rejections_total` per endpoint, `io_timeouts_total` per op). The host
 * registers it at startup (SPEC.md 4: a fresh `/metrics` shows each of them); the README lists
 * the same names, and the conformance suite checks both ways.
 *
 * @module
 */

import { defineMetrics } from '@ron/core'

/** Routes whose 429s are labelled by endpoint (a full `work` queue, a service-wide limit). */
const ENDPOINTS = ['GET /o/:addr', 'HEAD /o/:addr', 'GET /o/:addr/status', 'GET /o', 'PUT /o', 'POST /o', 'PUT /replica']

/** Storage's metrics. */
export const STORAGE_METRICS = defineMetrics(
  {
    integrity_failures_total: { type: 'counter', help: 'Reads that hit a chunk failing verification.' },
    put_commit_seconds: { type: 'histogram', help: 'Time from the end of an upload body to a durable copy.' },
    work_wait_seconds: { type: 'histogram', help: 'Time a request waited in the work queue for a reader or writer slot.', labels: ['kind'], zero: { kind: ['read', 'write'] } },
    work_active: { type: 'gauge', help: 'Reader and writer slots in use.', labels: ['kind'], zero: { kind: ['read', 'write'] } },
    repair_wait_seconds: { type: 'histogram', help: 'Time repair chunks waited for the byte budget (pacing).' },
    repair_skipped_total: { type: 'counter', help: 'Non-urgent repairs shed because the repair queue was full.', labels: ['reason'], zero: { reason: ['full'] } },
    repair_bytes_total: { type: 'counter', help: 'Bytes moved by repairs.' },
    repairs_total: { type: 'counter', help: 'Finished repair items by action and outcome (ok, failed, obsolete).', labels: ['action', 'outcome'] },
    replicas_written_total: { type: 'counter', help: 'Replica copies written to a peer.', labels: ['peer'] },
    replication_failures_total: { type: 'counter', help: 'Replica writes to a peer that failed.', labels: ['peer'] },
    replication_skipped_total: { type: 'counter', help: 'Asynchronous replications not queued (full, closed); the planner catches up.', labels: ['reason'], zero: { reason: ['full', 'closed'] } },
    announcements_total: { type: 'counter', help: 'Provider announcements accepted by the index.' },
    announce_failures_total: { type: 'counter', help: 'Provider announcements that failed, by error code.', labels: ['reason'] },
    storage_objects: { type: 'gauge', help: 'Objects stored on this node (sampled by the disk probe).' },
    storage_bytes: { type: 'gauge', help: 'Bytes of objects stored on this node (sampled by the disk probe).' },
    storage_free_bytes: { type: 'gauge', help: 'Free bytes of the backend, when it knows (sampled by the disk probe).' },
  },
  {
    busy_rejections_total: { endpoint: ENDPOINTS, queue: ['work'] },
    // read = body gap, read_rate/read_deadline = a body under the minimum rate or past its deadline.
    io_timeouts_total: { op: ['read', 'read_rate', 'read_deadline', 'write', 'peer'] },
  },
)

/** Per-peer series, registered at zero for the peers known at startup. */
export const PEER_SERIES = ['replicas_written_total', 'replication_failures_total'] as const
