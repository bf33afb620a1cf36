/**
 * `createServiceHost`: the base every `create*Service(config, transport)` is built on. It wires one
 * service's supervisor, work pools and broadcasts (from its topology), metrics, readiness, auth and
 * HTTP handler, serves the built-in endpoints, and implements the shutdown sequence of SPEC.md 3.3.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Clock } from '../clock.js'
import { systemClock } from '../clock.js'
import type { Random } from '../random.js'
import { systemRandom } from '../random.js'
import { ClosedError, DrainingError, UnauthorizedError, type RonError, RonUsageError } from '../errors.js'
import type { RonRequest, RonResponse, Reply, Route } from '../http/types.js'
import { createHttpHandler, DEFAULT_SLOW_CLIENT_LIMITS, type HttpHandler, type HttpHooks, type HttpLimits, type SlowClientLimits } from '../http/index.js'
import type { Transport } from '../transport/types.js'
import type { Claims, TokenVerifier } from '../auth/types.js'
import { bearerToken, checkCaveats, createTokenVerifier, staticKeySource, type CachingTokenVerifier, type KeySource, type Jwk } from '../auth/index.js'
import { Supervisor, WorkPool, Broadcast, linkSignals, type LinkedSignal } from '../concurrency/index.js'
import { Admission } from '../resilience/index.js'
import { holdAdmission, releaseAdmission, type AdmissionHold } from '../resilience/admission.js'
import { createServiceMetrics, type ServiceMetrics } from '../metrics/service-metrics.js'
import { METRICS_CONTENT_TYPE } from '../metrics/merge.js'
import { Readiness, REVOCATIONS_DEPENDENCY, type DependencySpec, type PathSpec } from '../health/readiness.js'
import { createCorsPolicy, type CorsOptions, type CorsPolicy } from '../http/cors.js'
import { fetchToRonRequest, ronResponseToFetch } from '../http/fetch-adapter.js'
import type { Watch } from '../concurrency/watch.js'
import { ConfigReloader, RELOAD_METRICS, type ReloadHook, type ReloadableConfig } from './reload.js'
import type { HealthReport, RonService, Topology, ChannelSpec } from './types.js'
import { noopLogger, type Logger } from './logger.js'
import type { ServiceBaseConfig } from './base-config.js'
import { RequestGate } from './request-gate.js'
import type { ServiceRuntime } from './runtime.js'
import type { ListenerPolicy } from './types.js'

/** Options of {@link createServiceHost}. `C` is the service's validated config type. */
export interface ServiceHostOptions<C = unknown> {
  /** Service id: the `aud` tokens must name, the `service` metric label. */
  id: string
  /** Reported by `/version`. */
  version: string
  /** Tasks and channels of the service (SPEC.md 3.4); mpsc channels become work pools, broadcasts become {@link Broadcast}s. */
  topology: Topology
  /** How the service reaches others (kept for the service's own use). @default none */
  transport?: Transport
  /**
   * Token verification for routes that declare a `scope`. Give a ready `verifier`, or `keys` (a
   * {@link KeySource} or a JWKS) to build one. @default none: every scoped route answers 401
   */
  auth?: { verifier?: TokenVerifier; keys?: KeySource | { keys: Jwk[] } }
  /** Time `close()` lets in-flight work finish before aborting stragglers. @default 3000 */
  drainDeadlineMs?: number
  /**
   * HTTP body/decompression/timeout limits and the slow-client rules (minimum body rate,
   * whole-request deadline, per-principal body shares), SPEC.md 4. Pick them per service: a
   * webhook receiver wants a short deadline, an object store a long one for large bodies.
   * @default the HTTP layer's defaults ({@link DEFAULT_SLOW_CLIENT_LIMITS} for the slow-client rules)
   */
  limits?: HttpLimits
  /** Per-IP admission for non-built-in requests. @default 256 concurrent per IP, no rate limit */
  admission?: { maxConcurrentPerIp?: number; ratePerIp?: { capacity: number; refillPerSec: number } }
  /**
   * Worker concurrency per mpsc channel consumed by a work pool (overrides `channel.pool.concurrency`).
   * @default 8 (queue capacity comes from the topology)
   */
  workers?: Record<string, number>
  /**
   * CORS (SPEC.md 6b): reads from `readOrigins`, writes (and their preflights) from `writeOrigins`.
   * @default reads from any origin (`*`), no cross-origin writes
   */
  cors?: CorsOptions
  /**
   * The service's config, made reloadable: `service.reload(partial)` merges, validates with
   * `schema`, refuses changes to `immutable` paths, swaps `host.config` and runs `onReload` hooks.
   * @default no schema: `host.config` holds `{}` and reloads only run the hooks
   */
  config?: ReloadableConfig<C>
  /** @default `runtime.clock`, else systemClock */
  clock?: Clock
  /** @default `runtime.random`, else systemRandom */
  random?: Random
  /** @default `runtime.logger`, else noopLogger */
  logger?: Logger
  /**
   * The factory's third argument (SPEC.md 2): clock, random, logger, metrics sink and token
   * verification are taken from it where the options above do not give them.
   * @default {}
   */
  runtime?: ServiceRuntime
  /**
   * Readiness as data (SPEC.md 3.3a): the service's dependencies (pushed with
   * `host.readiness.set()` or computed by a `check`) and its paths, each with the dependencies it
   * needs and the drain stage that sheds it. The host derives `paths`, `missing`, `ready` and
   * `writeReady` from them, and refuses a route (`readinessPath`) whose path the drain has shed.
   * @default no dependencies, no paths
   */
  readiness?: { dependencies?: readonly DependencySpec[]; paths?: Readonly<Record<string, PathSpec>> }
  /**
   * The drain's shape. `readWindow: false` skips the read window whatever the config says
   * (index: unready as a whole at the start of a drain, SPEC.md 3.3a). @default `{ readWindow: true }`
   */
  drain?: { readWindow?: boolean }
  /**
   * The read window of a drain, for a service whose config does not extend the base (with
   * `config.extendsBase` the config's `drainReadWindowMs` is used). @default 0
   */
  drainReadWindowMs?: number
}

/** What a service factory builds on. */
export interface ServiceHost<C = unknown> {
  readonly id: string
  readonly version: string
  readonly clock: Clock
  readonly logger: Logger
  readonly transport: Transport | undefined
  readonly supervisor: Supervisor
  readonly metrics: ServiceMetrics
  /** Readiness: dependencies (`set`), paths (`setPath`, SPEC.md 3.3a) and the shutdown phase. */
  readonly readiness: Readiness
  /**
   * The current config snapshot (frozen), swapped atomically by `service.reload()`. Read
   * `host.config.get()` where the value is used, rather than copying it at startup.
   */
  readonly config: Watch<C>
  /**
   * Registers a reload hook, called in registration order after a new snapshot is in
   * `host.config`, with the partial the reload was given. Throwing rolls the reload back: the
   * previous snapshot returns and the hooks that ran are called again with the previous values.
   */
  onReload(fn: ReloadHook): void
  /**
   * Replaces the CORS policy (the `cors` option) for every request from now on, so a service can
   * make its CORS origins reloadable: call it from an `onReload` hook with the new snapshot's
   * value (a reload rolled back runs the hook again with the previous value).
   *
   * @example
   * ```ts
   * host.onReload(() => host.setCors(host.config.get().cors))
   * ```
   */
  setCors(cors: CorsOptions | undefined): void
  /**
   * Changes the slow-client rules (`minBytesPerSec`, `rateWindowMs`, `requestTimeoutMs`,
   * `maxBodiesPerPrincipal`) for bodies read from now on, so a service can make them reloadable:
   * call it from an `onReload` hook with the new snapshot's values.
   * @throws {@link RonUsageError} `RON_INVALID_OPTION` for a non-positive value
   *
   * @example
   * ```ts
   * host.onReload(() => host.setSlowClientLimits({ minBytesPerSec: host.config.get().http.minBytesPerSec }))
   * ```
   */
  setSlowClientLimits(limits: SlowClientLimits): void
  /**
   * Checks the request's bearer token exactly as for a route declaring `scope`: verified for this
   * service's audience, scope and caveats. For routes that need a token only sometimes (an
   * admin-only variant of a public route).
   * @throws {@link UnauthorizedError} (no token, no verifier configured, invalid), {@link ForbiddenError}
   */
  authenticate(req: RonRequest, scope?: string): Promise<Claims>
  /** Aborts when `close()` gives up draining and starts aborting stragglers. */
  readonly signal: AbortSignal
  /**
   * Aborts as soon as `close()` begins: long-lived streams (an {@link SseHub}'s `signal`) end
   * here so the drain does not wait for them.
   */
  readonly drainSignal: AbortSignal
  /** True once `close()` began. */
  readonly closing: boolean
  /** The drain's progress: `running`, `writes` (the read window), `draining` (intake stopped), `closed`. */
  readonly phase: 'running' | 'writes' | 'draining' | 'closed'
  /**
   * The work pool consuming the mpsc channel `name` of the topology (created on first use).
   * @throws {@link RonUsageError} `RON_UNKNOWN_CHANNEL` when `name` is not an mpsc channel of the topology
   */
  pool(name: string): WorkPool
  /**
   * The broadcast channel `name` of the topology (created on first use).
   * @throws {@link RonUsageError} `RON_UNKNOWN_CHANNEL` when `name` is not a broadcast channel of the topology
   */
  broadcast<T>(name: string): Broadcast<T>
  /**
   * Adds routes. Must be called before the first request.
   * @throws {@link RouteConfigError} for a write route without `scope`/`public` or a duplicate route
   * @throws {@link RonUsageError} `RON_ROUTES_FROZEN` after the first request, `RON_UNKNOWN_CHANNEL` when a route names a queue that is not an mpsc channel
   */
  routes(routes: Route[]): void
  /**
   * Registers a hook run when `close()` begins, after writes turned unready and before the read
   * window: stop producing work (planners, announcers). Hooks run in registration order; one that
   * throws is logged and the drain goes on.
   */
  preClose(fn: () => Promise<void> | void): void
  /** Registers service cleanup, run after the drain, in reverse registration order. */
  onClose(fn: () => Promise<void> | void): void
  /**
   * Registers a hook called with every error a request is answered with (refusals of the
   * admission, limits and drain included), with the matched route's name, after the host counted
   * it: a service counts its own refusals (`rejected_total{reason}`). Must be cheap; a hook that
   * throws is ignored. `req` is the request (for a refusal made before routing, `route` is
   * `'unmatched'` and the request's method and URL say what it was).
   */
  onError(fn: (err: RonError, route: string, req: RonRequest) => void): void
  /** The service object a factory returns (handle/fetch/dispatch/health/describe/metrics/close). */
  readonly service: RonService
}

/** Default worker concurrency of a work pool. */
export const DEFAULT_POOL_CONCURRENCY = 8
/** Default drain deadline of `close()`, in ms. */
export const DEFAULT_DRAIN_DEADLINE_MS = 3000
/** The release functions kept with one admission key (its `memo`): see `#releasesOf`. */
interface HoldReleases {
  plain: () => void
  gated: (() => void) | undefined
  gateRelease: (() => void) | undefined
}

/** The built-in endpoints' paths (`#builtin`'s cases): their shortest and longest length. */
const BUILTIN_PATHS = ['/healthz', '/readyz', '/metrics', '/version']
const BUILTIN_MIN_LENGTH = Math.min(...BUILTIN_PATHS.map((p) => p.length))
const BUILTIN_MAX_LENGTH = Math.max(...BUILTIN_PATHS.map((p) => p.length))

const RETRY_AFTER_MS = 1000

/** Each service's `metricsText` function → its host's metrics (kept by function so `{...host.service}` copies still resolve). */
const hostMetrics = new WeakMap<() => Promise<string>, ServiceMetrics>()

/**
 * @internal The declared label names of every metric a service registered (for `@ron/core/testing`;
 * an exposition omits the labels of a metric with no sample yet). Undefined for a service not built
 * on {@link createServiceHost}.
 */
export function registeredMetricLabels(service: Pick<RonService, 'metricsText'>): Map<string, string[]> | undefined {
  const m = hostMetrics.get(service.metricsText)
  if (m === undefined) return undefined
  const out = new Map<string, string[]>()
  for (const metric of m.registry.getMetricsAsArray()) {
    const names = (metric as unknown as { labelNames?: readonly string[] }).labelNames ?? []
    out.set(metric.name, [...names])
  }
  return out
}

/**
 * Creates a service host. A service factory declares its topology, adds routes, starts its
 * background tasks on `host.supervisor`, and returns `host.service`.
 *
 * Shutdown (`service.close()`, SPEC.md 3.3): writes turn unready, then reads; new requests get
 * 503 `Draining` with `Retry-After`; work pools stop intake and drain until `drainDeadlineMs`;
 * then `host.signal` aborts and the supervisor's shutdown aborts stragglers (counted in
 * `tasks_aborted_total{kind}`); `onClose` hooks run in reverse order. A second `close()` joins
 * the first; afterwards every request gets 503 `Closed`.
 *
 * @example
 * ```ts
 * export async function createHelloService(config: { id?: string } = {}): Promise<RonService> {
 *   const host = createServiceHost({ id: config.id ?? 'hello', version: '1.0.0', topology })
 *   host.routes([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) }])
 *   return host.service
 * }
 * ```
 */
export function createServiceHost<C = unknown>(options: ServiceHostOptions<C>): ServiceHost<C> {
  return new Host<C>(options)
}

class Host<C> implements ServiceHost<C> {
  readonly id: string
  readonly version: string
  readonly clock: Clock
  readonly logger: Logger
  readonly transport: Transport | undefined
  readonly supervisor: Supervisor
  readonly metrics: ServiceMetrics
  readonly readiness: Readiness
  readonly service: RonService
  readonly config: Watch<C>

  readonly #reloader: ConfigReloader<C>
  #cors: CorsPolicy
  readonly #draining = new AbortController()
  readonly #topology: Topology
  readonly #channels = new Map<string, ChannelSpec>()
  readonly #pools = new Map<string, WorkPool>()
  readonly #broadcasts = new Map<string, Broadcast<unknown>>()
  readonly #routes: Route[] = []
  readonly #closeHooks: Array<() => Promise<void> | void> = []
  readonly #errorHooks: Array<(err: RonError, route: string, req: RonRequest) => void> = []
  readonly #abort = new AbortController()
  /** In-process requests' signals linked to {@link #abort}, released when their exchange finishes. */
  readonly #links = new WeakMap<RonRequest, LinkedSignal>()
  readonly #drainDeadlineMs: number
  readonly #workers: Record<string, number>
  readonly #admission: Admission
  readonly #verifier: TokenVerifier | undefined
  #limits: HttpLimits | undefined
  readonly #gate: RequestGate
  readonly #base: boolean
  readonly #readWindow: boolean
  readonly #legacyReadWindowMs: number
  readonly #listener: ListenerPolicy
  readonly #preCloseHooks: Array<() => Promise<void> | void> = []
  #handler: HttpHandler | undefined
  #state: 'running' | 'writes' | 'draining' | 'closed' = 'running'
  #closePromise: Promise<void> | undefined
  #inFlight = 0
  #idle: (() => void) | undefined

  constructor(o: ServiceHostOptions<C>) {
    const rt = o.runtime ?? {}
    this.id = o.id
    this.version = o.version
    this.clock = o.clock ?? rt.clock ?? systemClock
    this.logger = (o.logger ?? rt.logger ?? noopLogger).child({ service: o.id })
    this.transport = o.transport
    this.#topology = o.topology
    this.#workers = o.workers ?? {}
    for (const c of o.topology.channels) this.#channels.set(c.name, c)
    this.metrics = createServiceMetrics({ service: o.id, ...(rt.metrics === undefined ? {} : { also: rt.metrics }) })
    this.supervisor = new Supervisor({ name: o.id, clock: this.clock, random: o.random ?? rt.random ?? systemRandom, metrics: this.metrics.sink })
    this.readiness = new Readiness({ liveness: () => this.supervisor.health(), retryAfterMs: RETRY_AFTER_MS })
    this.metrics.histogram(RELOAD_METRICS.duration, 'Duration of config reloads (validation, swap and hooks), in seconds.')
    this.#reloader = new ConfigReloader<C>(o.config, { clock: this.clock, metrics: this.metrics.sink, logger: this.logger, service: o.id })
    this.config = this.#reloader.config

    // The base keys (http.*, cors, drain) come from the config when it extends the base, else
    // from the legacy options.
    this.#base = o.config?.extendsBase === true
    const base = this.#base ? baseOf(this.config.get(), o.id) : undefined
    const h = base?.http
    this.#drainDeadlineMs = o.drainDeadlineMs ?? DEFAULT_DRAIN_DEADLINE_MS
    this.#legacyReadWindowMs = o.drainReadWindowMs ?? 0
    this.#readWindow = o.drain?.readWindow !== false
    this.#limits = h === undefined ? o.limits : limitsOf(h)
    const perIp = h === undefined ? o.admission : { maxConcurrentPerIp: h.maxConcurrentPerIp, ...(h.maxRpsPerIp === undefined ? {} : { ratePerIp: { capacity: 2 * h.maxRpsPerIp, refillPerSec: h.maxRpsPerIp } }) }
    this.#admission = new Admission({
      maxConcurrentPerKey: perIp?.maxConcurrentPerIp ?? 256,
      ...(perIp?.ratePerIp === undefined ? {} : { rate: perIp.ratePerIp }),
      clock: this.clock,
    })
    this.#gate = new RequestGate({ maxInflight: h?.maxInflight, maxRps: h?.maxRps }, this.clock)
    this.#cors = createCorsPolicy(base === undefined ? o.cors : corsOf(base.cors))
    this.#listener = Object.freeze({
      readTimeoutMs: h?.readTimeoutMs ?? o.limits?.readTimeoutMs ?? 5000,
      idleTimeoutMs: h?.idleTimeoutMs ?? 60_000,
      maxConnections: h?.maxConnections ?? 10_000,
      maxConnectionsPerIp: perIp?.maxConcurrentPerIp ?? 256,
      intakeStopped: this.#draining.signal,
    })
    if (this.#base) this.#reloader.onReload(() => this.#applyBase(baseOf(this.config.get(), o.id)))

    const auth = o.auth ?? rt.auth
    this.#verifier = auth?.verifier ?? buildVerifier(auth?.keys, this.clock)
    const v = this.#verifier as Partial<Pick<CachingTokenVerifier, 'revocationsStale'>> | undefined
    if (typeof v?.revocationsStale === 'function') {
      // SPEC.md 5: while the verifier's revocation feed is stale, writes are refused, and
      // readiness says so. Staleness is a function of time since the last sync: computed when
      // readiness is reported.
      const stale = v.revocationsStale.bind(v)
      this.readiness.dependency({ name: REVOCATIONS_DEPENDENCY, gates: 'write', check: () => (stale() ? 'revocation_stale' : true) })
    }
    for (const d of o.readiness?.dependencies ?? []) this.readiness.dependency(d)
    for (const [name, spec] of Object.entries(o.readiness?.paths ?? {})) this.readiness.declarePath(name, spec)

    // Every series the topology implies exists at zero from the start (SPEC.md 4).
    zeroTopology(this.metrics, o.topology)
    // Pools named explicitly (channel.pool or the workers option) exist from the start, so their
    // workers and gauges are visible before the first request.
    for (const c of o.topology.channels) {
      if (c.kind === 'mpsc' && (c.pool !== undefined || o.workers?.[c.name] !== undefined)) this.pool(c.name)
    }
    this.service = this.#makeService()
  }

  /** Applies the reloadable base keys of a new snapshot (or of the previous one, on rollback). */
  #applyBase(cfg: ServiceBaseConfig): void {
    const slow = slowOf(cfg.http)
    this.setSlowClientLimits(slow)
    this.#gate.configure({ maxInflight: cfg.http.maxInflight, maxRps: cfg.http.maxRps })
    this.setCors(corsOf(cfg.cors))
  }

  /** The drain's deadline and read window, as configured now. */
  #drainSettings(): { deadlineMs: number; windowMs: number } {
    if (!this.#base) return { deadlineMs: this.#drainDeadlineMs, windowMs: this.#readWindow ? this.#legacyReadWindowMs : 0 }
    const cfg = this.config.get() as unknown as ServiceBaseConfig
    return { deadlineMs: cfg.drainDeadlineMs, windowMs: this.#readWindow ? cfg.drainReadWindowMs : 0 }
  }

  get signal(): AbortSignal {
    return this.#abort.signal
  }

  get drainSignal(): AbortSignal {
    return this.#draining.signal
  }

  onReload(fn: ReloadHook): void {
    this.#reloader.onReload(fn)
  }

  setCors(cors: CorsOptions | undefined): void {
    this.#cors = createCorsPolicy(cors)
  }

  setSlowClientLimits(limits: SlowClientLimits): void {
    if (this.#handler !== undefined) this.#handler.setSlowClientLimits(limits)
    else {
      // Validated now, as a handler would (a bad value fails the reload, not the first request).
      const merged = { ...this.#limits, ...limits }
      createHttpHandler({ serviceId: this.id, routes: [], limits: merged })
      this.#limits = merged
    }
  }

  get closing(): boolean {
    return this.#state !== 'running'
  }

  get phase(): 'running' | 'writes' | 'draining' | 'closed' {
    return this.#state
  }

  pool(name: string): WorkPool {
    const existing = this.#pools.get(name)
    if (existing !== undefined) return existing
    const c = this.#channels.get(name)
    if (c === undefined || c.kind !== 'mpsc') throw new RonUsageError('RON_UNKNOWN_CHANNEL', `service ${this.id}: no mpsc channel named '${name}' in the topology`)
    if (this.#state === 'draining' || this.#state === 'closed') throw new ClosedError(`service ${this.id} is closing`)
    const pool = new WorkPool({
      name,
      capacity: c.capacity,
      concurrency: this.#workers[name] ?? c.pool?.concurrency ?? DEFAULT_POOL_CONCURRENCY,
      supervisor: this.supervisor,
      metrics: this.metrics.sink,
      clock: this.clock,
    })
    this.#pools.set(name, pool)
    return pool
  }

  broadcast<T>(name: string): Broadcast<T> {
    const existing = this.#broadcasts.get(name)
    if (existing !== undefined) return existing as Broadcast<T>
    const c = this.#channels.get(name)
    if (c === undefined || c.kind !== 'broadcast') throw new RonUsageError('RON_UNKNOWN_CHANNEL', `service ${this.id}: no broadcast channel named '${name}' in the topology`)
    const b = new Broadcast<T>({ name, capacity: c.capacity, metrics: this.metrics.sink })
    this.#broadcasts.set(name, b as Broadcast<unknown>)
    return b
  }

  routes(routes: Route[]): void {
    if (this.#handler !== undefined) throw new RonUsageError('RON_ROUTES_FROZEN', `service ${this.id}: routes must be added before the first request`)
    for (const r of routes) {
      if (r.queue !== undefined) this.pool(r.queue) // validates the name and starts the pool's workers
    }
    // Route errors (a write route without a scope, duplicates) are startup errors: surface them
    // here, in the service factory, rather than on the first request.
    createHttpHandler({ serviceId: this.id, routes: [...this.#routes, ...routes] })
    this.#routes.push(...routes)
  }

  preClose(fn: () => Promise<void> | void): void {
    this.#preCloseHooks.push(fn)
  }

  onError(fn: (err: RonError, route: string, req: RonRequest) => void): void {
    this.#errorHooks.push(fn)
  }

  onClose(fn: () => Promise<void> | void): void {
    this.#closeHooks.push(fn)
  }

  authenticate(req: RonRequest, scope?: string): Promise<Claims> {
    // The common refusals reject without a JavaScript throw (V8 computes a message location for
    // every throw, thousands of instructions per refused request).
    if (this.#verifier === undefined) {
      return Promise.reject(new UnauthorizedError('this service has no token verifier configured', { details: { reason: 'no_verifier' } }))
    }
    const token = bearerToken(req.headers)
    if (token === undefined) return Promise.reject(new UnauthorizedError('missing bearer token', { details: { reason: 'missing' } }))
    let verified: Promise<Claims>
    try {
      verified = this.#verifier.verify(token, scope === undefined ? { audience: this.id } : { audience: this.id, scope })
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new UnauthorizedError('invalid token', { cause: e }))
    }
    return verified.then((claims) => {
      // Attenuated tokens narrow methods and paths: enforced here for every scoped route, so no
      // route can forget. Byte limits are the route's to check (it knows the size).
      const q = req.url.indexOf('?')
      checkCaveats(claims, { method: req.method, path: q === -1 ? req.url : req.url.slice(0, q) })
      return claims
    })
  }

  health(): HealthReport {
    return this.readiness.report(this.supervisor.health())
  }

  close(): Promise<void> {
    this.#closePromise ??= this.#close()
    return this.#closePromise
  }

  #handlerOrCreate(): HttpHandler {
    this.#handler ??= createHttpHandler({
      serviceId: this.id,
      routes: this.#routes,
      hooks: this.#hooks(),
      clock: this.clock,
      metrics: this.metrics.sink,
      closeConnections: this.#draining.signal,
      ...(this.#limits === undefined ? {} : { limits: this.#limits }),
    })
    return this.#handler
  }

  #hooks(): HttpHooks {
    return {
      builtin: (path, req) => this.#builtin(path, req),
      intake: () => {
        if (this.#state === 'draining') throw new DrainingError(`service ${this.id} is draining`, { retryAfterMs: RETRY_AFTER_MS })
        if (this.#state === 'closed') throw new ClosedError(`service ${this.id} is closed`, { retryAfterMs: RETRY_AFTER_MS })
      },
      admit: (req, route) => {
        if (this.#state === 'writes' && this.#shedWithWrites(route)) {
          throw new DrainingError(`service ${this.id} is draining: writes are refused`, { details: { phase: 'writes' }, retryAfterMs: RETRY_AFTER_MS })
        }
        // No closure per request: the release functions are made once per key (per IP) and kept
        // with the key's admission entry. The handler calls a release exactly once, when the
        // exchange finishes (HttpHooks.admit), so they need no guard of their own.
        const hold = holdAdmission(this.#admission, req.remoteAddress)
        const releases = (hold.memo ??= this.#releasesOf(hold)) as HoldReleases
        if (this.#gate.active) {
          let gateRelease: () => void
          try {
            gateRelease = this.#gate.admit()
          } catch (e) {
            releaseAdmission(hold)
            throw e
          }
          this.#inFlight++
          // The gate hands out one release function (made once); rebuilt if it ever hands out another.
          if (releases.gateRelease !== gateRelease) {
            const plain = releases.plain
            releases.gateRelease = gateRelease
            releases.gated = () => {
              gateRelease()
              plain()
            }
          }
          return releases.gated!
        }
        this.#inFlight++
        return releases.plain
      },
      authenticate: (req, route) => this.authenticate(req, route.scope),
      submit: (queue, job, signal) => this.pool(queue).submit(job, signal),
      observe: (route, method, status, seconds) => this.metrics.observeHttp(route, method, status, seconds),
      observer: (route) => this.metrics.httpObserver(route),
      cors: (method, origin) => this.#cors.responseHeaders(method, origin),
      finished: (req) => {
        const link = this.#links.get(req)
        if (link === undefined) return
        this.#links.delete(req)
        link.dispose()
      },
      onError: (err: RonError, corrId: string, req: RonRequest, route: string) => {
        // SPEC.md 4: every 429 is counted, whichever limit answered it. A full work queue does
        // not know the route it serves: the endpoint is the route the request matched.
        if (err.status === 429) {
          const d = err.details
          this.metrics.sink.inc('busy_rejections_total', {
            endpoint: typeof d.endpoint === 'string' ? d.endpoint : route === 'unmatched' || route === 'builtin' ? '' : route,
            queue: typeof d.queue === 'string' ? d.queue : '',
          })
        }
        for (const hook of this.#errorHooks) {
          try {
            hook(err, route, req)
          } catch {
            // A counting hook never changes the answer.
          }
        }
        const record = { corrId, code: err.code, method: req.method, url: req.url }
        if (err.status >= 500 && err.code === 'Internal') this.logger.error({ ...record, err: err.cause ?? err }, err.message)
        else this.logger.debug(record, err.message)
      },
    }
  }

  #builtin(path: string, req: RonRequest): Reply | Promise<Reply> | undefined {
    const method = req.method
    if (method === 'OPTIONS') return this.#cors.preflight(req)
    if (method !== 'GET' && method !== 'HEAD') return undefined
    // Most requests are for routes: one length check turns them away before four string compares.
    if (path.length < BUILTIN_MIN_LENGTH || path.length > BUILTIN_MAX_LENGTH) return undefined
    switch (path) {
      case '/healthz':
        return this.readiness.healthzReply(this.supervisor.health())
      case '/readyz':
        return this.readiness.readyzReply(this.supervisor.health())
      case '/metrics':
        return this.metrics.text().then((body) => ({ status: 200, headers: { 'content-type': METRICS_CONTENT_TYPE }, body }))
      case '/version':
        return { status: 200, json: { service: this.id, version: this.version, node: process.version } }
      default:
        return undefined
    }
  }

  /**
   * The release functions of one admission key: `plain` ends the per-IP hold; `gated` (made on
   * the first admission through the service-wide gate) also gives back the gate's slot, for a
   * request admitted while the gate was active (a reload may turn the gate off before it finishes).
   */
  #releasesOf(hold: AdmissionHold): HoldReleases {
    return {
      plain: () => {
        releaseAdmission(hold)
        if (--this.#inFlight === 0) this.#idle?.()
      },
      gated: undefined,
      gateRelease: undefined,
    }
  }

  /** Whether a drain sheds `route` with the writes (its readiness path's stage, else its method). */
  #shedWithWrites(route: Route): boolean {
    const path = route.readinessPath
    const stage = path === undefined ? undefined : this.readiness.shedStage(path)
    if (stage !== undefined) return stage === 'writes'
    return route.method !== 'GET' && route.method !== 'HEAD' && route.method !== 'OPTIONS'
  }

  #makeService(): RonService {
    const handle = (req: IncomingMessage, res: ServerResponse): void => this.#handlerOrCreate().handle(req, res)
    const dispatch = async (req: RonRequest): Promise<RonResponse> => {
      // In-process requests also abort when the host force-closes. The link is released when
      // the exchange finishes (the `finished` hook), not left on the host's long-lived signal.
      const link = linkSignals(this.#abort.signal, req.signal)
      const inner: RonRequest = { method: req.method, url: req.url, headers: req.headers, body: req.body, remoteAddress: req.remoteAddress, signal: link.signal }
      this.#links.set(inner, link)
      // CORS headers come through the handler's `cors` hook, as for node:http requests.
      return this.#handlerOrCreate().dispatch(inner)
    }
    const metricsText = (): Promise<string> => this.metrics.text()
    hostMetrics.set(metricsText, this.metrics)
    const service: RonService = {
      id: this.id,
      version: this.version,
      handle,
      fetch: async (request: Request) => ronResponseToFetch(await dispatch(fetchToRonRequest(request))),
      dispatch,
      health: () => this.health(),
      describe: () => structuredClone(this.#topology),
      metricsText,
      reload: (partial: unknown) => this.#reloader.reload(partial),
      listener: this.#listener,
      close: () => this.close(),
      [Symbol.asyncDispose]: () => this.close(),
    }
    return service
  }

  async #close(): Promise<void> {
    // The caller awaits close(): hold Node's event loop until it is done. The injected clock's
    // timers are unref'd, and an embedding script may have nothing else keeping it alive (an ESM
    // script would exit with code 13 in the read window or the drain).
    const hold = setInterval(noop, 3_600_000)
    try {
      await this.#drain()
    } finally {
      clearInterval(hold)
    }
  }

  /** SPEC.md 3.3: writes → read window → intake stops → drain → abort → cleanup. */
  async #drain(): Promise<void> {
    const { deadlineMs, windowMs } = this.#drainSettings()
    this.#state = 'writes'
    this.readiness.draining('writes')
    this.logger.info({ readWindowMs: windowMs, drainDeadlineMs: deadlineMs }, 'draining: writes refused')
    // Without hooks or a window, intake stops in the same turn as close() (nothing to wait for).
    if (this.#preCloseHooks.length > 0) await this.#runHooks(this.#preCloseHooks, 'preClose')
    if (windowMs > 0) await this.clock.sleep(windowMs)

    const started = this.clock.now()
    this.#state = 'draining'
    this.readiness.draining('all')
    this.#draining.abort(new DrainingError(`service ${this.id} is draining`, { retryAfterMs: RETRY_AFTER_MS }))
    this.logger.info({ drainDeadlineMs: deadlineMs }, 'draining: intake stopped')
    for (const p of this.#pools.values()) p.stop()

    const deadline = new AbortController()
    const timer = this.clock.setTimeout(() => deadline.abort(), deadlineMs)
    timer.unref?.()
    try {
      await Promise.race([
        Promise.all([...[...this.#pools.values()].map((p) => p.drained()), this.#requestsIdle()]),
        new Promise<void>((resolve) => deadline.signal.addEventListener('abort', () => resolve(), { once: true })),
      ])
    } finally {
      this.clock.clearTimeout(timer)
      this.#idle = undefined
    }

    const remaining = Math.max(0, deadlineMs - (this.clock.now() - started))
    let queued = 0
    for (const p of this.#pools.values()) queued += p.inFlight + p.depth
    const directStragglers = Math.max(0, this.#inFlight - queued)
    if (remaining === 0 && directStragglers > 0) {
      this.metrics.sink.inc('tasks_aborted_total', { kind: 'request' }, directStragglers)
    }
    this.#abort.abort(new DrainingError(`service ${this.id} closed`, { retryAfterMs: RETRY_AFTER_MS }))
    const result = await this.supervisor.shutdown(remaining)
    if (result.aborted.length > 0) this.logger.warn({ aborted: result.aborted }, 'aborted stragglers at the drain deadline')
    this.#state = 'closed'

    await this.#runHooks([...this.#closeHooks].reverse(), 'onClose')
    for (const b of this.#broadcasts.values()) b.close()
    this.#reloader.close()
    this.logger.info({}, 'closed')
  }

  async #runHooks(hooks: ReadonlyArray<() => Promise<void> | void>, what: string): Promise<void> {
    for (const fn of hooks) {
      try {
        await fn()
      } catch (err) {
        this.logger.error({ err }, `${what} hook failed`)
      }
    }
  }

  #requestsIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise<void>((resolve) => {
      this.#idle = resolve
    })
  }
}

function noop(): void {}

/** The base keys of a config that extends the base (checked: a usage error otherwise). */
function baseOf(cfg: unknown, id: string): ServiceBaseConfig {
  const c = cfg as Partial<ServiceBaseConfig> | undefined
  if (typeof c?.http !== 'object' || typeof c.drainDeadlineMs !== 'number' || typeof c.drainReadWindowMs !== 'number') {
    throw new RonUsageError('RON_INVALID_OPTION', `service ${id}: config.extendsBase is set but the config has no base keys (spread serviceBaseShape() into the schema)`)
  }
  return c as ServiceBaseConfig
}

function slowOf(h: ServiceBaseConfig['http']): SlowClientLimits {
  return {
    minBytesPerSec: h.minBytesPerSec,
    rateWindowMs: h.rateWindowMs,
    requestTimeoutMs: h.requestTimeoutMs,
    maxBodiesPerPrincipal: h.maxBodiesPerPrincipal ?? DEFAULT_SLOW_CLIENT_LIMITS.maxBodiesPerPrincipal,
  }
}

function limitsOf(h: ServiceBaseConfig['http']): HttpLimits {
  return {
    jsonBodyLimit: h.jsonBodyLimit,
    decompressionRatio: h.decompressionRatio,
    maxDecompressedBytes: h.maxDecompressedBytes,
    readTimeoutMs: h.readTimeoutMs,
    writeTimeoutMs: h.writeTimeoutMs,
    ...slowOf(h),
  }
}

function corsOf(c: ServiceBaseConfig['cors']): CorsOptions | undefined {
  if (c === undefined) return undefined
  return { ...(c.readOrigins === undefined ? {} : { readOrigins: c.readOrigins }), ...(c.writeOrigins === undefined ? {} : { writeOrigins: c.writeOrigins }) }
}

/** Zero series of the SPEC/seed families the topology implies: per channel and per task kind. */
function zeroTopology(m: ServiceMetrics, t: Topology): void {
  for (const c of t.channels) {
    if (c.kind === 'mpsc') m.zero('queue_depth', { queue: c.name })
    if (c.overflow !== 'last-write-wins') m.zero('queue_dropped_total', { queue: c.name })
    if (c.kind === 'broadcast') m.zero('bus_lagged_total', { topic: c.name })
  }
  for (const kind of [...t.tasks.map((k) => k.name), 'request']) {
    m.zero('tasks_spawned_total', { kind })
    m.zero('tasks_aborted_total', { kind })
    m.zero('tasks_canceled_total', { kind })
  }
}

function buildVerifier(keys: KeySource | { keys: Jwk[] } | undefined, clock: Clock): TokenVerifier | undefined {
  if (keys === undefined) return undefined
  const source: KeySource = 'getKey' in keys ? keys : staticKeySource(keys)
  return createTokenVerifier({ keys: source, clock })
}
