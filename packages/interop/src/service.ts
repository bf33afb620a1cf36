/**
 * `createInteropService(config, transport, runtime)`: interop on the service contract
 * (docs/service-contract.md). The host owns the lifecycle, limits, admission, CORS, readiness and
 * metrics registration; this file wires interop's parts (`parts.ts`) and tasks (`tasks.ts`) onto
 * it, per the seed's topology (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { createServiceHost, noTransport, systemClock, type DiskFaultReason, type NodeDirectory, type OutgoingTokens, type RonService, type ServiceRuntime, type Subscription, type Transport } from '@ron/core'
import type { AuditSink } from './audit.js'
import type { BrownoutSentinel } from './brownout.js'
import { INTEROP_IMMUTABLE_KEYS, interopConfigSchema, parseInteropConfig, type InteropConfig, type InteropConfigInput } from './config.js'
import { Credentials } from './credentials.js'
import type { DedupeRecord } from './dedupe.js'
import { DedupeJournal } from './dedupe-journal.js'
import { INTEROP_METRICS } from './metrics.js'
import { DISK_DEPENDENCY, SERVICE_TOKEN_DEPENDENCY, interopParts } from './parts.js'
import { adminRoutes } from './routes/admin.js'
import type { InteropEvent } from './routes/context.js'
import { objectRoutes } from './routes/objects.js'
import { uploadRoutes } from './routes/uploads.js'
import { webhookRoutes } from './routes/webhooks.js'
import { spawnInteropTasks } from './tasks.js'
import { interopTopology } from './topology.js'
import { packageVersion } from './version.js'

/**
 * The injected objects of interop (the factory's third argument, core's {@link ServiceRuntime}):
 * `tokens` for its own calls, `auth` verifying the admin routes' tokens (`interop:admin`), `nodes`
 * for reads from other nodes, `clock`, `random`, `logger`, `metrics`, plus an audit sink.
 */
export interface InteropRuntime extends ServiceRuntime {
  /**
   * Service tokens for interop's own calls: `storage:write` (receipts, and the parent of upload
   * capabilities). Core's `createTokenProvider(...)` fits; `toServiceTokens('…')` makes a static one.
   * @default none: webhooks and uploads answer 503 `NotReady` (`reason: "no_service_token"`) and their paths are unready
   */
  tokens?: OutgoingTokens
  /** An audit sink to use instead of the configured one (the service does not close it). */
  auditSink?: AuditSink
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
  // The durable dedupe window and admin credentials, read before anything starts (a restart
  // remembers what it acknowledged).
  const live = { records: (): DedupeRecord[] => [] }
  const faults = { onFault: (_reason: DiskFaultReason | undefined): void => {} }
  let journal: DedupeJournal | undefined
  let restored: DedupeRecord[] = []
  if (parsed.dataDir !== undefined) {
    const opened = await DedupeJournal.open(parsed.dataDir, { live: () => live.records(), onFault: (r) => faults.onFault(r) })
    journal = opened.journal
    restored = opened.records
  }
  try {
    const credentials = await Credentials.open(parsed, runtime.clock ?? systemClock, parsed.dataDir)
    return build(parsed, config, transport, runtime, { journal, restored, live, faults, credentials })
  } catch (e) {
    await journal?.close()
    throw e
  }
}

/** What `createInteropService` opened before the host exists. */
interface Opened {
  journal: DedupeJournal | undefined
  restored: DedupeRecord[]
  live: { records: () => DedupeRecord[] }
  faults: { onFault: (reason: DiskFaultReason | undefined) => void }
  credentials: Credentials
}

function build(parsed: InteropConfig, config: InteropConfigInput, transport: Transport | undefined, runtime: InteropRuntime, o: Opened): InteropService {
  const { journal } = o
  const host = createServiceHost<InteropConfig>({
    id: parsed.id,
    version: parsed.version ?? packageVersion(),
    topology: interopTopology(parsed),
    runtime,
    ...(transport === undefined ? {} : { transport }),
    config: { schema: interopConfigSchema, input: config, immutable: INTEROP_IMMUTABLE_KEYS, extendsBase: true },
    readiness: {
      dependencies: [
        { name: SERVICE_TOKEN_DEPENDENCY, gates: 'write', check: () => parts.tokenState() },
        ...(journal === undefined ? [] : [{ name: DISK_DEPENDENCY, gates: 'write' as const, check: () => journal.fault ?? true }]),
      ],
      // SPEC 3.3a: webhooks and uploads shed with the writes (and in a brownout), reads stay up.
      paths: {
        webhooks: { needs: [SERVICE_TOKEN_DEPENDENCY, ...(journal === undefined ? [] : [DISK_DEPENDENCY])], shed: 'writes' },
        uploads: { needs: [SERVICE_TOKEN_DEPENDENCY], shed: 'writes' },
        reads: { shed: 'reads' },
      },
    },
  })
  const m = host.metrics.register(INTEROP_METRICS)
  const parts = interopParts(host, runtime, transport ?? noTransport(parsed.id), m, journal, o.restored, o.credentials)
  o.live.records = parts.live
  o.faults.onFault = (reason) => {
    if (reason === undefined) host.logger.info({}, 'webhook dedupe journal writable again')
    else host.logger.error({ reason }, 'webhook dedupe journal not writable: webhooks refused until it recovers')
  }
  if (journal?.fault !== undefined) o.faults.onFault(journal.fault)
  const { ctx, gateway } = parts
  host.routes([
    ...webhookRoutes(ctx),
    ...uploadRoutes(ctx),
    ...objectRoutes(gateway.reader),
    ...adminRoutes({ credentials: o.credentials, cfg: ctx.cfg, logger: host.logger, metrics: m }),
    ...gateway.routes,
  ])
  // The host swapped the validated snapshot (and applied the base keys); apply interop's own.
  host.onReload(() => parts.reconfigure())
  spawnInteropTasks(host, parts, journal, JOURNAL_PROBE_MS)
  host.onClose(async () => {
    parts.audit.close()
    if (parts.ownSink) await parts.auditSink.close?.()
    await journal?.close()
  })
  return { ...host.service, config: () => host.config.get(), auditSink: parts.auditSink, brownout: parts.brownout, subscribe: () => ctx.events.subscribe() }
}
