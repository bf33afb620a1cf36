/**
 * Calls out to storage, passport and index: through the transport, each with a deadline and a
 * circuit breaker per upstream; retried only when idempotent (reads, and content-addressed
 * receipt stores whose body is bytes) with the seed's backoff 50–100 → 200–400 → 800–1600 ms
 * (capped at 2 s). Every call's latency feeds the brownout sentinel — for a body streamed from a
 * client, only from the body's end (the client's pace is not the upstream's latency), and a call
 * whose client body failed feeds neither the sentinel nor the breaker.
 *
 * @module
 */

import {
  BreakerOpenError,
  CircuitBreaker,
  NotReadyError,
  errorFromResponse,
  isRonError,
  type Clock,
  type MetricsSink,
  type Random,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '@ron/core'

/** Retry schedule of idempotent calls. */
export interface UpstreamRetry {
  /** Attempts including the first. @default 3 */
  tries: number
  /** First backoff drawn in [baseMinMs, baseMaxMs]. @default 50 */
  baseMinMs: number
  /** @default 100 */
  baseMaxMs: number
  /** Each further backoff is this many times the previous range. @default 4 */
  factor: number
  /** @default 2000 */
  capMs: number
}

/** Default retry schedule (seed svc-interop §5). */
export const DEFAULT_UPSTREAM_RETRY: UpstreamRetry = { tries: 3, baseMinMs: 50, baseMaxMs: 100, factor: 4, capMs: 2000 }

/** The backoff before retry `n` (1-based): uniform in [min, max]·factor^(n-1), capped. */
export function upstreamBackoff(n: number, r: UpstreamRetry, random: Random): number {
  const scale = r.factor ** (n - 1)
  return Math.min(r.capMs, (r.baseMinMs + random.next() * (r.baseMaxMs - r.baseMinMs)) * scale)
}

/** The breaker of a call: `<target>/read` for GET and HEAD, `<target>/write` otherwise. */
export function breakerName(target: string, method: string): string {
  const m = method.toUpperCase()
  return `${target}/${m === 'GET' || m === 'HEAD' ? 'read' : 'write'}`
}

/**
 * Maps an upstream's failure to what interop answers its own caller. An upstream's 500, or the
 * upstream refusing interop's own credentials (401/403: a capability or service token interop
 * obtained), is interop's problem, not the caller's request: 503 `NotReady` naming the upstream,
 * with `Retry-After`. Every other error (Busy, Timeout, BreakerOpen, OverLimit, Malformed…) passes
 * as it is.
 */
export function upstreamFailure(e: unknown, upstream: string): unknown {
  if (!isRonError(e) || (e.status !== 500 && e.status !== 401 && e.status !== 403)) return e
  return new NotReadyError(`${upstream} failed: ${e.code}`, { details: { upstream, code: e.code }, cause: e, retryAfterMs: 1000 })
}

/** Options of {@link Upstreams}. */
export interface UpstreamsOptions {
  transport: Transport
  clock: Clock
  random: Random
  metrics: MetricsSink
  retry: UpstreamRetry
  /** Latency observer (the brownout sentinel). */
  onLatency: (ms: number) => void
  /** Most breakers kept (one per upstream target). @default 64 */
  maxBreakers?: number
}

/** One outgoing call. */
export interface UpstreamCall extends Omit<TransportRequest, 'signal' | 'timeoutMs' | 'idempotent'> {
  /** Operation name: `op` label of `io_timeouts_total` and `backoff_retries_total`. */
  op: string
  /** Deadline of each attempt (until the response head). */
  timeoutMs: number
  /** Retry on retryable failures. Only for idempotent operations. */
  idempotent: boolean
  signal?: AbortSignal
  /** The caller's correlation id, carried downstream as `X-Corr-ID` (SPEC §4). */
  corrId?: string
  /**
   * For a body streaming from a client (an upload): when it ended, or how it failed. Latency is
   * then measured from the body's end, and not at all when it never ended; a failure while the
   * client's body failed is the client's, not the upstream's (the breaker ignores it).
   */
  clientBody?: { readonly endedAt?: number; readonly failure?: unknown }
}

/**
 * Breakers per upstream target and the call policy. A 5xx answer is a failure (for the breaker and
 * the retry), a 4xx is returned to the caller as is.
 *
 * @example
 * ```ts
 * const res = await upstreams.call('storage', { op: 'storage.get', method: 'GET', path: `/o/${addr}`, timeoutMs: 2000, idempotent: true })
 * ```
 */
export class Upstreams {
  readonly #o: UpstreamsOptions
  readonly #breakers = new Map<string, CircuitBreaker>()
  /** Errors of calls whose client body had failed: the client's doing, ignored by the breakers. */
  readonly #clientFaults = new WeakSet<object>()

  constructor(options: UpstreamsOptions) {
    this.#o = options
  }

  /** The breaker named `name` ({@link breakerName}; created on first use, its gauge `breaker_state{target}` starts at 0). */
  breaker(name: string): CircuitBreaker {
    let b = this.#breakers.get(name)
    if (b === undefined) {
      b = new CircuitBreaker({
        name,
        clock: this.#o.clock,
        metrics: this.#o.metrics,
        // The caller giving up, the client failing its own body, or the upstream refusing us (4xx
        // never get here) is not the upstream being unhealthy.
        isFailure: (e) => !isRonError(e, 'Canceled') && !(typeof e === 'object' && e !== null && this.#clientFaults.has(e)),
      })
      this.#o.metrics.inc('breaker_open_total', { target: name }, 0)
      b.onStateChange((e) => {
        if (e.type === 'breaker:opened') this.#o.metrics.inc('breaker_open_total', { target: name })
      })
      this.#breakers.set(name, b)
      if (this.#breakers.size > (this.#o.maxBreakers ?? 64)) {
        const oldest = this.#breakers.keys().next().value
        if (oldest !== undefined && oldest !== name) this.#breakers.delete(oldest)
      }
    }
    return b
  }

  /**
   * Sends `call` to `target`.
   * @returns the response when its status is below 500 (the caller reads or dumps the body).
   * @throws the typed error of a 5xx answer, {@link TimeoutError}, {@link BreakerOpenError},
   *   {@link CanceledError}, transport errors; after the retries for idempotent calls.
   */
  async call(target: string, call: UpstreamCall): Promise<TransportResponse> {
    const { op, timeoutMs, signal } = call
    // Built field by field: an object rest/spread of the call (and of the request again per
    // attempt) was a generic property copy on every receipt store.
    const headers = call.corrId === undefined ? call.headers : { ...call.headers, 'x-corr-id': call.corrId }
    const tries = call.idempotent ? Math.max(1, this.#o.retry.tries) : 1
    // Reads and writes of one upstream trip separately: a storage refusing writes (full disk)
    // still serves reads, and reads must keep working through a write brownout.
    const breaker = this.breaker(breakerName(target, call.method))
    const client = call.clientBody
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted()
      const started = this.#o.clock.now()
      try {
        return await breaker.execute(async (s) => {
          const sig = s ?? signal
          const req: TransportRequest = { method: call.method, path: call.path, timeoutMs, idempotent: false }
          if (headers !== undefined) req.headers = headers
          if (call.body !== undefined) req.body = call.body
          if (sig !== undefined) req.signal = sig
          let res: TransportResponse
          try {
            res = await this.#o.transport.request(target, req)
          } catch (e) {
            throw this.#blame(e, client)
          }
          this.#latency(started, client)
          if (res.status >= 500) throw this.#blame(await errorFromResponse(res), client)
          return res
        }, signal)
      } catch (e) {
        if (isRonError(e, 'Timeout')) {
          this.#latency(started, client)
          if (client?.failure === undefined) this.#o.metrics.inc('io_timeouts_total', { op })
        }
        const retryable = isRonError(e) && e.retryable && !(e instanceof BreakerOpenError)
        if (attempt >= tries || !retryable || signal?.aborted === true) throw e
        this.#o.metrics.inc('backoff_retries_total', { op })
        await this.#o.clock.sleep(upstreamBackoff(attempt, this.#o.retry, this.#o.random), signal)
      }
    }
  }

  /** Reports a call's latency to the sentinel: from the client body's end for a streamed body, never when the client failed it. */
  #latency(started: number, client: UpstreamCall['clientBody']): void {
    if (client === undefined) {
      this.#o.onLatency(this.#o.clock.now() - started)
      return
    }
    if (client.failure !== undefined || client.endedAt === undefined) return
    this.#o.onLatency(this.#o.clock.now() - client.endedAt)
  }

  /** Marks `e` as the client's doing when the client's body had failed (the breaker then ignores it). */
  #blame(e: unknown, client: UpstreamCall['clientBody']): unknown {
    if (client?.failure !== undefined && typeof e === 'object' && e !== null) this.#clientFaults.add(e)
    return e
  }
}
