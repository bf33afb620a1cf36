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
import { createHttpHandler, type HttpHandler, type HttpHooks, type HttpLimits, type SlowClientLimits } from '../http/index.js'
import type { Transport } from '../transport/types.js'
import type { Claims, TokenVerifier } from '../auth/types.js'
import { bearerToken, checkCaveats, createTokenVerifier, staticKeySource, type CachingTokenVerifier, type KeySource, type Jwk } from '../auth/index.js'
import { Supervisor, WorkPool, Broadcast, linkSignals, type LinkedSignal } from '../concurrency/index.js'
import { Admission } from '../resilience/index.js'
import { createServiceMetrics, type ServiceMetrics } from '../metrics/service-metrics.js'
import { METRICS_CONTENT_TYPE } from '../metrics/merge.js'
import { Readiness } from '../health/readiness.js'
import { createCorsPolicy, type CorsOptions, type CorsPolicy } from '../http/cors.js'
import { fetchToRonRequest, ronResponseToFetch } from '../http/fetch-adapter.js'
import type { Watch } from '../concurrency/watch.js'
import { ConfigReloader, RELOAD_METRICS, type ReloadHook, type ReloadableConfig } from './reload.js'
import type { HealthReport, RonService, Topology, ChannelSpec } from './types.js'
import { noopLogger, type Logger } from './logger.js'

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
  /** @default systemClock */
  clock?: Clock
  /** @default systemRandom */
  random?: Random
  /** @default noopLogger */
  logger?: Logger
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
  /** Registers service cleanup, run after the drain, in reverse registration order. */
  onClose(fn: () => Promise<void> | void): void
  /** The service object a factory returns (handle/fetch/dispatch/health/describe/metrics/close). */
  readonly service: RonService
}

/** Default worker concurrency of a work pool. */
export const DEFAULT_POOL_CONCURRENCY = 8
/** Default drain deadline of `close()`, in ms. */
export const DEFAULT_DRAIN_DEADLINE_MS = 3000
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
  readonly #abort = new AbortController()
  /** In-process requests' signals linked to {@link #abort}, released when their exchange finishes. */
  readonly #links = new WeakMap<RonRequest, LinkedSignal>()
  readonly #drainDeadlineMs: number
  readonly #workers: Record<string, number>
  readonly #admission: Admission
  readonly #verifier: TokenVerifier | undefined
  #limits: HttpLimits | undefined
  readonly #revocationsStale: (() => boolean) | undefined
  #revocationsDeclared = false
  #handler: HttpHandler | undefined
  #state: 'running' | 'draining' | 'closed' = 'running'
  #closePromise: Promise<void> | undefined
  #inFlight = 0
  #idle: (() => void) | undefined

  constructor(o: ServiceHostOptions<C>) {
    this.id = o.id
    this.version = o.version
    this.clock = o.clock ?? systemClock
    this.logger = (o.logger ?? noopLogger).child({ service: o.id })
    this.transport = o.transport
    this.#topology = o.topology
    this.#drainDeadlineMs = o.drainDeadlineMs ?? DEFAULT_DRAIN_DEADLINE_MS
    this.#workers = o.workers ?? {}
    this.#limits = o.limits
    for (const c of o.topology.channels) this.#channels.set(c.name, c)
    this.metrics = createServiceMetrics({ service: o.id })
    this.supervisor = new Supervisor({ name: o.id, clock: this.clock, random: o.random ?? systemRandom, metrics: this.metrics.sink })
    this.readiness = new Readiness({ liveness: () => this.supervisor.health(), retryAfterMs: RETRY_AFTER_MS })
    this.#admission = new Admission({
      maxConcurrentPerKey: o.admission?.maxConcurrentPerIp ?? 256,
      ...(o.admission?.ratePerIp === undefined ? {} : { rate: o.admission.ratePerIp }),
      clock: this.clock,
    })
    this.#verifier = o.auth?.verifier ?? buildVerifier(o.auth?.keys, this.clock)
    const v = this.#verifier as Partial<Pick<CachingTokenVerifier, 'revocationsStale'>> | undefined
    this.#revocationsStale = typeof v?.revocationsStale === 'function' ? v.revocationsStale.bind(v) : undefined
    this.#cors = createCorsPolicy(o.cors)
    this.metrics.histogram(RELOAD_METRICS.duration, 'Duration of config reloads (validation, swap and hooks), in seconds.')
    this.#reloader = new ConfigReloader<C>(o.config, { clock: this.clock, metrics: this.metrics.sink, logger: this.logger, service: o.id })
    this.config = this.#reloader.config
    // Pools named explicitly (channel.pool or the workers option) exist from the start, so their
    // workers and gauges are visible before the first request.
    for (const c of o.topology.channels) {
      if (c.kind === 'mpsc' && (c.pool !== undefined || o.workers?.[c.name] !== undefined)) this.pool(c.name)
    }
    this.service = this.#makeService()
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

  pool(name: string): WorkPool {
    const existing = this.#pools.get(name)
    if (existing !== undefined) return existing
    const c = this.#channels.get(name)
    if (c === undefined || c.kind !== 'mpsc') throw new RonUsageError('RON_UNKNOWN_CHANNEL', `service ${this.id}: no mpsc channel named '${name}' in the topology`)
    if (this.#state !== 'running') throw new ClosedError(`service ${this.id} is closing`)
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
    this.#checkRevocations()
    return this.readiness.report(this.supervisor.health())
  }

  /**
   * SPEC.md 5: while the verifier's revocation feed is stale, writes are refused, and readiness
   * says so (`revocations`, write-gating, reason `revocation_stale`). Staleness is a function of
   * time since the last sync, so it is read when readiness is reported (health(), /readyz)
   * rather than on every request or on the feed's poll-driven change callback.
   */
  #checkRevocations(): void {
    const stale = this.#revocationsStale?.() === true
    if (stale) {
      if (!this.#revocationsDeclared) {
        this.readiness.declare('revocations', 'write')
        this.#revocationsDeclared = true
      }
      this.readiness.set('revocations', false, 'revocation_stale')
    } else if (this.#revocationsDeclared) {
      this.readiness.set('revocations', true)
    }
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
      admit: (req) => {
        const release = this.#admission.acquire(req.remoteAddress)
        this.#inFlight++
        let done = false
        return () => {
          if (done) return
          done = true
          release()
          if (--this.#inFlight === 0) this.#idle?.()
        }
      },
      authenticate: (req, route) => this.authenticate(req, route.scope),
      submit: (queue, job, signal) => this.pool(queue).submit(job, signal),
      observe: (route, method, status, seconds) => this.metrics.observeHttp(route, method, status, seconds),
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
        const record = { corrId, code: err.code, method: req.method, url: req.url }
        if (err.status >= 500 && err.code === 'Internal') this.logger.error({ ...record, err: err.cause ?? err }, err.message)
        else this.logger.debug(record, err.message)
      },
    }
  }

  #builtin(path: string, req: RonRequest): Reply | Promise<Reply> | undefined {
    if (req.method === 'OPTIONS') return this.#cors.preflight(req)
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined
    switch (path) {
      case '/healthz':
        return this.readiness.healthzReply(this.supervisor.health())
      case '/readyz':
        this.#checkRevocations()
        return this.readiness.readyzReply(this.supervisor.health())
      case '/metrics':
        return this.metrics.text().then((body) => ({ status: 200, headers: { 'content-type': METRICS_CONTENT_TYPE }, body }))
      case '/version':
        return { status: 200, json: { service: this.id, version: this.version, node: process.version } }
      default:
        return undefined
    }
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
      close: () => this.close(),
      [Symbol.asyncDispose]: () => this.close(),
    }
    return service
  }

  async #close(): Promise<void> {
    const started = this.clock.now()
    this.#state = 'draining'
    this.#draining.abort(new DrainingError(`service ${this.id} is draining`, { retryAfterMs: RETRY_AFTER_MS }))
    this.readiness.draining('writes')
    this.readiness.draining('all')
    this.logger.info({ drainDeadlineMs: this.#drainDeadlineMs }, 'draining')
    for (const p of this.#pools.values()) p.stop()

    const deadline = new AbortController()
    const timer = this.clock.setTimeout(() => deadline.abort(), this.#drainDeadlineMs)
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

    const remaining = Math.max(0, this.#drainDeadlineMs - (this.clock.now() - started))
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

    for (const fn of [...this.#closeHooks].reverse()) {
      try {
        await fn()
      } catch (err) {
        this.logger.error({ err }, 'onClose hook failed')
      }
    }
    for (const b of this.#broadcasts.values()) b.close()
    this.#reloader.close()
    this.logger.info({}, 'closed')
  }

  #requestsIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise<void>((resolve) => {
      this.#idle = resolve
    })
  }
}

function buildVerifier(keys: KeySource | { keys: Jwk[] } | undefined, clock: Clock): TokenVerifier | undefined {
  if (keys === undefined) return undefined
  const source: KeySource = 'getKey' in keys ? keys : staticKeySource(keys)
  return createTokenVerifier({ keys: source, clock })
}
