/**
 * The shape every `create*Service(config, transport, runtime)` returns (SPEC.md section 2), and the
 * topology-as-data types that `describe()` returns (SPEC.md section 3.4).
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RonRequest, RonResponse } from '../http/types.js'
import type { ListenerPolicy } from '../http/listener-policy.js'
import type { HealthReport } from '../health/report.js'

export type { HealthReport, ListenerPolicy }

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
