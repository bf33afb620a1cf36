/**
 * What the interop routes share: configuration snapshot, upstreams, dedupe, audit, brownout, the
 * rate limiter and the work pool.
 *
 * @module
 */

import { BrownoutError, BusyError, type Broadcast, type Clock, type Logger, type MetricsSink, type TokenBucket, type WorkPool } from '@ron/core'
import type { AuditLog } from '../audit.js'
import type { CapabilityCache } from '../capabilities.js'
import type { BrownoutSentinel } from '../brownout.js'
import type { InteropConfig } from '../config.js'
import type { DedupeStore } from '../dedupe.js'
import type { DedupeJournal } from '../dedupe-journal.js'
import type { ServiceTokens } from '../tokens.js'
import type { Upstreams } from '../upstream.js'
import type { WebhookProvider } from '../webhooks/verify.js'

/** Events published on the `events` broadcast (`noun:verb`). */
export type InteropEvent =
  | { type: 'webhook:accepted'; provider: string; deliveryId: string; receipt: string }
  | { type: 'upload:stored'; client: string; address: string; size: number }
  | { type: 'brownout:changed'; active: boolean; triggers: string[] }

/** An API-key client: the SHA-256 of its key (32 bytes), its name and upload limit. */
export interface ApiKeyClient {
  hash: Uint8Array
  client: string
  maxBytes: number | undefined
}

/** Shared state of the routes. */
export interface InteropContext {
  /** The current configuration snapshot (swapped whole on reload). */
  cfg(): InteropConfig
  clock: Clock
  logger: Logger
  metrics: MetricsSink
  upstreams: Upstreams
  tokens: ServiceTokens
  dedupe: DedupeStore
  /** The durable dedupe window, when a `dataDir` is configured. */
  journal: DedupeJournal | undefined
  audit: AuditLog
  brownout: BrownoutSentinel
  /** Webhooks and uploads share one bucket; undefined when rate limiting is off. */
  bucket(): TokenBucket | undefined
  pool: WorkPool
  events: Broadcast<InteropEvent>
  /** The API-key clients accepted now, configured or set by the admin (scanned in constant time, see the upload route). */
  clients(): readonly ApiKeyClient[]
  /** The secrets a webhook provider accepts now, newest first (configured or set by the admin); undefined: not enabled. */
  secrets(provider: WebhookProvider): readonly string[] | undefined
  /** Upload capabilities reused per client and limit (cleared on reload). */
  capabilities: CapabilityCache
  /** Uploads in flight per API-key client (single writer: the upload route). */
  uploadsInFlight: Map<string, number>
  /** Uploads of all clients holding `work` slots, queued or streaming (single writer: the upload route). */
  uploadsActive: { n: number }
  /** Counts webhook verification outcomes (`webhook_verify_total{provider,result}`). */
  verifyCounter: { inc(provider: string, result: string): void }
}

/**
 * Sheds a write (webhook, upload) during brownout, then applies the rate limit.
 * @throws {@link BrownoutError} (503, `Retry-After`), {@link BusyError} (429, `Retry-After`)
 */
export function admitWrite(s: InteropContext, endpoint: string): void {
  if (s.brownout.shedding()) {
    s.metrics.inc('rejected_total', { reason: 'BACKPRESSURE' })
    throw new BrownoutError('brownout: writes are shed while reads keep working', {
      details: { endpoint, triggers: s.brownout.status().triggers },
      retryAfterMs: s.brownout.thresholds.retryAfterMs,
    })
  }
  const bucket = s.bucket()
  if (bucket !== undefined && !bucket.tryTake()) {
    s.metrics.inc('rejected_total', { reason: 'RATE_LIMIT' })
    s.metrics.inc('busy_rejections_total', { endpoint, queue: 'rate' })
    throw new BusyError('rate limit exceeded', { details: { endpoint, reason: 'rate_limit' }, retryAfterMs: Math.max(1, Math.ceil(bucket.msUntil())) })
  }
}

/** Records the outcome of a write for the sentinel: a 5xx of our own making is an error. */
export function recordOutcome(s: InteropContext, status: number): void {
  s.brownout.recordRequest(status >= 500)
}
