/** The public surface is a reviewed artefact: adding or removing an export changes this list. */
import { describe, expect, it } from 'vitest'
import * as api from '../src/index.js'

describe('@ron/interop exports', () => {
  it('are exactly the reviewed runtime names', () => {
    expect(Object.keys(api).sort()).toEqual([
      'AuditLog',
      'BrownoutSentinel',
      'CHANNELS',
      'DEFAULT_TOLERANCE_SEC',
      'DEFAULT_UPSTREAM_RETRY',
      'DedupeStore',
      'INTEROP_IMMUTABLE_KEYS',
      'INTEROP_METRICS',
      'INTEROP_PATHS',
      'JsonlFileAuditSink',
      'MAX_REPLAY_WINDOW_SEC',
      'MemoryAuditSink',
      'SERVICE_ID',
      'SIGNATURE_HEADERS',
      'StdoutAuditSink',
      'TASKS',
      'Upstreams',
      'WEBHOOK_PROVIDERS',
      'breakerName',
      'createInteropClient',
      'createInteropService',
      'decodeReceipt',
      'encodeReceipt',
      'fetchAndVerifyReceipt',
      'hashApiKey',
      'interopConfigSchema',
      'interopTopology',
      'isWebhookProvider',
      'latencyBucket',
      'parseInteropConfig',
      'parseStripeSignature',
      'rechunk',
      'redactCapabilityId',
      'samplePayload',
      'signWebhook',
      'standardSecretKey',
      'toServiceTokens',
      'upstreamBackoff',
      'verifyReceipt',
      'verifyWebhook',
    ])
  })
})
