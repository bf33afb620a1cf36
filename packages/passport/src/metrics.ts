/**
 * Every metric passport can emit, registered at startup so a fresh `/metrics` shows each at zero
 * (SPEC.md section 4; seed svc-passport section 9; CHECKLISTS.md).
 *
 * @module
 */

import type { ServiceMetrics } from '@ron/core'
import { CHANNELS, TASKS } from './topology.js'

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
const PROPAGATION_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30]

/** Names of passport's own metrics (beyond the common set). */
export const PASSPORT_METRICS = [
  'tokens_issued_total',
  'revocations_total',
  'kms_call_latency_seconds',
  'revocation_propagation_seconds',
  'epoch_current',
  'passport_issue_latency_seconds',
  'passport_verify_latency_seconds',
  'passport_revoke_latency_seconds',
] as const

/** The routes that can answer 429 and the queue that refuses them (`busy_rejections_total{endpoint,queue}`). */
const BUSY_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['/v1/passport/issue', CHANNELS.issue],
  ['/v1/passport/attenuate', CHANNELS.issue],
  ['/v1/passport/token', CHANNELS.issue],
  ['/v1/passport/revoke', CHANNELS.revoke],
]

/** Registers (and zeroes) every passport metric. @internal */
export function registerPassportMetrics(m: ServiceMetrics): void {
  const queues = [CHANNELS.issue, CHANNELS.revoke]
  const depth = m.gauge('queue_depth', 'Items waiting in a bounded queue.', ['queue'])
  const dropped = m.counter('queue_dropped_total', 'Items shed or refused by a full queue (passport counts refused try_sends).', ['queue'])
  const busy = m.counter('busy_rejections_total', 'Requests or items rejected with Busy because a queue or limit was full.', ['endpoint', 'queue'])
  for (const q of queues) {
    depth.set({ queue: q }, 0)
    dropped.inc({ queue: q }, 0)
  }
  // The host labels a full work queue's 429 with the route it matched.
  for (const [endpoint, queue] of BUSY_ROUTES) busy.inc({ endpoint, queue }, 0)
  const kinds = [TASKS.issue, TASKS.revoke, TASKS.bus, TASKS.janitor, TASKS.rotation, TASKS.disk, 'request']
  for (const name of ['tasks_spawned_total', 'tasks_aborted_total', 'tasks_canceled_total']) {
    const c = m.counter(name, `${name.replace(/_total$/, '').replace(/_/g, ' ')} by kind.`, ['kind'])
    for (const k of kinds) c.inc({ kind: k }, 0)
  }
  const timeouts = m.counter('io_timeouts_total', 'Operations that exceeded their deadline.', ['op'])
  for (const op of ['kms', 'registry', 'read', 'write']) timeouts.inc({ op }, 0)
  const backoff = m.counter('backoff_retries_total', 'Retries after a backoff.', ['op'])
  backoff.inc({ op: 'kms' }, 0)
  m.counter('bus_lagged_total', 'Broadcast events a slow subscriber missed.', ['topic']).inc({ topic: CHANNELS.policy }, 0)
  const rejected = m.counter('rejected_total', 'Requests rejected before work, by reason.', ['reason'])
  rejected.inc({ reason: 'over_limit' }, 0)
  const issued = m.counter('tokens_issued_total', 'Tokens signed, by kind (issue, attenuate, service, admin).', ['kind'])
  for (const k of ['issue', 'attenuate', 'service', 'admin']) issued.inc({ kind: k }, 0)
  m.counter('revocations_total', 'Token ids revoked (each token of a revoked subtree counts).').inc(0)
  const kms = m.histogram('kms_call_latency_seconds', 'Latency of KMS calls, by operation.', ['op'], LATENCY_BUCKETS)
  for (const op of ['generate', 'import', 'sign', 'list', 'destroy']) kms.zero({ op })
  m.histogram('revocation_propagation_seconds', 'From a revocation being accepted to it being applied (here: passport\'s own log; followers: their feed).', [], PROPAGATION_BUCKETS).zero({})
  m.gauge('epoch_current', 'Epoch of the key that currently signs.').set(0)
  for (const op of ['issue', 'verify', 'revoke']) m.histogram(`passport_${op}_latency_seconds`, `Latency of ${op} (signing, verification, revocation work).`, [], LATENCY_BUCKETS).zero({})
}
