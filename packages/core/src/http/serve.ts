/**
 * `serve()`: listens with a handler on `node:http` with the host's socket policy — header read
 * timeout, idle timeout, a per-IP connection cap, Node's own refusals (431, 400, 408) in the SPEC
 * error envelope — and returns a server whose idempotent `close()` stops intake, drains in-flight
 * requests until a deadline, then destroys stragglers. Slow request bodies are the handler's
 * (gap timeout, minimum rate, whole-request deadline: see `HttpLimits`).
 *
 * @module
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { abortReason, systemClock, type Clock, type TimerHandle } from '../clock.js'
import { BusyError, envelopeJson } from '../errors.js'
import { answerClientError } from './client-error.js'
import { generateCorrId } from './corr-id.js'
import type { ListenerPolicy } from './listener-policy.js'

const SWEEP_MS = 20

/** Options of {@link serve}. */
export interface ServeOptions {
  /** TCP port; 0 picks a free one. @default 0 */
  port?: number
  /** Interface to bind. @default '127.0.0.1' */
  host?: string
  /**
   * Time allowed to receive the request headers (`headersTimeout`). Bodies are guarded per chunk
   * by the handler's `readTimeoutMs` instead, so long streaming uploads are not cut off.
   * @default the target's `listener.readTimeoutMs`, else 5000
   */
  readTimeoutMs?: number
  /** Keep-alive and socket inactivity timeout: an idle socket is closed after this long. @default the target's `listener.idleTimeoutMs`, else 60000 */
  idleTimeoutMs?: number
  /** Largest request head (request line and headers) in bytes; more → 431 with the error envelope. @default node's `http.maxHeaderSize` (16 KiB) */
  maxHeaderSize?: number
  /**
   * Open sockets allowed per remote address. A socket over the cap is answered `429 Busy` with
   * `details.reason: "per_ip"`, `Retry-After` and the error envelope on its first request, then
   * closed (SPEC.md 4); it never reaches the handler. @default the target's `listener.maxConnectionsPerIp`, else 256
   */
  maxConnectionsPerIp?: number
  /**
   * Open sockets allowed in all, from every address together. A socket over the cap is answered
   * `429 Busy` with `details.reason: "max_connections"` on its first request, then closed.
   * @default the target's `listener.maxConnections`, else 10000
   */
  maxConnections?: number
  /** How long `close()` lets in-flight requests finish before destroying their sockets. @default 3000 */
  drainDeadlineMs?: number
  /** Aborting closes the server (like calling `close()`). */
  signal?: AbortSignal
  /** Time source for the drain deadline. @default systemClock */
  clock?: Clock
}

/** A listening server returned by {@link serve}. */
export interface RonServer {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly port: number
  readonly host: string
  /** The underlying `node:http` server. */
  readonly server: Server
  /** Sockets currently open. */
  readonly connections: number
  /**
   * Follows a service's drain: once `signal` aborts (a service's `listener.intakeStopped`),
   * idle keep-alive sockets are closed and every later response closes its socket after it is
   * sent. `serve()` does this by itself for a target that has a `listener` policy; a host that
   * swaps handlers on one server (ron-node) calls it when it attaches a service.
   */
  followDrain(signal: AbortSignal): void
  /**
   * Applies a service's listener policy from now on, as `serve(service)` would have at start: the
   * header and idle timeouts, the per-IP and total connection caps (for sockets accepted from now
   * on) and its intake stop ({@link RonServer.followDrain}). For a host that binds the port before
   * the service exists and attaches it later (ron-node). Options given to `serve()` still win.
   */
  adopt(policy: ListenerPolicy): void
  /**
   * Stops accepting, closes idle keep-alive sockets, lets in-flight requests finish until
   * `drainDeadlineMs`, then destroys the remaining sockets. Idempotent: a second call joins the first.
   */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Starts an HTTP server for `target` (an {@link HttpHandler} or anything with `handle(req, res)`).
 *
 * @throws Error with `code: 'EADDRINUSE'` (message naming the port) when the port is taken; other
 * listen errors are rethrown with their code; the signal's reason when `signal` is already aborted.
 *
 * @example
 * ```ts
 * const h = createHttpHandler({ serviceId: 'hello', routes })
 * const srv = await serve(h, { port: 0 })
 * console.log(srv.url)
 * await srv.close()
 * ```
 */
export async function serve(target: { handle(req: IncomingMessage, res: ServerResponse): void; readonly listener?: ListenerPolicy | undefined }, options: ServeOptions = {}): Promise<RonServer> {
  const policy = target.listener
  const host = options.host ?? '127.0.0.1'
  let readTimeoutMs = options.readTimeoutMs ?? policy?.readTimeoutMs ?? 5000
  let idleTimeoutMs = options.idleTimeoutMs ?? policy?.idleTimeoutMs ?? 60_000
  let maxPerIp = options.maxConnectionsPerIp ?? policy?.maxConnectionsPerIp ?? 256
  let maxConnections = options.maxConnections ?? policy?.maxConnections ?? 10_000
  const drainDeadlineMs = options.drainDeadlineMs ?? 3000
  const clock = options.clock ?? systemClock
  const signal = options.signal
  if (signal?.aborted) throw abortReason(signal)

  // Sockets over a cap: answered 429 on their first request, never handled.
  const overCap = new WeakMap<Socket, 'per_ip' | 'max_connections'>()
  // Sockets in overCap not yet closed: while there are none (the common case), a request skips
  // the WeakMap lookup.
  let overCapOpen = 0
  const answerOverCap = (res: ServerResponse, reason: 'per_ip' | 'max_connections'): void => {
    const corrId = generateCorrId()
    const err =
      reason === 'per_ip'
        ? new BusyError(`too many connections from this address (cap ${maxPerIp})`, { details: { reason, limit: maxPerIp }, retryAfterMs: 1000 })
        : new BusyError(`too many connections (cap ${maxConnections})`, { details: { reason, limit: maxConnections }, retryAfterMs: 1000 })
    const body = envelopeJson(err, corrId)
    res.shouldKeepAlive = false
    res.writeHead(429, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'retry-after': '1',
      'x-corr-id': corrId,
      connection: 'close',
    })
    res.end(body)
  }
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    // Node's keep-alive timer is off (keepAliveTimeout 0, the idle sweep below does its work),
    // but clients still get its `Keep-Alive: timeout=<s>` hint, so that node's agent and undici
    // drop an idle socket before the sweep does instead of racing it: node writes the header from
    // this response field, which it set from the server's keepAliveTimeout just before (pinned by
    // test/http/serve.test.ts).
    ;(res as ServerResponse & { _keepAliveTimeout: number })._keepAliveTimeout = idleTimeoutMs
    const over = overCapOpen === 0 ? undefined : overCap.get(req.socket)
    if (over !== undefined) answerOverCap(res, over)
    else target.handle(req, res)
  }
  const server = createServer(
    {
      headersTimeout: readTimeoutMs,
      // 0: a request may stream for as long as its chunks keep coming (checked per chunk by the handler).
      requestTimeout: 0,
      // 0: no keep-alive timer per response; the idle sweep below closes idle sockets instead
      // (`handle` still has node send the Keep-Alive hint).
      keepAliveTimeout: 0,
      // headersTimeout is enforced by this periodic check; keep it proportionate to the timeout.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(readTimeoutMs / 4))),
      ...(options.maxHeaderSize === undefined ? {} : { maxHeaderSize: options.maxHeaderSize }),
    },
    handle,
  )
  // No server.setTimeout: Node's socket timeout re-arms a timer at every read, every write and
  // every request (about 2,000 instructions per request, 3 % of a hello). Socket inactivity is
  // swept below instead, at no cost per request.
  const clientErrorOptions = options.maxHeaderSize === undefined ? {} : { maxHeaderSize: options.maxHeaderSize }
  server.on('clientError', (err: Error, socket) => answerClientError(err, socket, clientErrorOptions))

  const perIp = new Map<string, number>()
  /**
   * Socket inactivity (SPEC 3.2, idle 60 s): a socket that moved no byte for `idleTimeoutMs` is
   * destroyed, with a request in flight or not, idle between keep-alive requests or not. Checked
   * by a sweep over the open sockets every quarter of the timeout (at most every 5 s), so one is
   * closed within 1.25× the timeout. Node's own keep-alive timeout is off (0): it re-armed a timer
   * on every response (~1.2k instructions and an object per request, 1.8% of a registry HEAD) for
   * what this sweep already does. Its `Keep-Alive: timeout=…` hint is still sent (see `handle`).
   */
  const activity = new Map<Socket, { moved: number; since: number }>()
  let idleSweepMs = Math.max(10, Math.min(5000, Math.floor(idleTimeoutMs / 4)))
  let idleTimer: TimerHandle | undefined
  const sweepIdle = (): void => {
    if (closing) return
    const now = clock.now()
    for (const [socket, a] of activity) {
      const moved = socket.bytesRead + socket.bytesWritten
      if (moved !== a.moved) {
        a.moved = moved
        a.since = now
      } else if (now - a.since >= idleTimeoutMs) {
        activity.delete(socket)
        socket.destroy()
      }
    }
    idleTimer = clock.setTimeout(sweepIdle, idleSweepMs)
    idleTimer.unref?.()
  }
  let open = 0
  let closing = false
  let onAllClosed: (() => void) | undefined
  server.on('connection', (socket: Socket) => {
    const ip = socket.remoteAddress ?? ''
    const n = perIp.get(ip) ?? 0
    if (closing) {
      socket.destroy()
      return
    }
    if (n >= maxPerIp || open >= maxConnections) {
      // Answer rather than reset (the client learns why and when to retry); one that sends no
      // request within the header timeout is dropped.
      overCap.set(socket, n >= maxPerIp ? 'per_ip' : 'max_connections')
      overCapOpen++
      const t = clock.setTimeout(() => socket.destroy(), readTimeoutMs)
      t.unref?.()
      socket.once('close', () => {
        overCapOpen--
        clock.clearTimeout(t)
      })
      return
    }
    perIp.set(ip, n + 1)
    open++
    activity.set(socket, { moved: 0, since: clock.now() })
    socket.once('close', () => {
      open--
      activity.delete(socket)
      const left = (perIp.get(ip) ?? 1) - 1
      if (left <= 0) perIp.delete(ip)
      else perIp.set(ip, left)
      if (open === 0) onAllClosed?.()
    })
  })
  // While draining, every finished response frees its socket at once instead of idling in keep-alive.
  const onRequestWhileClosing = (_req: IncomingMessage, res: ServerResponse): void => {
    res.shouldKeepAlive = false
  }
  let followingDrain = false
  const drainListeners: Array<{ signal: AbortSignal; fn: () => void }> = []
  const followDrain = (s: AbortSignal): void => {
    const fn = (): void => {
      if (closing) return
      if (!followingDrain) {
        followingDrain = true
        server.prependListener('request', onRequestWhileClosing)
      }
      server.closeIdleConnections()
    }
    if (s.aborted) fn()
    else {
      s.addEventListener('abort', fn, { once: true })
      drainListeners.push({ signal: s, fn })
    }
  }

  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      server.removeListener('listening', onListening)
      const port = options.port ?? 0
      const err =
        e.code === 'EADDRINUSE'
          ? new Error(`cannot listen on ${host}:${port}: port ${port} is already in use`, { cause: e })
          : new Error(`cannot listen on ${host}:${port}: ${e.message}`, { cause: e })
      reject(Object.assign(err, { code: e.code }))
    }
    const onListening = (): void => {
      server.removeListener('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(options.port ?? 0, host)
  })

  idleTimer = clock.setTimeout(sweepIdle, idleSweepMs)
  idleTimer.unref?.()

  const addr = server.address()
  const port = typeof addr === 'object' && addr !== null ? addr.port : (options.port ?? 0)
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`

  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      closing = true
      if (idleTimer !== undefined) clock.clearTimeout(idleTimer)
      idleTimer = undefined
      signal?.removeEventListener('abort', onAbort)
      for (const d of drainListeners.splice(0)) d.signal.removeEventListener('abort', d.fn)
      if (!followingDrain) server.prependListener('request', onRequestWhileClosing)
      const started = clock.now()
      // Node keeps a keep-alive socket open after its in-flight response finishes; sweep idle
      // sockets until all are gone, and destroy whatever is left at the drain deadline.
      let timer: TimerHandle | undefined
      const sweep = (): void => {
        if (clock.now() - started >= drainDeadlineMs) {
          server.closeAllConnections()
          timer = undefined
          return
        }
        server.closeIdleConnections()
        timer = clock.setTimeout(sweep, Math.min(SWEEP_MS, Math.max(1, drainDeadlineMs - (clock.now() - started))))
        timer.unref?.()
      }
      let listenerClosed = false
      const maybeDone = (): void => {
        // Resolve only when the listener is closed and every socket has emitted 'close'.
        if (!listenerClosed || open > 0) return
        if (timer !== undefined) clock.clearTimeout(timer)
        timer = undefined
        onAllClosed = undefined
        server.removeListener('request', onRequestWhileClosing)
        resolve()
      }
      onAllClosed = maybeDone
      server.close(() => {
        listenerClosed = true
        maybeDone()
      })
      sweep()
    })
    return closed
  }
  const onAbort = (): void => {
    void close()
  }
  signal?.addEventListener('abort', onAbort, { once: true })
  if (policy !== undefined) followDrain(policy.intakeStopped)
  const adopt = (p: ListenerPolicy): void => {
    readTimeoutMs = options.readTimeoutMs ?? p.readTimeoutMs
    idleTimeoutMs = options.idleTimeoutMs ?? p.idleTimeoutMs
    maxPerIp = options.maxConnectionsPerIp ?? p.maxConnectionsPerIp
    maxConnections = options.maxConnections ?? p.maxConnections
    idleSweepMs = Math.max(10, Math.min(5000, Math.floor(idleTimeoutMs / 4)))
    server.headersTimeout = readTimeoutMs
    followDrain(p.intakeStopped)
  }

  return {
    url,
    port,
    host,
    server,
    get connections() {
      return open
    },
    followDrain,
    adopt,
    close,
    [Symbol.asyncDispose]: close,
  }
}
