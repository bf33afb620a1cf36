/**
 * The admin listener of a node, on core's HTTP handler (the SPEC error envelope, `X-Corr-ID`,
 * `Allow` on 405, Prometheus content type): merged `/metrics` of every hosted service, aggregated
 * `/healthz` and `/readyz`, `/status` (JSON), `/version`, `/keys` (the node's issuer keys, JWKS)
 * `POST /admin/reload` and `POST /admin/peers/forget` (scope `node:admin`) and the dashboard at
 * `/`. Every request whose `Host` is not one of the node's own names is refused first (403
 * `Forbidden`, `details.reason: "host_not_allowed"`): see `host-check.ts`.
 *
 * @module
 */

import {
  ForbiddenError,
  METRICS_CONTENT_TYPE,
  MalformedError,
  NotReadyError,
  UnauthorizedError,
  bearerToken,
  checkCaveats,
  createHttpHandler,
  createServiceMetrics,
  mergeExpositions,
  metricSamples,
  processMetrics,
  systemClock,
  type Clock,
  type HttpHandler,
  type Jwk,
  type Reply,
  type RonRequest,
  type RonService,
  type Route,
  type TokenVerifier,
} from '@ron/core'
import { DASHBOARD_HTML } from './dashboard.js'
import { normalizeUrl } from './peers.js'

/** A hosted service as the admin listener sees it. */
export interface HostedService {
  name: string
  /** The URL the service is reachable at (advertised). */
  url: string
  service: RonService
}

/** Options of {@link createAdminHandler}. */
export interface AdminHandlerOptions {
  /** This node's id. */
  nodeId: string
  /** This node's public node key, base64url raw Ed25519 (`/status`'s `nodeKey`). */
  nodeKey: string
  /** The hosted services (read on every request, so services attached later show up). */
  services: () => readonly HostedService[]
  /** Services this node uses on another node (`passport.url`, `registry.url`): name → URL, listed with `remote: true`. */
  remote?: () => Readonly<Record<string, string>>
  /** Services whose listener is bound but which are not attached yet: name → URL. */
  pending?: () => Readonly<Record<string, string>>
  /** ron-node's version. */
  version: string
  /** When the node started (clock ms). */
  startedAt: number
  /** False once shutdown began: `/readyz` answers 503 from then on. */
  accepting: () => boolean
  /** The node's public issuer keys (`GET /keys`). */
  keys: () => readonly Jwk[]
  /** Verifies tokens for `node:admin` (audience `node`). */
  verifier?: TokenVerifier
  /** Runs a reload (`POST /admin/reload`) with the request's JSON body (a partial config, or `{}`). */
  reload?: (partial: unknown) => Promise<unknown>
  /** Peers as the node sees them, for `/status`. */
  peers?: () => unknown
  /** The etcd connection (SPEC §6c): its status in `/status`, its reachability in `/readyz`, its metrics in `/metrics`. */
  coordination?: { status(): unknown; readonly reachable: boolean; metrics: { text(): Promise<string> } }
  /** Forgets a peer's pin (`POST /admin/peers/forget`); false when it had none. */
  forgetPeer?: (admin: string) => Promise<boolean>
  /** Which `Host` headers name this node (see `adminHosts`). @default any */
  allowedHosts?: (host: string | undefined) => boolean
  /** Extra routes (the dashboard). */
  routes?: Route[]
  /** @default systemClock */
  clock?: Clock
}

/** One queue of a service in `/status`. */
export interface QueueStatus {
  name: string
  kind: string
  capacity: number
  overflow: string
  /** Current depth from the service's `queue_depth{queue}` gauge (0 when not reported). */
  depth: number
  /** Items dropped or shed so far (`queue_dropped_total{queue}`). */
  dropped: number
}

/** One service in `/status`. */
export interface ServiceStatus {
  url: string
  version: string
  live: boolean
  ready: boolean
  writeReady: boolean
  missing: string[]
  reason?: string
  paths?: Record<string, boolean>
  queues: QueueStatus[]
  tasks: { name: string; count: number; criticality: string }[]
  /** True for a service this node uses on another node (`passport.url`, `registry.url`); not part of this node's readiness. */
  remote?: boolean
}

/**
 * The `/status` document. It never states the data directory (a peer or a page has no business
 * knowing where the node keeps its keys).
 */
export interface NodeStatus {
  name: 'ron-node'
  nodeId: string
  /** The node's public key, base64url raw Ed25519 (amnesia: an ephemeral one); peers pin it. */
  nodeKey: string
  version: string
  ready: boolean
  uptimeSec: number
  services: Record<string, ServiceStatus>
  peers?: unknown
  /** The etcd connection, when the cluster coordinates on etcd. */
  etcd?: unknown
}

/** Sums the samples of `name` in a service's exposition text by the value of `label`. */
function counterValues(text: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const v of metricSamples(text, name)) {
    const q = v.labels[label]
    if (q !== undefined) out.set(q, (out.get(q) ?? 0) + v.value)
  }
  return out
}

/** Builds the `/status` document. */
export async function nodeStatus(options: AdminHandlerOptions): Promise<NodeStatus> {
  const clock = options.clock ?? systemClock
  const services: Record<string, ServiceStatus> = {}
  let ready = options.accepting()
  for (const h of options.services()) {
    const health = h.service.health()
    const topo = h.service.describe()
    const text = await h.service.metricsText()
    const depths = counterValues(text, 'queue_depth', 'queue')
    const dropped = counterValues(text, 'queue_dropped_total', 'queue')
    ready &&= health.ready
    services[h.name] = {
      url: h.url,
      version: h.service.version,
      live: health.live,
      ready: health.ready,
      writeReady: health.writeReady,
      missing: health.missing,
      ...(health.reason === undefined ? {} : { reason: health.reason }),
      ...((health as { paths?: Record<string, boolean> }).paths === undefined ? {} : { paths: (health as { paths?: Record<string, boolean> }).paths! }),
      queues: topo.channels.map((c) => ({ name: c.name, kind: c.kind, capacity: c.capacity, overflow: c.overflow, depth: depths.get(c.name) ?? 0, dropped: dropped.get(c.name) ?? 0 })),
      tasks: topo.tasks.map((t) => ({ name: t.name, count: t.count, criticality: t.criticality })),
    }
  }
  for (const [name, url] of Object.entries(options.remote?.() ?? {})) {
    if (services[name] !== undefined) continue
    services[name] = { url, version: options.version, live: true, ready: true, writeReady: true, missing: [], queues: [], tasks: [], remote: true }
  }
  for (const [name, url] of Object.entries(options.pending?.() ?? {})) {
    if (services[name] !== undefined) continue
    ready = false
    services[name] = { url, version: options.version, live: true, ready: false, writeReady: false, missing: ['starting'], queues: [], tasks: [] }
  }
  const peers = options.peers?.()
  return {
    name: 'ron-node',
    nodeId: options.nodeId,
    nodeKey: options.nodeKey,
    version: options.version,
    ready,
    uptimeSec: Math.max(0, Math.round((clock.now() - options.startedAt) / 1000)),
    services,
    ...(peers === undefined ? {} : { peers }),
    ...(options.coordination === undefined ? {} : { etcd: options.coordination.status() }),
  }
}

/**
 * Creates the admin handler: `GET /metrics` (the merged Prometheus text of every service and of
 * the admin listener itself, each with its `service` label), `GET /healthz` (200 when every
 * service is live), `GET /readyz` (200 when every service is ready, else 503 with `Retry-After`
 * naming what is missing), `GET /status`, `GET /version`, `GET /keys` and `POST /admin/reload`.
 */
export function createAdminHandler(options: AdminHandlerOptions): HttpHandler {
  const clock = options.clock ?? systemClock
  const metrics = createServiceMetrics({ service: 'node' })
  const reloads = metrics.counter('node_reloads_total', 'Reloads requested through SIGHUP or POST /admin/reload, by outcome.', ['outcome'])
  reloads.inc({ outcome: 'ok' }, 0)
  reloads.inc({ outcome: 'error' }, 0)

  const allowed = options.allowedHosts
  const builtin = (path: string, req: RonRequest): Reply | Promise<Reply> | undefined => {
    // Runs first for every request (core calls builtin before routing): a foreign Host is refused
    // before anything is read or done.
    if (allowed !== undefined) {
      const host = req.headers.host
      if (!allowed(typeof host === 'string' ? host : undefined)) {
        throw new ForbiddenError('this admin listener answers only its own host names (a DNS-rebinding page is refused)', { details: { reason: 'host_not_allowed' } })
      }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined
    switch (path) {
      case '/metrics':
        return (async () => {
          // The process metrics (event-loop lag, heap, GC, fds, RSS) once per process, then the node's and each service's.
          const texts = await Promise.all([processMetrics().text(), metrics.text(), ...(options.coordination === undefined ? [] : [options.coordination.metrics.text()]), ...options.services().map((s) => s.service.metricsText())])
          return { status: 200, headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' }, body: mergeExpositions(texts) }
        })()
      case '/healthz': {
        const services = Object.fromEntries(options.services().map((s) => [s.name, s.service.health()]))
        const live = Object.values(services).every((h) => h.live)
        return { status: live ? 200 : 503, headers: { 'cache-control': 'no-store' }, json: { live, services } }
      }
      case '/readyz': {
        const missing: string[] = []
        let writeReady = options.accepting()
        if (!options.accepting()) missing.push('node:draining')
        // Without an etcd quorum the writes that need it answer 503; reads of what is known go on.
        if (options.coordination !== undefined && !options.coordination.reachable) {
          missing.push('etcd:unreachable')
          writeReady = false
        }
        for (const s of options.services()) {
          const h = s.service.health()
          if (!h.ready) missing.push(...(h.missing.length > 0 ? h.missing.map((m) => `${s.name}:${m}`) : [s.name]))
          writeReady &&= h.writeReady
        }
        for (const name of Object.keys(options.pending?.() ?? {})) missing.push(`${name}:starting`)
        if (missing.length === 0) return { status: 200, headers: { 'cache-control': 'no-store' }, json: { ready: true, writeReady } }
        return { status: 503, headers: { 'retry-after': '1', 'cache-control': 'no-store' }, json: { ready: false, writeReady: false, missing } }
      }
      case '/version':
        return { status: 200, json: { service: 'node', name: 'ron-node', version: options.version, node: process.version } }
      default:
        return undefined
    }
  }

  const routes: Route[] = [
    {
      method: 'GET',
      path: '/',
      name: 'dashboard',
      handler: () => ({
        status: 200,
        headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src *; img-src 'self' data:" },
        body: DASHBOARD_HTML,
      }),
    },
    { method: 'GET', path: '/status', handler: async () => ({ status: 200, headers: { 'cache-control': 'no-store' }, json: await nodeStatus(options) }) },
    { method: 'GET', path: '/keys', handler: () => ({ status: 200, headers: { 'cache-control': 'max-age=60' }, json: { keys: options.keys() } }) },
    {
      method: 'POST',
      path: '/admin/reload',
      scope: 'node:admin',
      handler: async (ctx) => {
        if (options.reload === undefined) throw new NotReadyError('reload is not available yet', { retryAfterMs: 1000 })
        const raw = await ctx.bytes()
        let partial: unknown = {}
        if (raw.byteLength > 0) {
          try {
            partial = JSON.parse(Buffer.from(raw).toString('utf8'))
          } catch (e) {
            throw new MalformedError('the reload body must be JSON (a partial node config) or empty', { cause: e })
          }
        }
        try {
          const result = await options.reload(partial)
          reloads.inc({ outcome: 'ok' })
          return { status: 200, json: result }
        } catch (e) {
          reloads.inc({ outcome: 'error' })
          throw e
        }
      },
    },
    {
      method: 'POST',
      path: '/admin/peers/forget',
      scope: 'node:admin',
      handler: async (ctx) => {
        if (options.forgetPeer === undefined) throw new NotReadyError('peers are not available yet', { retryAfterMs: 1000 })
        const raw = await ctx.bytes()
        let admin: unknown
        try {
          admin = (JSON.parse(Buffer.from(raw).toString('utf8')) as { admin?: unknown }).admin
        } catch (e) {
          throw new MalformedError('the body must be JSON: {"admin":"<the peer\'s admin URL>"}', { cause: e, details: { field: 'admin' } })
        }
        let url: string
        try {
          if (typeof admin !== 'string') throw new Error('not a string')
          url = normalizeUrl(admin)
        } catch (e) {
          throw new MalformedError('admin must be the peer\'s admin URL', { cause: e, details: { field: 'admin' } })
        }
        return { status: 200, json: { admin: url, forgotten: await options.forgetPeer(url) } }
      },
    },
    ...(options.routes ?? []),
  ]

  return createHttpHandler({
    serviceId: 'node',
    routes,
    clock,
    metrics: metrics.sink,
    hooks: {
      builtin,
      authenticate: async (req, route) => {
        if (options.verifier === undefined) throw new UnauthorizedError('this node verifies no tokens', { details: { reason: 'no_verifier' } })
        const token = bearerToken(req.headers)
        if (token === undefined) throw new UnauthorizedError('missing bearer token', { details: { reason: 'missing' } })
        const claims = await options.verifier.verify(token, { audience: 'node', ...(route.scope === undefined ? {} : { scope: route.scope }) })
        const q = req.url.indexOf('?')
        checkCaveats(claims, { method: req.method, path: q === -1 ? req.url : req.url.slice(0, q) })
        return claims
      },
      observe: (route, method, status, seconds) => metrics.observeHttp(route, method, status, seconds),
    },
  })
}

/**
 * The handler of a listener whose service is not attached yet: every request gets 503
 * `NotReady` with `Retry-After: 1`, in the SPEC envelope with a correlation id.
 */
export function notReadyHandler(what: string): HttpHandler {
  return createHttpHandler({
    serviceId: what,
    routes: [],
    hooks: {
      intake: () => {
        throw new NotReadyError(`${what} is starting`, { retryAfterMs: 1000 })
      },
    },
  })
}
