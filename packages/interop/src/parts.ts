/**
 * The parts of the interop service, built on its host: upstreams with their breakers, the
 * brownout sentinel, the audit log, the dedupe window, the credentials, the outgoing service token
 * (tracked for readiness), the routes' shared context and the gateway. `service.ts` wires them
 * onto the host's lifecycle; `tasks.ts` runs their background loops.
 *
 * @module
 */

import { NotReadyError, TokenBucket, systemRandom, type Clock, type ServiceHost, type Transport } from '@ron/core'
import { AuditLog, JsonlFileAuditSink, MemoryAuditSink, StdoutAuditSink, type AuditSink } from './audit.js'
import { BrownoutSentinel, type BrownoutThresholds } from './brownout.js'
import { CapabilityCache } from './capabilities.js'
import type { InteropConfig } from './config.js'
import type { Credentials } from './credentials.js'
import { DedupeStore, type DedupeRecord } from './dedupe.js'
import type { DedupeJournal } from './dedupe-journal.js'
import { createGateway, type Gateway } from './gateway/index.js'
import { talliedVerifyCounter, type InteropMetricHandles } from './metrics.js'
import type { InteropContext, InteropEvent } from './routes/context.js'
import type { InteropRuntime } from './service.js'
import { toServiceTokens, type ServiceTokens } from './tokens.js'
import { CHANNELS } from './topology.js'
import { Upstreams, breakerName } from './upstream.js'

/** Readiness dependency: an outgoing service token is held (`storage:write`, for receipts and upload capabilities). */
export const SERVICE_TOKEN_DEPENDENCY = 'service_token'
/** Readiness dependency: the dedupe journal's disk takes writes (with a `dataDir`). */
export const DISK_DEPENDENCY = 'disk'

/** What the service keeps of its parts. */
export interface InteropParts {
  ctx: InteropContext
  gateway: Gateway
  brownout: BrownoutSentinel
  audit: AuditLog
  auditSink: AuditSink
  /** True when the service made the sink (and so closes it). */
  ownSink: boolean
  /** `true` while a token is held, else why not (`no_service_token`, `token_unavailable`). */
  tokenState(): true | string
  /** Applies a reloaded config to the parts that copy it. */
  reconfigure(): void
}

function thresholdsOf(cfg: InteropConfig): BrownoutThresholds {
  const { sampleIntervalMs: _sample, ...t } = cfg.brownout
  return t
}

function sinkOf(cfg: InteropConfig, clock: Clock): AuditSink {
  switch (cfg.audit.sink) {
    case 'memory':
      return new MemoryAuditSink(cfg.audit.memoryCapacity)
    case 'stdout':
      return new StdoutAuditSink()
    case 'file':
      // The schema guarantees a path (and refuses the file sink in amnesia mode).
      return new JsonlFileAuditSink(cfg.audit.file!, { fsyncIntervalMs: cfg.audit.fsyncIntervalMs, clock })
  }
}

/**
 * The outgoing token source, tracked: readiness says `no_service_token` without a source and
 * `token_unavailable` after the last attempt failed (until one succeeds again).
 */
function trackedTokens(rt: InteropRuntime): { tokens: ServiceTokens; state: () => true | string } {
  const src = toServiceTokens(rt.tokens)
  if (src === undefined) {
    const refuse = (): Promise<string> => Promise.reject(new NotReadyError('interop has no service token source configured', { details: { reason: 'no_service_token' }, retryAfterMs: 5000 }))
    return { tokens: { token: refuse }, state: () => 'no_service_token' }
  }
  let failed = false
  return {
    state: () => (failed ? 'token_unavailable' : true),
    tokens: {
      async token(req, signal) {
        try {
          const t = await src.token(req, signal)
          failed = false
          return t
        } catch (e) {
          if (signal?.aborted !== true) failed = true
          throw e
        }
      },
    },
  }
}

/** Builds interop's parts on `host`. */
export function interopParts(
  host: ServiceHost<InteropConfig>,
  rt: InteropRuntime,
  net: Transport,
  m: InteropMetricHandles,
  journal: DedupeJournal | undefined,
  restored: DedupeRecord[],
  credentials: Credentials,
): InteropParts & { live: () => DedupeRecord[] } {
  const cfg = (): InteropConfig => host.config.get()
  const initial = cfg()
  const clock = host.clock
  const sink = host.metrics.sink
  let brownout: BrownoutSentinel | undefined
  const upstreams = new Upstreams({
    transport: net,
    clock,
    random: rt.random ?? systemRandom,
    metrics: sink,
    retry: initial.retry,
    onLatency: (ms) => {
      m.upstream_rpc_seconds.observe(ms / 1000)
      brownout?.recordUpstream(ms)
    },
  })
  for (const [t, method] of [
    [initial.storage.target, 'PUT'],
    [initial.storage.target, 'GET'],
    [initial.passport.target, 'POST'],
    [initial.index.target, 'GET'],
  ] as const) {
    upstreams.breaker(breakerName(t, method))
    host.metrics.zero('breaker_open_total', { target: breakerName(t, method) })
  }
  const pool = host.pool(CHANNELS.work)
  const events = host.broadcast<InteropEvent>(CHANNELS.events)
  brownout = new BrownoutSentinel({
    thresholds: thresholdsOf(initial),
    clock,
    queue: () => ({ depth: pool.depth, capacity: pool.capacity }),
    onChange: (active, status) => {
      for (const component of ['webhooks', 'uploads']) m.brownout_active.set({ component }, active ? 1 : 0)
      const why = active ? `brownout: ${status.triggers.join(', ')}` : undefined
      // Paths (SPEC 3.3a): brownout sheds webhooks and uploads, reads stay up.
      host.readiness.setPath('webhooks', !active, why)
      host.readiness.setPath('uploads', !active, why)
      events.publish({ type: 'brownout:changed', active, triggers: status.triggers })
      host.logger.warn({ ...status }, active ? 'brownout on: shedding webhooks and uploads' : 'brownout cleared')
    },
  })
  const ownSink = rt.auditSink === undefined
  const auditSink = rt.auditSink ?? sinkOf(initial, clock)
  const audit = new AuditLog({ sink: auditSink, capacity: initial.audit.queue, clock, metrics: sink })
  const dedupe = new DedupeStore({
    clock,
    ttlMs: initial.webhooks.dedupe.ttlMs,
    maxEntries: initial.webhooks.dedupe.maxEntries,
    ...(journal === undefined ? {} : { persist: (r: DedupeRecord) => journal.append(r) }),
  })
  dedupe.restore(restored)
  const bucketOf = (c: InteropConfig): TokenBucket | undefined => (c.rateLimit === false ? undefined : new TokenBucket({ capacity: c.rateLimit.burst, refillPerSec: c.rateLimit.rps, clock }))
  let bucket = bucketOf(initial)
  const tokens = trackedTokens(rt)
  const ctx: InteropContext = {
    cfg,
    clock,
    logger: host.logger,
    metrics: sink,
    upstreams,
    tokens: tokens.tokens,
    dedupe,
    journal,
    audit,
    brownout,
    bucket: () => bucket,
    pool,
    events,
    clients: () => credentials.clients(),
    secrets: (p) => credentials.secrets(p),
    capabilities: new CapabilityCache({ clock }),
    uploadsInFlight: new Map(),
    uploadsActive: { n: 0 },
    verifyCounter: talliedVerifyCounter(m.webhook_verify_total),
  }
  const gateway = createGateway(ctx, rt.nodes, m)
  const sentinel = brownout
  return {
    ctx,
    gateway,
    brownout: sentinel,
    audit,
    auditSink,
    ownSink,
    tokenState: tokens.state,
    live: () => dedupe.records(),
    reconfigure: () => {
      const next = cfg()
      credentials.setConfig(next)
      bucket = bucketOf(next)
      // A reload may change clients, limits, audiences or the capability life: issue afresh.
      ctx.capabilities.clear()
      gateway.reload()
      sentinel.setThresholds(thresholdsOf(next))
    },
  }
}
