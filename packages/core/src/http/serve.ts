/**
 * `serve()`: listens with a handler on `node:http` with the host's socket policy — header read
 * timeout, idle timeout, a per-IP connection cap — and returns a server whose idempotent
 * `close()` stops intake, drains in-flight requests until a deadline, then destroys stragglers.
 *
 * @module
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { abortReason, systemClock, type Clock, type TimerHandle } from '../clock.js'

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
   * @default 5000
   */
  readTimeoutMs?: number
  /** Keep-alive and socket inactivity timeout. @default 60000 */
  idleTimeoutMs?: number
  /** Open sockets allowed per remote address; extra sockets are destroyed at once. @default 256 */
  maxConnectionsPerIp?: number
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
export async function serve(target: { handle(req: IncomingMessage, res: ServerResponse): void }, options: ServeOptions = {}): Promise<RonServer> {
  const host = options.host ?? '127.0.0.1'
  const readTimeoutMs = options.readTimeoutMs ?? 5000
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000
  const maxPerIp = options.maxConnectionsPerIp ?? 256
  const drainDeadlineMs = options.drainDeadlineMs ?? 3000
  const clock = options.clock ?? systemClock
  const signal = options.signal
  if (signal?.aborted) throw abortReason(signal)

  const handle = target.handle.bind(target)
  const server = createServer(
    {
      headersTimeout: readTimeoutMs,
      // 0: a request may stream for as long as its chunks keep coming (checked per chunk by the handler).
      requestTimeout: 0,
      keepAliveTimeout: idleTimeoutMs,
      // headersTimeout is enforced by this periodic check; keep it proportionate to the timeout.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(readTimeoutMs / 4))),
    },
    handle,
  )
  server.setTimeout(idleTimeoutMs)

  const perIp = new Map<string, number>()
  let open = 0
  let closing = false
  let onAllClosed: (() => void) | undefined
  server.on('connection', (socket: Socket) => {
    const ip = socket.remoteAddress ?? ''
    const n = perIp.get(ip) ?? 0
    if (n >= maxPerIp || closing) {
      socket.destroy()
      return
    }
    perIp.set(ip, n + 1)
    open++
    socket.once('close', () => {
      open--
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

  const addr = server.address()
  const port = typeof addr === 'object' && addr !== null ? addr.port : (options.port ?? 0)
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`

  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      closing = true
      signal?.removeEventListener('abort', onAbort)
      server.prependListener('request', onRequestWhileClosing)
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

  return {
    url,
    port,
    host,
    server,
    get connections() {
      return open
    },
    close,
    [Symbol.asyncDispose]: close,
  }
}
