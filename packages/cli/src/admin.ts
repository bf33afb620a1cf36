/**
 * The admin listener of a node: merged `/metrics` of every hosted service, aggregated `/healthz`
 * and `/readyz`, `/status` (JSON) and `/version`.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import { mergeMetrics, systemClock, type Clock, type RonService } from '@ron/core'

/** A hosted service as the admin listener sees it. */
export interface HostedService {
  name: string
  url: string
  service: RonService
}

/** Options of {@link createAdminHandler}. */
export interface AdminHandlerOptions {
  /** The hosted services (read on every request, so services added later show up). */
  services: () => readonly HostedService[]
  /** ron-node's version. */
  version: string
  /** When the node started (clock ms). */
  startedAt: number
  /** False once shutdown began: `/readyz` answers 503 from then on. */
  accepting: () => boolean
  /** Data directory, reported by `/status`. */
  dataDir: string
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
  queues: QueueStatus[]
  tasks: { name: string; count: number; criticality: string }[]
}

/** The `/status` document. */
export interface NodeStatus {
  version: string
  ready: boolean
  uptimeSec: number
  dataDir: string
  services: Record<string, ServiceStatus>
}

async function queueDepths(svc: RonService): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  const metric = svc.metrics.getSingleMetric('queue_depth')
  if (metric === undefined) return out
  const data = await metric.get()
  for (const v of data.values) {
    const q = v.labels['queue']
    if (typeof q === 'string') out.set(q, v.value)
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
    const depths = await queueDepths(h.service)
    ready &&= health.ready
    services[h.name] = {
      url: h.url,
      version: h.service.version,
      live: health.live,
      ready: health.ready,
      writeReady: health.writeReady,
      missing: health.missing,
      ...(health.reason === undefined ? {} : { reason: health.reason }),
      queues: topo.channels.map((c) => ({ name: c.name, kind: c.kind, capacity: c.capacity, overflow: c.overflow, depth: depths.get(c.name) ?? 0 })),
      tasks: topo.tasks.map((t) => ({ name: t.name, count: t.count, criticality: t.criticality })),
    }
  }
  return { version: options.version, ready, uptimeSec: Math.max(0, Math.round((clock.now() - options.startedAt) / 1000)), dataDir: options.dataDir, services }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers })
  res.end(text)
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { error: { code, message, retryable: false, corr_id: '', details: {} } })
}

/**
 * Creates the admin request listener (`http.createServer(handler)`): `GET /metrics` (the merged
 * Prometheus text of every service, each with its `service` label), `GET /healthz` (200 when every
 * service is live), `GET /readyz` (200 when every service is ready, else 503 with `Retry-After`
 * and the names of what is missing), `GET /status` and `GET /version`.
 */
export function createAdminHandler(options: AdminHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(res, 405, 'MethodNotAllowed', 'admin routes are GET only')
    switch (path) {
      case '/metrics': {
        const text = await mergeMetrics(options.services().map((s) => s.service.metrics))
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) })
        res.end(req.method === 'HEAD' ? undefined : text)
        return
      }
      case '/healthz': {
        const services = Object.fromEntries(options.services().map((s) => [s.name, s.service.health()]))
        const live = Object.values(services).every((h) => h.live)
        return sendJson(res, live ? 200 : 503, { live, services })
      }
      case '/readyz': {
        const missing: string[] = []
        let writeReady = options.accepting()
        if (!options.accepting()) missing.push('node:draining')
        for (const s of options.services()) {
          const h = s.service.health()
          if (!h.ready) missing.push(...(h.missing.length > 0 ? h.missing.map((m) => `${s.name}:${m}`) : [s.name]))
          writeReady &&= h.writeReady
        }
        if (missing.length === 0) return sendJson(res, 200, { ready: true, writeReady })
        return sendJson(res, 503, { ready: false, writeReady: false, missing }, { 'retry-after': '1' })
      }
      case '/status':
        return sendJson(res, 200, await nodeStatus(options))
      case '/version':
        return sendJson(res, 200, { name: 'ron-node', version: options.version })
      default:
        return sendError(res, 404, 'NotFound', `no admin route ${path ?? ''}`)
    }
  }
  return (req, res) => {
    route(req, res).catch(() => {
      if (!res.headersSent) sendError(res, 500, 'Internal', 'internal error')
      else res.destroy()
    })
  }
}
