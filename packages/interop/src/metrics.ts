/**
 * Every metric the interop service can emit, as ONE declaration (core's `defineMetrics`):
 * interop's own families with their zero series (the seed's names, svc-interop §9, plus the
 * gateway's and the admin routes'), and the label values of the SPEC/seed families core creates
 * (`busy_rejections_total`, `io_timeouts_total`, the supervisor and queue counters…). The host
 * registers it at startup (SPEC §4: a fresh `/metrics` shows each series at zero); the README lists
 * the same names, and the conformance suite checks both ways.
 *
 * @module
 */

import { defineMetrics, type MetricHandles } from '@ron/core'
import type { InteropContext } from './routes/context.js'
import { CHANNELS, TASKS } from './topology.js'
import { WEBHOOK_PROVIDERS } from './webhooks/verify.js'

/** Operations named by `io_timeouts_total{op}` and `backoff_retries_total{op}`. */
export const UPSTREAM_OPS = ['storage.put', 'storage.get', 'passport.attenuate', 'index.resolve', 'webhook.ack'] as const

/** The `result` label values of `webhook_verify_total`, in tally order. */
export const VERIFY_RESULTS = ['ok', 'bad_signature', 'stale_timestamp', 'missing_header'] as const

/** The results of `gateway_remote_reads_total`. */
export const REMOTE_READ_RESULTS = ['ok', 'integrity', 'failed'] as const

/** What the admin routes change (`admin_changes_total{kind}`). */
export const ADMIN_KINDS = ['webhook_secret', 'api_key'] as const

const WRITE_ENDPOINTS = ['POST /webhooks/:provider', 'POST /put']
const TASK_KINDS = [TASKS.worker, TASKS.auditSink, TASKS.sentinel]

/** Interop's metrics (the breakers' series are zeroed per configured target when the upstreams are built). */
export const INTEROP_METRICS = defineMetrics(
  {
    webhook_verify_total: {
      type: 'counter',
      help: 'Webhook verifications by provider and result (ok or the refusal reason).',
      labels: ['provider', 'result'],
      zero: { provider: WEBHOOK_PROVIDERS, result: VERIFY_RESULTS },
    },
    audit_drop_total: { type: 'counter', help: 'Audit events dropped (drop-oldest under a stalled sink, or after close).' },
    audit_emitted_total: { type: 'counter', help: 'Audit events emitted into the audit queue.' },
    brownout_active: { type: 'gauge', help: 'Brownout state per component (1 = shedding).', labels: ['component'], zero: { component: ['webhooks', 'uploads'] } },
    rejected_total: { type: 'counter', help: 'Requests refused before any work, by reason.', labels: ['reason'], zero: { reason: ['BACKPRESSURE', 'RATE_LIMIT'] } },
    breaker_open_total: { type: 'counter', help: 'Times a breaker opened, per upstream and direction.', labels: ['target'] },
    upstream_rpc_seconds: { type: 'histogram', help: 'Latency of calls to storage, passport and index.', buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5] },
    gateway_remote_reads_total: {
      type: 'counter',
      help: 'Reads of an object from another node, by result: ok (verified), integrity (bytes that do not match the address, never served), failed.',
      labels: ['result'],
      zero: { result: REMOTE_READ_RESULTS },
    },
    gateway_spooled_total: { type: 'counter', help: 'Objects from another node verified through a temporary file (larger than gateway.memoryBytes).' },
    gateway_cache_hits_total: { type: 'counter', help: 'Reads answered from the cache of verified copies.' },
    gateway_cache_bytes: { type: 'gauge', help: 'Bytes of verified copies from other nodes held in memory.' },
    admin_changes_total: { type: 'counter', help: 'Webhook secrets and API keys set, rotated or removed through the admin routes.', labels: ['kind'], zero: { kind: ADMIN_KINDS } },
  },
  {
    busy_rejections_total: [
      { endpoint: '', queue: CHANNELS.work },
      ...WRITE_ENDPOINTS.map((endpoint) => ({ endpoint, queue: 'rate' })),
      { endpoint: 'POST /put', queue: 'client' },
      { endpoint: 'POST /put', queue: 'uploads' },
      // Core's per-principal body shares (429 per_principal) are counted without a queue.
      ...WRITE_ENDPOINTS.map((endpoint) => ({ endpoint, queue: '' })),
    ],
    // Upstream calls; request bodies cut for a gap, under the minimum rate or past their deadline;
    // reads from another node past gateway.readTimeoutMs.
    io_timeouts_total: { op: [...UPSTREAM_OPS, 'read', 'read_rate', 'read_deadline', 'gateway.remote'] },
    backoff_retries_total: { op: UPSTREAM_OPS },
    tasks_aborted_total: { kind: [...TASK_KINDS, 'request'] },
    tasks_canceled_total: { kind: TASK_KINDS },
    tasks_panicked_total: { kind: TASK_KINDS },
    queue_dropped_total: { queue: [CHANNELS.work, CHANNELS.audit] },
    bus_lagged_total: { topic: [CHANNELS.events] },
  },
)

/** The typed handles of {@link INTEROP_METRICS}. */
export type InteropMetricHandles = MetricHandles<(typeof INTEROP_METRICS)['table']>

/**
 * Counts webhook verifications in a plain tally handed to prom-client when the registry is
 * scraped (the counter's `collect`): a labelled prom-client child hashes its labels on every
 * `inc`, and under a flood of forgeries this counter is bumped once per request. Values outside
 * the known providers and results go straight to the counter.
 */
export function talliedVerifyCounter(counter: { inc(l: { provider: string; result: string }, n: number): void }): InteropContext['verifyCounter'] {
  const tally = new Float64Array(WEBHOOK_PROVIDERS.length * VERIFY_RESULTS.length)
  ;(counter as { collect?: () => void }).collect = () => {
    for (let p = 0; p < WEBHOOK_PROVIDERS.length; p++) {
      for (let r = 0; r < VERIFY_RESULTS.length; r++) {
        const i = p * VERIFY_RESULTS.length + r
        if (tally[i]! > 0) counter.inc({ provider: WEBHOOK_PROVIDERS[p]!, result: VERIFY_RESULTS[r]! }, tally[i]!)
        tally[i] = 0
      }
    }
  }
  return {
    inc(provider, result) {
      const p = (WEBHOOK_PROVIDERS as readonly string[]).indexOf(provider)
      const r = (VERIFY_RESULTS as readonly string[]).indexOf(result)
      if (p < 0 || r < 0) counter.inc({ provider, result }, 1)
      else {
        const i = p * VERIFY_RESULTS.length + r
        tally[i] = tally[i]! + 1
      }
    },
  }
}
