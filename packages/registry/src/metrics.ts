/**
 * Every metric the registry can emit, as ONE declaration (core's `defineMetrics`): the registry's
 * own families with their zero series, and the label values of the SPEC/seed families core
 * creates (`queue_depth`, `busy_rejections_total`, `io_timeouts_total`, `backoff_retries_total`,
 * `bus_lagged_total`). The host registers it at startup (SPEC.md 4: a fresh `/metrics` shows each
 * of them); the README's `## Metrics` table lists the same names, and the conformance suite checks
 * both ways.
 *
 * @module
 */

import { defineMetrics } from '@ron/core'
import { CHANNELS } from './topology.js'
import { WITNESS_RESULTS } from './witness.js'

/** What recovery at startup can repair, by kind (`registry_recoveries_total{kind}`). */
export const RECOVERY_KINDS = ['torn_tail', 'empty_segment', 'leaves_rebuilt', 'leaves_truncated', 'torn_checkpoint', 'head_rolled_forward'] as const

/** The mutations audited in `registry_updates_total{result}` (`<op>` accepted, `<op>_rejected` refused). */
export const AUDITED_OPS = ['propose', 'approve', 'commit', 'supersede'] as const

/** The registry's metrics. */
export const REGISTRY_METRICS = defineMetrics(
  {
    commit_cas_fail_total: { type: 'counter', help: 'Commits refused because HEAD moved since the proposal (409 ChainMismatch).' },
    registry_reload_success_total: { type: 'counter', help: 'Config reloads applied.', labels: ['source'], zero: { source: ['reload'] } },
    registry_reload_fail_total: { type: 'counter', help: 'Config reloads refused or rolled back.', labels: ['reason'], zero: { reason: ['invalid'] } },
    registry_updates_total: {
      type: 'counter',
      help: 'Audit events of mutations, by result: the operation when accepted, the operation with _rejected when refused (by the committer or at the route: 400/401/403/429/503).',
      labels: ['result'],
      zero: { result: AUDITED_OPS.flatMap((op) => [op, `${op}_rejected`]) },
    },
    registry_recoveries_total: { type: 'counter', help: 'Repairs made by recovery at startup, by kind.', labels: ['kind'], zero: { kind: RECOVERY_KINDS } },
    registry_approvals_total: { type: 'counter', help: 'Approvals by result.', labels: ['result'] },
    registry_proposals_expired_total: { type: 'counter', help: 'Proposals removed at expiry without a commit.' },
    registry_checkpoints_total: { type: 'counter', help: 'Checkpoints stored durably (every commit is checkpointed in memory before it is answered).' },
    registry_witness_requests_total: { type: 'counter', help: "add-checkpoint calls to this log's witnesses, by witness and result.", labels: ['witness', 'result'] },
    registry_witness_checkpoints_total: { type: 'counter', help: 'add-checkpoint requests this node answered as a witness, by result.', labels: ['result'], zero: { result: WITNESS_RESULTS } },
    registry_pruned_segments_total: { type: 'counter', help: 'Segments removed by retention.' },
    registry_integrity_failures_total: { type: 'counter', help: 'Mismatches found by the deep verifier.' },
    registry_events_published_total: { type: 'counter', help: 'RegistryUpdated events published on /registry/stream.' },
    registry_head_version: { type: 'gauge', help: 'Version of HEAD.' },
    registry_checkpoint_age_seconds: { type: 'gauge', help: 'Age of the latest checkpoint.' },
    registry_log_segments: { type: 'gauge', help: 'Segments held.' },
    registry_storage_bytes: { type: 'gauge', help: 'Bytes held by the log (segments, leaf hashes, checkpoints).' },
    audit_chain_verify_seconds: { type: 'histogram', help: 'Duration of a deep verification pass.', buckets: [0.001, 0.01, 0.1, 1, 10, 60] },
    registry_commit_seconds: { type: 'histogram', help: 'Duration of the append + fsync of a commit.', buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5] },
  },
  {
    queue_depth: { queue: [CHANNELS.proposals, CHANNELS.approvals, CHANNELS.retention] },
    // The labels the Committer's Busy errors carry (endpoint = the command), so a 429 lands on a line listed at zero.
    busy_rejections_total: [
      { endpoint: 'propose', queue: CHANNELS.proposals },
      { endpoint: 'commit', queue: CHANNELS.proposals },
      { endpoint: 'approve', queue: CHANNELS.approvals },
      { endpoint: 'get', queue: CHANNELS.approvals },
    ],
    io_timeouts_total: { op: ['commit'] },
    // A witness push that failed is retried with backoff and jitter (witness-pusher.ts).
    backoff_retries_total: { op: ['witness'] },
    bus_lagged_total: { topic: [CHANNELS.committed, CHANNELS.stream] },
  },
)
