/**
 * Registers every metric the interop service emits, at startup, so a fresh `/metrics` shows each
 * one at zero (SPEC §4). The names are the seed's (svc-interop §9) plus SPEC's common set.
 *
 * @module
 */

import type { ServiceMetrics } from '@ron/core'
import { CHANNELS, TASKS } from './topology.js'
import { WEBHOOK_PROVIDERS } from './webhooks/verify.js'

/** Operations named by `io_timeouts_total{op}` and `backoff_retries_total{op}`. */
export const UPSTREAM_OPS = ['storage.put', 'storage.get', 'passport.attenuate', 'index.resolve', 'webhook.ack'] as const

/** The metric handles the service keeps. */
export interface InteropMetrics {
  verify: ReturnType<ServiceMetrics['counter']>
  brownoutGauge: ReturnType<ServiceMetrics['gauge']>
  upstreamSeconds: ReturnType<ServiceMetrics['histogram']>
  opened: ReturnType<ServiceMetrics['counter']>
}

/** Registers the interop metrics on `metrics` (idempotent: existing metrics are reused). */
export function registerInteropMetrics(metrics: ServiceMetrics): InteropMetrics {
  const sink = metrics.sink
  // Every metric the service emits, registered at startup (a fresh /metrics shows them at zero).
  const verify = metrics.counter('webhook_verify_total', 'Webhook verifications by provider and result (ok or the refusal reason).', ['provider', 'result'])
  for (const provider of WEBHOOK_PROVIDERS) for (const result of ['ok', 'bad_signature', 'stale_timestamp', 'missing_header']) verify.inc({ provider, result }, 0)
  metrics.counter('audit_drop_total', 'Audit events dropped (drop-oldest under a stalled sink, or after close).').inc(0)
  metrics.counter('audit_emitted_total', 'Audit events emitted into the audit queue.').inc(0)
  const brownoutGauge = metrics.gauge('brownout_active', 'Brownout state per component (1 = shedding).', ['component'])
  for (const component of ['webhooks', 'uploads']) brownoutGauge.set({ component }, 0)
  const rejected = metrics.counter('rejected_total', 'Requests refused before any work, by reason.', ['reason'])
  for (const reason of ['BACKPRESSURE', 'RATE_LIMIT']) rejected.inc({ reason }, 0)
  const timeouts = metrics.counter('io_timeouts_total', 'Operations that exceeded their deadline.', ['op'])
  const retries = metrics.counter('backoff_retries_total', 'Retries of idempotent upstream calls after a backoff.', ['op'])
  for (const op of UPSTREAM_OPS) {
    timeouts.inc({ op }, 0)
    retries.inc({ op }, 0)
  }
  // Request bodies cut by core's slow-client rules: the gap, the minimum rate, the deadline.
  for (const op of ['read', 'read_rate', 'read_deadline']) timeouts.inc({ op }, 0)
  const opened = metrics.counter('breaker_open_total', 'Times a breaker opened, per upstream and direction.', ['target'])
  const upstreamSeconds = metrics.histogram('upstream_rpc_seconds', 'Latency of calls to storage, passport and index.', [], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5])
  // Created through the sink first so it carries core's label set {endpoint, queue}.
  sink.inc('busy_rejections_total', { endpoint: '', queue: CHANNELS.work }, 0)
  const busy = metrics.counter('busy_rejections_total', '', ['endpoint', 'queue'])
  busy.inc({ endpoint: '', queue: CHANNELS.work }, 0)
  for (const endpoint of ['POST /webhooks/:provider', 'POST /put']) busy.inc({ endpoint, queue: 'rate' }, 0)
  busy.inc({ endpoint: 'POST /put', queue: 'client' }, 0)
  busy.inc({ endpoint: 'POST /put', queue: 'uploads' }, 0)
  // Core's per-principal body shares (429 per_principal) are counted without a queue.
  for (const endpoint of ['POST /webhooks/:provider', 'POST /put']) busy.inc({ endpoint, queue: '' }, 0)

  // Supervisor, queue and bus counters appear at zero too, one sample per task kind / queue.
  const zero = (name: string, labels: Record<string, string>): void => {
    sink.inc(name, labels, 0)
    metrics.counter(name, '', Object.keys(labels)).inc(labels, 0)
  }
  for (const kind of [TASKS.worker, TASKS.auditSink, TASKS.sentinel]) {
    for (const name of ['tasks_aborted_total', 'tasks_canceled_total', 'tasks_panicked_total']) zero(name, { kind })
  }
  zero('tasks_aborted_total', { kind: 'request' })
  for (const queue of [CHANNELS.work, CHANNELS.audit]) zero('queue_dropped_total', { queue })
  zero('bus_lagged_total', { topic: CHANNELS.events })
  return { verify, brownoutGauge, upstreamSeconds, opened }
}
