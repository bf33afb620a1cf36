/**
 * HTTP transport: undici connection pools per origin with keep-alive, a per-call deadline,
 * bounded retries for idempotent calls only (the core `retry` policy) and a circuit breaker per
 * upstream counting network errors and 5xx answers.
 *
 * @module
 */

import { Readable } from 'node:stream'
import type { Dispatcher, Pool } from 'undici'
import { abortReason, systemClock, type Clock } from '../clock.js'
import { BreakerOpenError, ClosedError, RonError, TimeoutError, isRonError, toRonError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import { noopMetrics } from '../metrics-sink.js'
import { CircuitBreaker, retry, type CircuitBreakerOptions, type RetryOptions } from '../resilience/index.js'
import { StreamResponse } from './response.js'
import type { Transport, TransportRequest, TransportResponse } from './types.js'
import { callDeadline, guardBody, unreachable, withProgress } from './util.js'

/** Options of {@link HttpTransport}. */
export interface HttpTransportOptions {
  /** Target names → base URLs (`http://host:port/prefix`). A target that is itself an `http(s)://` URL is used directly. @default {} */
  targets?: Record<string, string>
  /** Connections per origin. @default 64 */
  connections?: number
  /** Keep-alive of idle connections, in ms. @default 4000 */
  keepAliveTimeoutMs?: number
  /**
   * Per-call deadline when a request sets no `timeoutMs` (covers retries, connect, and the response
   * head). For a streamed request body it restarts with every chunk sent, so it bounds a stalled
   * upload, not a long one. @default 10000
   */
  timeoutMs?: number
  /** Retry policy of idempotent calls (`clock`, `signal` are set by the transport). @default 3 tries, 50–100 ms jittered base, cap 2 s */
  retry?: Omit<RetryOptions, 'signal'>
  /** Breaker per origin, or `false` for none. @default the core breaker defaults */
  breaker?: Omit<CircuitBreakerOptions, 'name' | 'clock' | 'metrics' | 'isFailure'> | false
  /** @default systemClock */
  clock?: Clock
  /** Where `backoff_retries_total{op}` and `breaker_state{target}` go. @default noopMetrics */
  metrics?: MetricsSink
  /**
   * TLS of `https:` targets: `ca` (PEM) trusted instead of the system roots, or
   * `rejectUnauthorized: false` to accept any certificate (insecure). @default the system roots
   */
  tls?: { ca?: string | Uint8Array; rejectUnauthorized?: boolean }
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS'])
const RETRY_STATUS = new Set([502, 503, 504])

/** Marks a 5xx answer inside the breaker, so it counts as a failure while the response is kept. */
class UpstreamStatus extends Error {
  constructor(readonly response: Dispatcher.ResponseData) {
    super(`upstream answered ${response.statusCode}`)
  }
}

/** A retryable 5xx answer to an idempotent call, thrown to the retry loop after dumping the body. */
class RetryableStatus extends RonError {
  constructor(status: number) {
    super('NotReady', `upstream answered ${status}`, { details: { status } })
  }
}

/**
 * A {@link Transport} over HTTP.
 *
 * Failures: connection refused/reset and other network errors → {@link NotReadyError} with
 * `details: { target, reason: 'unreachable' }` (as {@link MemoryTransport} does for unknown or
 * unreachable targets); deadline → {@link TimeoutError}; caller abort → {@link CanceledError};
 * open breaker → {@link BreakerOpenError}. HTTP error statuses are returned as responses: use
 * {@link throwIfError}.
 *
 * Retries: only for idempotent calls (`idempotent`, default true for GET/HEAD/OPTIONS) whose body
 * is absent, a string or bytes; on network errors and 502/503/504, within the call's deadline.
 *
 * @example
 * ```ts
 * const transport = new HttpTransport({ targets: { storage: 'http://127.0.0.1:8081' } })
 * const res = await transport.request('storage', { method: 'GET', path: '/healthz', timeoutMs: 2000 })
 * await throwIfError(res)
 * await transport.close()
 * ```
 */
export class HttpTransport implements Transport {
  readonly #targets: Record<string, string>
  readonly #pools = new Map<string, Pool>()
  readonly #breakers = new Map<string, CircuitBreaker>()
  readonly #o: HttpTransportOptions
  readonly #clock: Clock
  readonly #metrics: MetricsSink
  #closed: Promise<void> | undefined

  constructor(options: HttpTransportOptions = {}) {
    this.#o = options
    this.#targets = { ...(options.targets ?? {}) }
    this.#clock = options.clock ?? systemClock
    this.#metrics = options.metrics ?? noopMetrics
  }

  /** Maps (or re-maps) a target name to a base URL. */
  setTarget(name: string, baseUrl: string): void {
    this.#targets[name] = baseUrl
  }

  /** The breaker guarding `origin`, if one was created (for inspection). */
  breaker(origin: string): CircuitBreaker | undefined {
    return this.#breakers.get(origin)
  }

  /**
   * Sends `req` to `target`.
   * @throws {@link NotReadyError} (unknown target, connection refused/reset), {@link TimeoutError},
   * {@link CanceledError}, {@link BreakerOpenError}, {@link ClosedError} (after `close()`)
   */
  async request(target: string, req: TransportRequest): Promise<TransportResponse> {
    if (this.#closed !== undefined) throw new ClosedError('http transport closed')
    if (req.signal?.aborted) throw abortReason(req.signal)
    const base = this.#targets[target] ?? (/^https?:\/\//i.test(target) ? target : undefined)
    if (base === undefined) throw unreachable(target)
    let url: URL
    try {
      url = new URL(base)
    } catch (e) {
      throw unreachable(target, e)
    }
    const origin = url.origin
    const path = url.pathname.replace(/\/+$/, '') + (req.path.startsWith('/') ? req.path : `/${req.path}`)
    const PoolClass = undici?.Pool ?? (await loadUndici()).Pool
    if (this.#closed !== undefined) throw new ClosedError('http transport closed')
    const pool = this.#pool(origin, PoolClass)
    const breaker = this.#breaker(origin)
    const method = req.method.toUpperCase()
    const replayable = req.body === undefined || typeof req.body === 'string' || req.body instanceof Uint8Array
    const idempotent = (req.idempotent ?? SAFE.has(method)) && replayable
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v

    const ac = new AbortController()
    const onCallerAbort = (): void => ac.abort(abortReason(req.signal!))
    req.signal?.addEventListener('abort', onCallerAbort, { once: true })
    const release = (): void => req.signal?.removeEventListener('abort', onCallerAbort)
    const timeoutMs = req.timeoutMs ?? this.#o.timeoutMs ?? 10_000
    const deadline = callDeadline(this.#clock, timeoutMs, () => {
      ac.abort(new TimeoutError(`${method} ${target}${req.path} timed out after ${timeoutMs} ms`, { details: { op: 'transport', target } }))
    })
    // An error thrown by the caller's own body stream (e.g. a local integrity failure) is the
    // caller's, not the peer's: it is rethrown as is and never counts against the peer's breaker.
    let bodyError: unknown
    const body = withProgress(req.body, deadline.progress, (e) => {
      bodyError ??= e
    })

    const send = async (): Promise<Dispatcher.ResponseData> => {
      let res: Dispatcher.ResponseData
      try {
        res = await pool.request({
          path,
          method,
          headers,
          body: toUndiciBody(body),
          signal: ac.signal,
        })
      } catch (e) {
        if (bodyError !== undefined) throw new CallerBodyError(bodyError)
        if (ac.signal.aborted) throw abortReason(ac.signal)
        throw unreachable(target, e)
      }
      if (res.statusCode >= 500) throw new UpstreamStatus(res)
      return res
    }
    const tries = idempotent ? (this.#o.retry?.tries ?? 3) : 1
    const attempt = async (n: number): Promise<Dispatcher.ResponseData> => {
      try {
        return breaker === undefined ? await send() : await breaker.execute(send)
      } catch (e) {
        if (!(e instanceof UpstreamStatus)) throw e
        if (n < tries && RETRY_STATUS.has(e.response.statusCode) && !ac.signal.aborted) {
          await e.response.body.dump().catch(() => undefined)
          throw new RetryableStatus(e.response.statusCode)
        }
        return e.response
      }
    }

    let res: Dispatcher.ResponseData
    try {
      res = await retry((n) => attempt(n), {
        op: 'transport',
        metrics: this.#metrics,
        ...this.#o.retry,
        tries,
        clock: this.#clock,
        signal: ac.signal,
        shouldRetry: (e) => !ac.signal.aborted && isRonError(e) && (e.code === 'NotReady' || e instanceof RetryableStatus),
      })
    } catch (e) {
      release()
      if (e instanceof CallerBodyError) throw toRonError(e.error)
      if (ac.signal.aborted && !(e instanceof BreakerOpenError)) throw abortReason(ac.signal)
      throw e
    } finally {
      deadline.settle()
    }

    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(res.headers)) {
      if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v
    }
    const raw = res.body
    return new StreamResponse({
      status: res.statusCode,
      headers: out,
      body: guardBody(raw, ac.signal, release),
      dump: async () => {
        try {
          await raw.dump()
        } finally {
          release()
        }
      },
    })
  }

  /** Closes every pool (waiting for in-flight responses). Idempotent; later calls fail with {@link ClosedError}. */
  /** Same as `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  close(): Promise<void> {
    this.#closed ??= Promise.all([...this.#pools.values()].map((p) => p.close())).then(() => undefined)
    return this.#closed
  }

  #pool(origin: string, PoolClass: typeof Pool): Pool {
    let p = this.#pools.get(origin)
    if (p === undefined) {
      const keepAlive = this.#o.keepAliveTimeoutMs ?? 4000
      const tls = this.#o.tls
      p = new PoolClass(origin, {
        connections: this.#o.connections ?? 64,
        keepAliveTimeout: keepAlive,
        keepAliveMaxTimeout: Math.max(keepAlive, 4000),
        ...(tls === undefined ? {} : { connect: { ...(tls.ca === undefined ? {} : { ca: typeof tls.ca === 'string' ? tls.ca : Buffer.from(tls.ca) }), ...(tls.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: tls.rejectUnauthorized }) } }),
      })
      this.#pools.set(origin, p)
    }
    return p
  }

  #breaker(origin: string): CircuitBreaker | undefined {
    if (this.#o.breaker === false) return undefined
    let b = this.#breakers.get(origin)
    if (b === undefined) {
      b = new CircuitBreaker({
        ...this.#o.breaker,
        name: origin,
        clock: this.#clock,
        metrics: this.#metrics,
        // Network errors and 5xx count; our own deadline or the caller's abort do not.
        isFailure: (e) => e instanceof UpstreamStatus || isRonError(e, 'NotReady'),
      })
      this.#breakers.set(origin, b)
    }
    return b
  }
}

// undici costs a large share of `@ron/core`'s import time (~200 ms on a loaded box) and only an
// HttpTransport that sends something needs it: loaded on the first request, then held here.
let undici: typeof import('undici') | undefined
let undiciLoading: Promise<typeof import('undici')> | undefined

function loadUndici(): Promise<typeof import('undici')> {
  undiciLoading ??= import('undici').then((m) => (undici = m))
  return undiciLoading
}

/** Carries an error raised by the caller's request body through the breaker without counting it. */
class CallerBodyError extends Error {
  constructor(readonly error: unknown) {
    super('request body failed')
  }
}

function toUndiciBody(body: TransportRequest['body']): string | Uint8Array | Readable | null {
  if (body === undefined) return null
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  return Readable.from(body, { objectMode: false })
}
