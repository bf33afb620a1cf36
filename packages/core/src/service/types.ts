/**
 * The shape every `create*Service(config, transport)` returns (SPEC.md section 2), and the
 * topology-as-data types that `describe()` returns (SPEC.md section 3.4).
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Registry } from 'prom-client'
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
  /** Names of dependencies that are not ready. */
  missing: string[]
  reason?: string
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
  /** This instance's own metrics registry (never prom-client's global one). */
  readonly metrics: Registry
  /** Idempotent shutdown per SPEC.md 3.3: readiness off, intake stops, drain, abort stragglers. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}
