/**
 * `@ron/interop`: the bridge from the outside world into the mesh. Verified provider webhooks
 * (GitHub, Slack, Stripe, Standard Webhooks) stored as content-addressed, re-verifiable receipts;
 * external uploads that trade an API key for a short-lived capability; reads through index and
 * storage; a drop-oldest audit sink; a brownout sentinel that sheds writes before reads.
 *
 * @example
 * ```ts
 * import { signWebhook, verifyWebhook } from '@ron/interop'
 *
 * const req = signWebhook({ provider: 'github', secret: 's3cret', body: '{"zen":"hi"}' })
 * const v = verifyWebhook({ provider: 'github', body: req.body, headers: req.headers, secrets: ['s3cret'], nowMs: Date.now() })
 * v.ok // true
 * ```
 *
 * @packageDocumentation
 * @module @ron/interop
 */

/** The service id of `@ron/interop`: its transport name, token audience and metric `service` label. */
export const SERVICE_ID = 'interop'

export { verifyWebhook, isWebhookProvider, parseStripeSignature, standardSecretKey, WEBHOOK_PROVIDERS, SIGNATURE_HEADERS, DEFAULT_TOLERANCE_SEC } from './webhooks/verify.js'
export type {
  VerifyWebhookInput,
  WebhookAccepted,
  WebhookRejected,
  WebhookVerification,
  WebhookProvider,
  WebhookFailureReason,
  WebhookHeaders,
} from './webhooks/verify.js'
export { signWebhook, samplePayload } from './webhooks/sign.js'
export type { SignWebhookInput, SignedWebhook } from './webhooks/sign.js'
export { createInteropService, INTEROP_PATHS } from './service.js'
export type { InteropService, InteropRuntime } from './service.js'
export { interopConfigSchema, parseInteropConfig, hashApiKey, INTEROP_IMMUTABLE_KEYS, MAX_REPLAY_WINDOW_SEC } from './config.js'
export { INTEROP_METRICS } from './metrics.js'
export type { CredentialSummary, RotationResult } from './credentials.js'
export type { InteropConfig, InteropConfigInput } from './config.js'
export { interopTopology, CHANNELS, TASKS } from './topology.js'
export { encodeReceipt, decodeReceipt, verifyReceipt, fetchAndVerifyReceipt } from './receipt.js'
export type { Receipt, ReceiptHeader, ReceiptVerification } from './receipt.js'
export { DedupeStore } from './dedupe.js'
export type { DedupeStoreOptions, DedupeHit } from './dedupe.js'
export { AuditLog, MemoryAuditSink, StdoutAuditSink, JsonlFileAuditSink, latencyBucket, redactCapabilityId } from './audit.js'
export type { AuditEvent, AuditSink, AuditDecision, AuditLogOptions } from './audit.js'
export { BrownoutSentinel } from './brownout.js'
export type { BrownoutThresholds, BrownoutStatus, BrownoutTrigger, BrownoutSentinelOptions } from './brownout.js'
export { Upstreams, upstreamBackoff, breakerName, DEFAULT_UPSTREAM_RETRY } from './upstream.js'
export type { UpstreamRetry, UpstreamCall, UpstreamsOptions } from './upstream.js'
export { rechunk } from './routes/uploads.js'
export type { BodyWatch, RechunkOptions } from './routes/uploads.js'
export type { InteropEvent } from './routes/context.js'
export { toServiceTokens } from './tokens.js'
export type { ServiceTokens, ServiceTokenSource, ServiceTokenRequest } from './tokens.js'
export { createInteropClient } from './client.js'
export type { InteropClient, InteropClientOptions, WebhookAck } from './client.js'
