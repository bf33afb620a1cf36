/**
 * `createHttpHandler`: the request pipeline every RON service runs, exposed three ways — a
 * `node:http` listener (the fast path), in-process `dispatch` (MemoryTransport) and a fetch-style
 * adapter. Order: corr-id → builtin endpoints → intake → route match → admission (per-IP,
 * service-wide, drain phase) → authentication → work queue → handler → reply; any failure becomes the SPEC error envelope.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Claims } from '../auth/types.js'
import { systemClock, type Clock } from '../clock.js'
import { InternalError, MethodNotAllowedError, NotFoundError, UnauthorizedError, toRonError, type RonError, RonUsageError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import { abortReason, onAbort } from '../abort.js'
import { Context, type ContextLimits } from './context.js'
import { corrIdFrom } from './corr-id.js'
import { Exchange } from './exchange.js'
import { fetchToRonRequest, ronResponseToFetch } from './fetch-adapter.js'
import { toRonResponse } from './memory-io.js'
import { NodeRequest, writeNode, type NodeWriteOptions } from './node-io.js'
import { Router, RouteConfigError, type CompiledRoute } from './router.js'
import { BodyShares } from './shares.js'
import type { Reply, RonRequest, RonResponse, Route } from './types.js'

/** Body caps, I/O timeouts and slow-client rules of the HTTP host (SPEC.md sections 3.2 and 4). */
export interface HttpLimits {
  /** Decoded-body cap for routes that declare no `bodyLimit`. @default 1 MiB */
  jsonBodyLimit?: number
  /** Decoded bytes may not exceed `ratio × encoded bytes + 64 KiB`. @default 10 */
  decompressionRatio?: number
  /** Absolute cap on any decoded (decompressed) body. @default 64 MiB */
  maxDecompressedBytes?: number
  /** Longest gap between request body chunks before the read fails with 408 RequestTimeout. @default 5000 */
  readTimeoutMs?: number
  /**
   * Minimum average rate of a request body, in bytes/s, over `rateWindowMs` of reading (the rule
   * applies once a body has been read that long; time the host paused the body is not counted).
   * Slower → 408 RequestTimeout, `details.reason: "min_rate"`. @default 1024
   */
  minBytesPerSec?: number
  /** Window of the minimum-rate rule. @default 10000 */
  rateWindowMs?: number
  /**
   * Whole-request deadline of a body, counted from its first read: `requestTimeoutMs` plus the
   * time its size (its `Content-Length`, else the route's cap; none when both are unbounded)
   * takes at `minBytesPerSec`. Later → 408 RequestTimeout, `details.reason: "deadline"`.
   * @default 30000
   */
  requestTimeoutMs?: number
  /**
   * Lingering request bodies — still arriving after a tenth of `rateWindowMs` of reading; a body
   * read at line speed never counts — one principal (token subject, a route's API-key client, or
   * the client address for anonymous requests) may have at once. More → 429 Busy,
   * `details.reason: "per_principal"`. @default 16
   */
  maxBodiesPerPrincipal?: number
  /** Longest a streamed reply may wait for `'drain'` before the response is destroyed. @default 5000 */
  writeTimeoutMs?: number
  /**
   * After an early reply (the body was not read to its end, e.g. 401 or 413 on an upload), how
   * long the socket keeps reading and discarding what the client is still sending, so the client
   * reads the reply instead of a connection reset. @default 5000
   */
  lingerMs?: number
}

/** Integration points through which the service host composes the handler. All optional. */
export interface HttpHooks {
  /** Built-in endpoints (/healthz, /readyz, /metrics, /version) answered before anything else; return undefined to fall through. */
  builtin?(path: string, req: RonRequest): Reply | Promise<Reply> | undefined
  /** Called for every non-builtin request before routing; throw a RonError (DrainingError) to refuse intake. */
  intake?(req: RonRequest): void
  /**
   * Admission of a request that matched `route` (per-IP and service-wide limits, a drain's
   * write phase); returns a release function, called once when the exchange finishes; throws
   * a RonError (BusyError, DrainingError) to refuse. Unmatched requests (404/405) are not admitted.
   */
  admit?(req: RonRequest, route: Route): () => void
  /** Verifies the bearer token for a route that declares `scope`; returns claims or throws Unauthorized/Forbidden. */
  authenticate?(req: RonRequest, route: Route): Promise<Claims>
  /**
   * Runs `job` through the named work queue (WorkPool.submit); must reject BusyError at once when
   * full. The handler passes no signal: it hears the request's abort itself (answering a request
   * gone while its job is queued, and skipping the job then), and the handler's `ctx.signal` is the
   * signal `job` receives (the worker's, as WorkPool gives it) linked with the request's on first read.
   * `signal`, when given, must abort the job's signal too, as WorkPool's does.
   */
  submit?(queue: string, job: (signal: AbortSignal) => Promise<void>, signal?: AbortSignal): Promise<void>
  /**
   * Called once when an in-process exchange (`dispatch`) is finished — its body consumed or
   * abandoned — with the request it served (for releasing what the caller tied to it).
   */
  finished?(req: RonRequest): void
  /**
   * Headers for the response to a request that carries `Origin` (CORS), on every path (`handle`
   * and `dispatch`); `undefined` for none. The reply's own headers win over these; a route with
   * `cors: false` gets none.
   */
  cors?(method: string, origin: string): Record<string, string> | undefined
  /** Called once per finished request for metrics (route = route.name ?? route.path, or 'builtin'/'unmatched'). */
  observe?(route: string, method: string, status: number, seconds: number): void
  /**
   * `observe` bound to one matched route (its label), asked once per route: requests that matched
   * it are counted through the returned function instead of `observe`. Optional; only used with `observe`.
   */
  observer?(route: string): (method: string, status: number, seconds: number) => void
  /**
   * Called with every error turned into an error response (for logs and metrics); never throws.
   * `route` is the matched route's metric label (`route.name ?? route.path`), or
   * `'builtin'`/`'unmatched'` when the request never reached a route.
   */
  onError?(err: RonError, corrId: string, req: RonRequest, route: string): void
}

/** Options of {@link createHttpHandler}. */
export interface HttpHandlerOptions {
  /** Service id (the token audience; informational here). */
  serviceId: string
  routes: Route[]
  limits?: HttpLimits
  hooks?: HttpHooks
  /** Time source for timeouts and durations. @default systemClock */
  clock?: Clock
  /** Where `io_timeouts_total{op}` is counted. @default none */
  metrics?: MetricsSink
  /**
   * Once aborted, every `node:http` response is sent with `Connection: close`, so a keep-alive
   * socket closes after its in-flight response (a drain). The handler adds one `abort` listener
   * to it, removed when it fires: a signal shared by many short-lived handlers keeps each one
   * reachable until it aborts (the service host gives each handler its own). @default never
   */
  closeConnections?: AbortSignal
}

/** The request handler of a service, callable three ways with identical behaviour. */
export interface HttpHandler {
  /**
   * In-process dispatch (MemoryTransport): same routing, limits, auth and validation as over HTTP.
   * Never rejects: failures are error responses. The caller must consume the response body or
   * call its iterator's `return()`: a streamed reply holds its admission and work-pool slot until then.
   */
  dispatch(req: RonRequest): Promise<RonResponse>
  /** `node:http` request listener: `http.createServer(h.handle)`. The fast path. */
  handle(req: IncomingMessage, res: ServerResponse): void
  /** Fetch-style hosts; converts only at this edge. */
  fetch(request: Request): Promise<Response>
  /**
   * Changes the slow-client rules for bodies read from now on (a config reload); the fields
   * given replace the current ones.
   * @throws {@link RonUsageError} `RON_INVALID_OPTION` for a non-positive value
   */
  setSlowClientLimits(limits: SlowClientLimits): void
}

/** The reloadable slow-client part of {@link HttpLimits}. */
export type SlowClientLimits = Pick<HttpLimits, 'minBytesPerSec' | 'rateWindowMs' | 'requestTimeoutMs' | 'maxBodiesPerPrincipal'>

/** Defaults of the slow-client rules (SPEC.md 4), for every service that sets none. */
export const DEFAULT_SLOW_CLIENT_LIMITS: Readonly<Required<SlowClientLimits>> = Object.freeze({
  minBytesPerSec: 1024,
  rateWindowMs: 10_000,
  requestTimeoutMs: 30_000,
  maxBodiesPerPrincipal: 16,
})

const MiB = 1024 * 1024

function positive(name: string, v: number | undefined, def: number): number {
  if (v === undefined) return def
  if (typeof v !== 'number' || !(v > 0)) throw new RonUsageError('RON_INVALID_OPTION', `limits.${name} must be a positive number, got ${String(v)}`)
  return v
}

function positiveInt(name: string, v: number | undefined, def: number): number {
  const n = positive(name, v, def)
  if (!Number.isInteger(n)) throw new RonUsageError('RON_INVALID_OPTION', `limits.${name} must be a positive integer, got ${String(v)}`)
  return n
}

/**
 * Builds the request handler of a service from its route table and the host's hooks.
 *
 * @throws {@link RouteConfigError} when a write route (POST/PUT/PATCH/DELETE) declares neither
 * `scope` nor `public: true`, a method+path is declared twice, or a path pattern is malformed.
 * @throws {@link RonUsageError} `RON_INVALID_OPTION` for a non-positive limit.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createHttpHandler } from '@ron/core'
 *
 * const h = createHttpHandler({
 *   serviceId: 'hello',
 *   routes: [{ method: 'GET', path: '/hello/:name', handler: (ctx) => ({ status: 200, json: { hello: ctx.params.name } }) }],
 * })
 * createServer(h.handle).listen(0)
 * ```
 */
export function createHttpHandler(opts: HttpHandlerOptions): HttpHandler {
  if (typeof opts.serviceId !== 'string' || opts.serviceId === '') throw new RouteConfigError('serviceId must be a non-empty string')
  const router = new Router(opts.routes)
  const hasHostRoutes = router.hasHostRoutes
  const l = opts.limits ?? {}
  const clock = opts.clock ?? systemClock
  const hooks: HttpHooks = opts.hooks ?? {}
  const jsonBodyLimit = positive('jsonBodyLimit', l.jsonBodyLimit, MiB)
  const d = DEFAULT_SLOW_CLIENT_LIMITS
  const ctxLimits: ContextLimits = {
    ratio: positive('decompressionRatio', l.decompressionRatio, 10),
    maxDecoded: positive('maxDecompressedBytes', l.maxDecompressedBytes, 64 * MiB),
    readTimeoutMs: positive('readTimeoutMs', l.readTimeoutMs, 5000),
    clock,
    metrics: opts.metrics,
    pace: {
      minBytesPerSec: positive('minBytesPerSec', l.minBytesPerSec, d.minBytesPerSec),
      rateWindowMs: positive('rateWindowMs', l.rateWindowMs, d.rateWindowMs),
      requestTimeoutMs: positive('requestTimeoutMs', l.requestTimeoutMs, d.requestTimeoutMs),
    },
    shares: new BodyShares(positiveInt('maxBodiesPerPrincipal', l.maxBodiesPerPrincipal, d.maxBodiesPerPrincipal)),
  }
  const setSlowClientLimits = (next: SlowClientLimits): void => {
    // Validate everything before changing anything; a body already being read keeps its pace.
    const p = ctxLimits.pace
    const pace = {
      minBytesPerSec: positive('minBytesPerSec', next.minBytesPerSec, p.minBytesPerSec),
      rateWindowMs: positive('rateWindowMs', next.rateWindowMs, p.rateWindowMs),
      requestTimeoutMs: positive('requestTimeoutMs', next.requestTimeoutMs, p.requestTimeoutMs),
    }
    const share = positiveInt('maxBodiesPerPrincipal', next.maxBodiesPerPrincipal, ctxLimits.shares.max)
    ctxLimits.pace = pace
    ctxLimits.shares.max = share
  }
  // Read once: whether metrics timing is needed on the hot path, and whether routes get bound observers.
  const observing = hooks.observe !== undefined
  const bindObserver = observing && hooks.observer !== undefined

  const reportError = (err: RonError, ex: Exchange): void => {
    if (hooks.onError === undefined) return
    try {
      hooks.onError(err, ex.corrId, ex.req, ex.label)
    } catch {
      // onError must never throw; if it does, the response still goes out
    }
  }

  const onFinish = (ex: Exchange): void => {
    if (hooks.observe === undefined) return
    try {
      const observer = ex.observer
      if (observer !== undefined) observer(ex.req.method, ex.status, (clock.now() - ex.startMs) / 1000)
      else hooks.observe(ex.label, ex.req.method, ex.status, (clock.now() - ex.startMs) / 1000)
    } catch {
      // metrics must never break a response
    }
  }
  // In-process exchanges also tell the host they finished (it releases what it tied to the request);
  // requests from node:http were made here, so nobody else holds anything for them.
  const onFinishDispatched = (ex: Exchange): void => {
    try {
      hooks.finished?.(ex.req)
    } catch {
      // bookkeeping must never break a response
    }
    onFinish(ex)
  }

  const nodeWrite: NodeWriteOptions = {
    writeTimeoutMs: positive('writeTimeoutMs', l.writeTimeoutMs, 5000),
    lingerMs: positive('lingerMs', l.lingerMs, 5000),
    closing: opts.closeConnections?.aborted === true,
    clock,
    metrics: opts.metrics,
    onLateError(ex, e) {
      const err = ex.setError(e)
      reportError(err, ex)
    },
  }

  opts.closeConnections?.addEventListener(
    'abort',
    () => {
      nodeWrite.closing = true
    },
    { once: true },
  )

  /**
   * Runs the route's handler inside a work-pool job that keeps its slot until the body is finished.
   * No signal is made for it: while the job waits in the queue, the request's abort is heard
   * through its `onAbort` hook (a `close` listener on `node:http`), which answers at once and
   * leaves the job to be skipped when its turn comes; once it runs, `ctx.signal` links the
   * request's signal with the worker's only when the handler reads it.
   */
  function runQueued(ex: Exchange, queue: string, compiled: CompiledRoute, ctx: Context): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      let started = false
      let gone = false
      const req = ex.req
      const onGone = (reason: Error): void => {
        gone = true
        reject(reason)
      }
      const unlisten = req.onAbort !== undefined ? req.onAbort(onGone) : onAbort(req.signal, () => onGone(abortReason(req.signal)))
      const job = async (workerSignal: AbortSignal | undefined): Promise<void> => {
        started = true
        unlisten()
        if (gone) return
        ctx.startJob(workerSignal)
        try {
          let reply: Reply
          try {
            reply = await compiled.handler.call(compiled.route, ctx)
          } catch (e) {
            reject(e instanceof Error ? e : toRonError(e))
            return
          }
          const done = new Promise<void>((r) => {
            ex.jobDone = r
          })
          resolve(reply)
          await done
        } finally {
          ctx.endJob()
        }
      }
      hooks.submit!(queue, job).then(
        () => {
          if (!started) reject(new InternalError(`work queue '${queue}' finished without running the job`))
        },
        (e: unknown) => {
          unlisten()
          reject(e instanceof Error ? e : new InternalError('work queue rejected the job', { cause: e }))
        },
      )
    })
  }

  const fail = (ex: Exchange, e: unknown): void => {
    reportError(ex.setError(e), ex)
  }
  const settle = (ex: Exchange, reply: Reply): void => {
    try {
      ex.setReply(reply)
    } catch (e) {
      fail(ex, e)
    }
  }

  /**
   * Adopts a reply, or a promise of one. Returns a promise only when the reply is still pending,
   * so a synchronous handler is answered within the same turn (no promise, no microtask hop).
   * The promise never rejects.
   */
  function adopt(ex: Exchange, reply: Reply | PromiseLike<Reply>): Promise<void> | undefined {
    if (typeof (reply as Partial<PromiseLike<Reply>>).then !== 'function') {
      ex.setReply(reply as Reply)
      return undefined
    }
    return Promise.resolve(reply).then(
      (r) => settle(ex, r),
      (e: unknown) => fail(ex, e),
    )
  }

  /** Runs a matched route; synchronous unless the route needs a token, a queue or an async handler. */
  function route(ex: Exchange, m: { route: CompiledRoute; params: Record<string, string> }, rawQuery: string): Promise<void> | undefined {
    const compiled = m.route
    const r = compiled.route
    ex.label = compiled.label
    if (bindObserver) ex.observer = compiled.observer ??= hooks.observer!(compiled.label)
    if (hooks.admit !== undefined) ex.release = hooks.admit(ex.req, r)
    const ctx = new Context(ex.req, m.params, rawQuery, ex.corrId, compiled.bodyLimit ?? jsonBodyLimit, ctxLimits)
    ex.bodyOwner = ctx
    if (compiled.scope !== undefined) return routeAuthenticated(ex, compiled, ctx)
    const queue = compiled.queue
    if (queue !== undefined && hooks.submit !== undefined) return adopt(ex, runQueued(ex, queue, compiled, ctx))
    // Called on the route, as a method (a handler may be one that reads `this`).
    return adopt(ex, compiled.handler.call(r, ctx))
  }

  /**
   * A route that declares a scope: authenticate, then run the handler. Never rejects. A refusal
   * is answered without a JavaScript `throw` (V8 computes a message location for every throw,
   * thousands of instructions through optimised frames): the verifier's rejection goes straight
   * to the error reply.
   */
  function routeAuthenticated(ex: Exchange, compiled: CompiledRoute, ctx: Context): Promise<void> {
    if (hooks.authenticate === undefined) {
      fail(ex, new UnauthorizedError('this route requires a token but no verifier is configured', { details: { reason: 'no_verifier' } }))
      return Promise.resolve()
    }
    let auth: Promise<Claims>
    try {
      auth = hooks.authenticate(ex.req, compiled.route)
    } catch (e) {
      fail(ex, e)
      return Promise.resolve()
    }
    return auth.then(
      (claims) => {
        ctx.auth = claims
        return runAuthenticated(ex, compiled, ctx)
      },
      (e: unknown) => fail(ex, e),
    )
  }

  async function runAuthenticated(ex: Exchange, compiled: CompiledRoute, ctx: Context): Promise<void> {
    try {
      const queue = compiled.queue
      const reply = queue === undefined || hooks.submit === undefined ? await compiled.handler.call(compiled.route, ctx) : await runQueued(ex, queue, compiled, ctx)
      ex.setReply(reply)
    } catch (e) {
      fail(ex, e)
    }
  }

  /**
   * The pipeline up to (not including) writing. Returns undefined when the outcome is already set
   * (the common case: a synchronous handler or an early refusal), else a promise that never rejects.
   */
  function run(ex: Exchange): Promise<void> | undefined {
    try {
      const req = ex.req
      const url = req.url
      // A static route's path has no '?': a URL that is one is its own path, with no query to
      // look for (most requests; `indexOf` was ~0.1k instructions). Built-ins still come first.
      const direct = hasHostRoutes ? undefined : router.matchStatic(req.method, url)
      const q = direct === undefined ? url.indexOf('?') : -1
      const path = q === -1 ? url : url.slice(0, q)
      // A host that has routes of its own (a gateway's site origins) sees only those: no built-ins.
      const byHost = hasHostRoutes ? router.matchHost(req.method, headerValue(req.headers.host), path) : undefined
      if (hooks.builtin !== undefined && byHost === undefined) {
        const b = hooks.builtin(path, req)
        if (b !== undefined) {
          ex.label = 'builtin'
          return adopt(ex, b)
        }
      }
      hooks.intake?.(req)
      // Without a query the path is the URL, already tried against the static paths above.
      const m = direct ?? byHost ?? (hasHostRoutes || q !== -1 ? router.match(req.method, path) : router.matchPatterns(req.method, path))
      if (m.kind === 'found') {
        if (m.route.noCors) ex.cors = undefined
        return route(ex, m, q === -1 ? '' : url.slice(q + 1))
      }
      // Answered without a throw (see routeAuthenticated).
      if (m.kind === 'method') fail(ex, new MethodNotAllowedError(`method ${req.method} is not allowed on this path`, { details: { allow: m.allow } }))
      else fail(ex, new NotFoundError('no route matches this path', { details: { path } }))
      return undefined
    } catch (e) {
      fail(ex, e)
      return undefined
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const h = req.headers
    const ex = new Exchange(new NodeRequest(req, res), corrIdFrom(h['x-corr-id']), observing ? clock.now() : 0, onFinish)
    if (hooks.cors !== undefined) {
      const origin = h.origin
      if (origin !== undefined) ex.cors = hooks.cors(req.method ?? 'GET', origin)
    }
    const pending = run(ex)
    if (pending === undefined) writeNode(ex, req, res, nodeWrite)
    else void pending.then(() => writeNode(ex, req, res, nodeWrite))
  }

  async function dispatch(req: RonRequest): Promise<RonResponse> {
    const ex = new Exchange(req, corrIdFrom(req.headers['x-corr-id']), observing ? clock.now() : 0, hooks.finished === undefined ? onFinish : onFinishDispatched)
    if (hooks.cors !== undefined) {
      const origin = headerValue(req.headers.origin)
      if (origin !== undefined) ex.cors = hooks.cors(req.method, origin)
    }
    const pending = run(ex)
    if (pending !== undefined) await pending
    return toRonResponse(ex)
  }

  async function fetchHandler(request: Request): Promise<Response> {
    return ronResponseToFetch(await dispatch(fetchToRonRequest(request)))
  }

  return { dispatch, handle, fetch: fetchHandler, setSlowClientLimits }
}

/** The first value of a header that may arrive repeated. */
function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}
