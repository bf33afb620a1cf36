/**
 * `createInteropService(config, transport)`: wires the webhook, upload and read routes, the `work`
 * pool, the audit sink task and the brownout sentinel onto a core service host, per the seed's
 * topology (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import {
  NotReadyError,
  TokenBucket,
  createServiceHost,
  noopLogger,
  systemClock,
  systemRandom,
  type Clock,
  type Logger,
  type DiskFaultReason,
  type NodeDirectory,
  type Random,
  type RonService,
  type SlowClientLimits,
  type Subscription,
  type Transport,
} from '@ron/core'
import { CapabilityCache } from './capabilities.js'
import { AuditLog, JsonlFileAuditSink, MemoryAuditSink, StdoutAuditSink, type AuditSink } from './audit.js'
import { BrownoutSentinel, type BrownoutThresholds } from './brownout.js'
import { interopConfigSchema, parseInteropConfig, type InteropConfig, type InteropConfigInput } from './config.js'
import { DedupeStore, type DedupeRecord } from './dedupe.js'
import { DedupeJournal } from './dedupe-journal.js'
import { registerInteropMetrics } from './metrics.js'
import type { ApiKeyClient, InteropContext, InteropEvent } from './routes/context.js'
import { objectRoutes } from './routes/objects.js'
import { createGateway } from './gateway/index.js'
import { uploadRoutes } from './routes/uploads.js'
import { webhookRoutes } from './routes/webhooks.js'
import { toServiceTokens, type ServiceTokenSource, type ServiceTokens } from './tokens.js'
import { CHANNELS, TASKS, interopTopology } from './topology.js'
import { Upstreams, breakerName } from './upstream.js'
import { WEBHOOK_PROVIDERS } from './webhooks/verify.js'
import { packageVersion } from './version.js'

/** Things that are not configuration data: injected by the host (ron-node) or a test. */
export interface InteropRuntime {
  /**
   * Service tokens for interop's own calls: `storage:write` (receipts) and `passport:issue`
   * (upload capabilities). Core's `createTokenProvider(...)` fits; a static token works for tests.
   * @default none: webhooks and uploads answer 503 `NotReady` (`reason: "no_service_token"`)
   */
  tokens?: ServiceTokenSource
  /** An audit sink to use instead of the configured one (the service does not close it). */
  auditSink?: AuditSink
  /** @default systemClock */
  clock?: Clock
  /** @default systemRandom */
  random?: Random
  /** @default noopLogger */
  logger?: Logger
  /**
   * The nodes reads may fetch from (SPEC §5 "Peers", §6a): the gateway and `GET /o/:addr` read this
   * node's storage first and otherwise follow a provider endpoint from index only when it is the
   * storage URL a node in here advertises (this node's own excluded).
   * @default none: reads follow only endpoints that are transport target names (in-process)
   */
  nodes?: NodeDirectory
}

/** The interop service: a {@link RonService} plus interop-specific handles. */
export interface InteropService extends RonService {
  /** The configuration snapshot in force. */
  config(): InteropConfig
  /** The audit sink (a {@link MemoryAuditSink} unless configured otherwise). */
  readonly auditSink: AuditSink
  /** The brownout sentinel (status, thresholds). */
  readonly brownout: BrownoutSentinel
  /** Subscribes to the `events` broadcast (drop-oldest, 1024 per subscriber). */
  subscribe(): Subscription<InteropEvent>
}

/** Paths reported in `health().paths` (SPEC.md 3.3a). */
export const INTEROP_PATHS = ['webhooks', 'uploads', 'reads'] as const

/** How often a faulted dedupe journal tries the disk again. */
const JOURNAL_PROBE_MS = 1000

/** The slow-client rules (SPEC 4) core's host applies to every interop body. */
function slowClientLimits(cfg: InteropConfig): SlowClientLimits {
  const h = cfg.http
  return { minBytesPerSec: h.minBytesPerSec, rateWindowMs: h.rateWindowMs, requestTimeoutMs: h.requestTimeoutMs, maxBodiesPerPrincipal: h.maxBodiesPerPrincipal }
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

const noTokens: ServiceTokens = {
  token: () => Promise.reject(new NotReadyError('interop has no service token source configured', { details: { reason: 'no_service_token' }, retryAfterMs: 5000 })),
}

/**
 * Creates an interop service that reaches storage, passport and index through `transport`.
 *
 * @throws `ConfigError` (400 `Malformed`) for an invalid configuration, naming the field.
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createInteropService } from '@ron/interop'
 *
 * const interop = await createInteropService(
 *   { webhooks: { providers: { github: { secrets: [process.env.GITHUB_WEBHOOK_SECRET!] } } } },
 *   transport,
 *   { tokens: tokenProvider },
 * )
 * createServer(interop.handle).listen(7705)
 * ```
 */
export async function createInteropService(config: InteropConfigInput = {}, transport?: Transport, runtime: InteropRuntime = {}): Promise<InteropService> {
  const parsed = parseInteropConfig(config)
  // The durable dedupe window, read before anything starts (a restart remembers what it acknowledged).
  let journal: DedupeJournal | undefined
  let restored: DedupeRecord[] = []
  const live = { records: (): DedupeRecord[] => [] }
  const faults = { onFault: (_reason: DiskFaultReason | undefined): void => {} }
  if (parsed.dataDir !== undefined) {
    const opened = await DedupeJournal.open(parsed.dataDir, { live: () => live.records(), onFault: (r) => faults.onFault(r) })
    journal = opened.journal
    restored = opened.records
  }
  try {
    return build(parsed, config, transport, runtime, journal, restored, live, faults)
  } catch (e) {
    await journal?.close()
    throw e
  }
}

function build(
  parsed: InteropConfig,
  config: InteropConfigInput,
  transport: Transport | undefined,
  runtime: InteropRuntime,
  journal: DedupeJournal | undefined,
  restored: DedupeRecord[],
  live: { records: () => DedupeRecord[] },
  faults: { onFault: (reason: DiskFaultReason | undefined) => void },
): InteropService {
  const clock = runtime.clock ?? systemClock
  const random = runtime.random ?? systemRandom
  const host = createServiceHost<InteropConfig>({
    id: parsed.id,
    version: parsed.version ?? packageVersion(),
    topology: interopTopology(parsed),
    config: {
      schema: interopConfigSchema,
      input: config,
      immutable: ['id', 'version', 'workQueue', 'workers', 'audit', 'amnesia', 'dataDir', 'webhooks.maxBodyBytes', 'webhooks.dedupe', 'uploads.maxBytes', 'http.readTimeoutMs', 'retry', 'drainDeadlineMs', 'gateway.domain', 'gateway.subdomains'],
    },
    ...(transport === undefined ? {} : { transport }),
    drainDeadlineMs: parsed.drainDeadlineMs,
    limits: { readTimeoutMs: parsed.http.readTimeoutMs, ...slowClientLimits(parsed) },
    clock,
    random,
    logger: runtime.logger ?? noopLogger,
  })
  const cfg = (): InteropConfig => host.config.get()
  const initial = cfg()
  const metrics = host.metrics
  const sink = metrics.sink

  const { verify, brownoutGauge, upstreamSeconds, opened } = registerInteropMetrics(metrics)

  const upstreams = new Upstreams({
    transport: transport ?? unreachableTransport,
    clock,
    random,
    metrics: sink,
    retry: initial.retry,
    onLatency: (ms) => {
      upstreamSeconds.observe(ms / 1000)
      brownout.recordUpstream(ms)
    },
  })
  for (const [t, m] of [
    [initial.storage.target, 'PUT'],
    [initial.storage.target, 'GET'],
    [initial.passport.target, 'POST'],
    [initial.index.target, 'GET'],
  ] as const) {
    upstreams.breaker(breakerName(t, m))
    opened.inc({ target: breakerName(t, m) }, 0)
  }

  const pool = host.pool(CHANNELS.work)
  // Paths (SPEC 3.3a): brownout sheds webhooks and uploads; a faulted dedupe journal (the local
  // disk) stops webhooks alone.
  let shedding: string | undefined
  const setWritePaths = (): void => {
    const disk = journal?.fault
    host.readiness.setPath('webhooks', shedding === undefined && disk === undefined, shedding ?? disk)
    host.readiness.setPath('uploads', shedding === undefined, shedding)
  }
  const brownout: BrownoutSentinel = new BrownoutSentinel({
    thresholds: thresholdsOf(initial),
    clock,
    queue: () => ({ depth: pool.depth, capacity: pool.capacity }),
    onChange: (active, status) => {
      for (const component of ['webhooks', 'uploads']) brownoutGauge.set({ component }, active ? 1 : 0)
      shedding = active ? `brownout: ${status.triggers.join(', ')}` : undefined
      setWritePaths()
      events.publish({ type: 'brownout:changed', active, triggers: status.triggers })
      host.logger.warn({ ...status }, active ? 'brownout on: shedding webhooks and uploads' : 'brownout cleared')
    },
  })
  for (const p of INTEROP_PATHS) host.readiness.setPath(p, true)
  if (journal !== undefined) {
    // The local disk (SPEC 4): a fault turns writes unready until the journal's probe recovers.
    host.readiness.declare('disk', 'write', true)
    faults.onFault = (reason) => {
      host.readiness.set('disk', reason === undefined, reason)
      setWritePaths()
      if (reason === undefined) host.logger.info({}, 'webhook dedupe journal writable again')
      else host.logger.error({ reason }, 'webhook dedupe journal not writable: webhooks refused until it recovers')
    }
    if (journal.fault !== undefined) faults.onFault(journal.fault)
  }

  const ownSink = runtime.auditSink === undefined
  const auditSink = runtime.auditSink ?? sinkOf(initial, clock)
  const audit = new AuditLog({ sink: auditSink, capacity: initial.audit.queue, clock, metrics: sink })
  const events = host.broadcast<InteropEvent>(CHANNELS.events)

  const dedupe = new DedupeStore({
    clock,
    ttlMs: initial.webhooks.dedupe.ttlMs,
    maxEntries: initial.webhooks.dedupe.maxEntries,
    ...(journal === undefined ? {} : { persist: (r: DedupeRecord) => journal.append(r) }),
  })
  dedupe.restore(restored)
  live.records = () => dedupe.records()

  const clientsOf = (c: InteropConfig): ApiKeyClient[] =>
    c.apiKeys.map((k) => ({ hash: Buffer.from(k.keyHash.slice('sha256:'.length), 'hex'), client: k.client, maxBytes: k.maxBytes }))
  const bucketOf = (c: InteropConfig): TokenBucket | undefined => (c.rateLimit === false ? undefined : new TokenBucket({ capacity: c.rateLimit.burst, refillPerSec: c.rateLimit.rps, clock }))
  let clients = clientsOf(initial)
  let bucket = bucketOf(initial)

  const ctx: InteropContext = {
    cfg,
    clock,
    logger: host.logger,
    metrics: sink,
    upstreams,
    tokens: toServiceTokens(runtime.tokens) ?? noTokens,
    dedupe,
    journal,
    audit,
    brownout,
    bucket: () => bucket,
    pool,
    events,
    clients: () => clients,
    capabilities: new CapabilityCache({ clock }),
    uploadsInFlight: new Map(),
    uploadsActive: { n: 0 },
    verifyCounter: talliedVerifyCounter(verify),
  }
  const gateway = createGateway(ctx, runtime.nodes, metrics)
  host.routes([...webhookRoutes(ctx), ...uploadRoutes(ctx), ...objectRoutes(gateway.reader), ...gateway.routes])

  host.onReload(() => {
    const next = cfg()
    clients = clientsOf(next)
    bucket = bucketOf(next)
    // A reload may change clients, limits, audiences or the capability life: issue afresh.
    ctx.capabilities.clear()
    gateway.reload()
    brownout.setThresholds(thresholdsOf(next))
    host.setSlowClientLimits(slowClientLimits(next))
  })

  host.supervisor.spawn(TASKS.auditSink, (signal) => audit.run(signal))
  host.supervisor.spawn(TASKS.sentinel, async (signal) => {
    for (;;) {
      await clock.sleep(cfg().brownout.sampleIntervalMs, signal)
      brownout.evaluate()
    }
  })

  if (journal !== undefined) {
    host.supervisor.spawn(TASKS.dedupeJournal, async (signal) => {
      for (;;) {
        await clock.sleep(JOURNAL_PROBE_MS, signal)
        if (journal.fault !== undefined) await journal.probe()
      }
    })
  }

  host.onClose(async () => {
    audit.close()
    if (ownSink) await auditSink.close?.()
    await journal?.close()
  })

  const service: InteropService = {
    ...host.service,
    config: cfg,
    auditSink,
    brownout,
    subscribe: () => events.subscribe(),
  }
  return service
}

/** The `result` label values of `webhook_verify_total`, in tally order. */
const VERIFY_RESULTS = ['ok', 'bad_signature', 'stale_timestamp', 'missing_header'] as const

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

/** Stand-in when no transport was given: every upstream call fails as unreachable. */
const unreachableTransport: Transport = {
  request(target) {
    return Promise.reject(new NotReadyError(`no transport configured to reach ${target}`, { details: { target, reason: 'unreachable' } }))
  },
  close: () => Promise.resolve(),
}
