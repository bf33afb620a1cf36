/**
 * Every metric passport can emit, as ONE declaration (core's `defineMetrics`): passport's own
 * families with their zero series, and the label values of the SPEC/seed families core creates.
 * The host registers it at startup (SPEC.md 4: a fresh `/metrics` shows each at zero); the
 * README's `## Metrics` table lists the same names and the conformance suite checks both ways.
 * Seed svc-passport §9; CHECKLISTS.md.
 *
 * @module
 */

import { defineMetrics } from '@ron/core/metrics'
import { CHANNELS } from './topology.js'

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
const PROPAGATION_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30]
const latency = (what: string) => ({ type: 'histogram', help: `Latency of ${what}.`, buckets: LATENCY_BUCKETS }) as const

/** The routes that can answer 429 for a full queue (`busy_rejections_total{endpoint,queue}`). */
const BUSY_ROUTES = [
  { endpoint: '/v1/passport/issue', queue: CHANNELS.issue },
  { endpoint: '/v1/passport/attenuate', queue: CHANNELS.issue },
  { endpoint: '/v1/passport/token', queue: CHANNELS.issue },
  { endpoint: '/v1/passport/revoke', queue: CHANNELS.revoke },
]

/** Passport's metrics. */
export const PASSPORT_METRICS = defineMetrics(
  {
    tokens_issued_total: { type: 'counter', help: 'Tokens signed, by kind (issue, attenuate, service, admin).', labels: ['kind'], zero: { kind: ['issue', 'attenuate', 'service', 'admin'] } },
    revocations_total: { type: 'counter', help: 'Token ids revoked (each token of a revoked subtree counts).' },
    rejected_total: { type: 'counter', help: 'Requests rejected before work, by reason (over_limit: a body over its cap, 413).', labels: ['reason'], zero: { reason: ['over_limit'] } },
    kms_call_latency_seconds: { type: 'histogram', help: 'Latency of KMS calls, by operation.', labels: ['op'], zero: { op: ['generate', 'import', 'sign', 'list', 'destroy'] }, buckets: LATENCY_BUCKETS },
    revocation_propagation_seconds: { type: 'histogram', help: "From a revocation being accepted to it being applied (here: passport's own log).", buckets: PROPAGATION_BUCKETS },
    epoch_current: { type: 'gauge', help: 'Epoch of the key that currently signs.' },
    registry_version: { type: 'gauge', help: 'Registry version of the last good sync of policy and signer sets (0: none).' },
    passport_issue_latency_seconds: latency('issue (signing)'),
    passport_verify_latency_seconds: latency('verify'),
    passport_revoke_latency_seconds: latency('revoke (the durable write)'),
  },
  {
    busy_rejections_total: BUSY_ROUTES,
    io_timeouts_total: { op: ['kms', 'registry', 'read', 'write'] },
    backoff_retries_total: { op: ['registry'] },
    sse_clients: { stream: ['revocations'] },
  },
)
