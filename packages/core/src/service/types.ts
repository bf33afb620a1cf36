/**
 * The shape every `create*Service(config, transport, runtime)` returns (SPEC.md section 2), and the
 * topology-as-data types that `describe()` returns (SPEC.md section 3.4).
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RonRequest, RonResponse } from '../http/types.js'

/** Overflow policy of a channel. */
export type ChannelOverflow = 'reject-new' | 'drop-oldest' | 'last-write-wins' | 'shed'

/** A declared channel (queue, broadcast or watch). */
export interface ChannelSpec {
  /** Name used as the `queue` metric label, e.g. `work`. */
  name: string
  kind: 'mpsc' | 'broadcast' | 'watch'
  capacity: number
  producers: string[]
  consumers: string[]
  overflow: ChannelOverflow
  /**
   * For `mpsc` channels consumed by a work pool that the service host creates (`host.pool(name)`):
   * the number of workers. Channels named by a route's `queue` become pools too.
   * @default no pool declared here (the host's `workers` option or 8 when a route uses the channel)
   */
  pool?: { concurrency: number }
}

/** A declared task or pool of tasks. */
export interface TaskSpec {
  /** Name used as the `kind` metric label, e.g. `get-pool`. */
  name: string
  /** How many instances run (pool size); 1 for singletons. */
  count: number
  criticality: 'critical' | 'important' | 'optional'
  description: string
}

/** Tasks and channels of a service, as data. */
export interface Topology {
  service: string
  tasks: TaskSpec[]
  channels: ChannelSpec[]
}

/** Liveness and readiness of a service. */
export interface HealthReport {
  /** False after supervisor crash-loop escalation; `reason` says why. */
  live: boolean
  /** Ready to serve reads. */
  ready: boolean
  /** Ready to accept writes (a full or slow disk turns this off first). */
  writeReady: boolean
  /**
   * Per named path (SPEC.md 3.3a), whether it accepts work, e.g. `{ issue: false, verify: true }`.
   * Services shed expensive paths first and keep cheap reads up. Empty when the service declares none.
   */
  paths: Record<string, boolean>
  /** Names of dependencies that are not ready, then the reason of each path that is off, then `draining`. */
  missing: string[]
  /** Human-readable reasons (dependency and path reasons, or why the service is not live). */
  reason?: string
}

/**
 * How a listener should serve a service, from the service's config (its `http.*` keys): what
 * `serve(service)` applies when its own options do not say otherwise.
 */
export interface ListenerPolicy {
  /** Time to receive request headers (`headersTimeout`). */
  readonly readTimeoutMs: number
  /** Keep-alive idle timeout. */
  readonly idleTimeoutMs: number
  /** Open connections, all clients together (429 `max_connections` beyond). */
  readonly maxConnections: number
  /** Open connections per client address (429 `per_ip` beyond). */
  readonly maxConnectionsPerIp: number
  /**
   * Aborts when the service stops intake in a drain: the listener then closes its idle
   * keep-alive sockets; busy ones close after their response (which says `Connection: close`).
   */
  readonly intakeStopped: AbortSignal
}

/** What every service factory returns. */
export interface RonService {
  /** Service id, also the `aud` a token must name and the `service` metric label (e.g. `storage`). */
  readonly id: string
  readonly version: string
  /** `node:http` request listener: `http.createServer(svc.handle)`. */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void
  /** The same handler for fetch-style hosts. */
  readonly fetch: (request: Request) => Promise<Response>
  /** In-process dispatch, used by `MemoryTransport`; same routing, limits, auth and validation. */
  dispatch(req: RonRequest): Promise<RonResponse>
  health(): HealthReport
  describe(): Topology
  /** This instance's metrics as Prometheus text exposition (what `GET /metrics` serves). */
  metricsText(): Promise<string>
  /**
   * Applies a partial config live (SPEC.md 3.3b): merged into the current config, validated,
   * swapped in atomically as an immutable snapshot, handed to the service's reload hooks, and
   * rolled back whole if one fails. Reloads run one at a time.
   * @throws {@link ConfigError} for an invalid value or a key that cannot change live
   * (`details.reason: 'immutable'`); whatever a reload hook throws (after the rollback);
   * {@link BusyError} with 16 reloads pending; {@link ClosedError} after `close()`.
   */
  reload(partial: unknown): Promise<void>
  /**
   * What a listener needs to serve this service by its config (`serve(service)` reads it).
   * Services built on the core host always have it.
   */
  readonly listener?: ListenerPolicy
  /**
   * Idempotent shutdown per SPEC.md 3.3: writes unready and refused → the read window → reads
   * unready and intake stops (503 `Draining` + `Retry-After`) → in-flight work drains until
   * `drainDeadlineMs` → stragglers aborted and counted → release everything. A second call joins
   * the first; calls after it fail with `Closed`. Resolves even when nothing else keeps Node's
   * event loop alive.
   */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}
