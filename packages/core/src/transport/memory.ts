/**
 * In-process transport: services are mounted under names and requests are dispatched to their
 * handlers without sockets, through the same routing, limits, auth and validation as over HTTP.
 * Bodies stay streams in both directions, so large transfers are never buffered whole.
 *
 * @module
 */

import type { IncomingHttpHeaders } from 'node:http'
import { abortReason, systemClock, type Clock } from '../clock.js'
import { ClosedError, TimeoutError, toRonError } from '../errors.js'
import type { RonRequest, RonResponse } from '../http/types.js'
import { closeIterator } from '../http/iter.js'
import { raceAbort } from '../concurrency/abort.js'
import { StreamResponse } from './response.js'
import type { Transport, TransportRequest, TransportResponse } from './types.js'
import { bodyIterable, callDeadline, guardBody, unreachable, withProgress } from './util.js'

/** Anything that can answer an in-process request; a {@link RonService} fits. */
export interface DispatchTarget {
  dispatch(req: RonRequest): Promise<RonResponse>
}

/** Options of {@link MemoryTransport}. */
export interface MemoryTransportOptions {
  /** Peer address the targets see (per-IP limits apply to it). @default '127.0.0.1' */
  remoteAddress?: string
  /** Deadline of calls that set no `timeoutMs`. @default 10000 */
  timeoutMs?: number
  /** @default systemClock */
  clock?: Clock
}

interface Mounted {
  target: DispatchTarget
  reachable: boolean
}

/**
 * A {@link Transport} that dispatches to mounted services in-process.
 *
 * An unknown, unmounted or unreachable target fails like a refused connection: a
 * {@link NotReadyError} with `details: { target, reason: 'unreachable' }` (retryable).
 *
 * @example
 * ```ts
 * const transport = new MemoryTransport()
 * transport.mount('storage', await createStorageService({}, transport))
 * const res = await transport.request('storage', { method: 'GET', path: '/healthz' })
 * await throwIfError(res)
 * ```
 */
export class MemoryTransport implements Transport {
  readonly #targets = new Map<string, Mounted>()
  readonly #remoteAddress: string
  readonly #timeoutMs: number
  readonly #clock: Clock
  #closed = false

  constructor(options: MemoryTransportOptions = {}) {
    this.#remoteAddress = options.remoteAddress ?? '127.0.0.1'
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#clock = options.clock ?? systemClock
  }

  /**
   * Mounts `target` under `name` (replacing any previous one).
   * @returns a disposer that unmounts it
   */
  mount(name: string, target: DispatchTarget): () => void {
    const m: Mounted = { target, reachable: true }
    this.#targets.set(name, m)
    return () => {
      if (this.#targets.get(name) === m) this.#targets.delete(name)
    }
  }

  /** Removes the target mounted under `name`; later calls to it fail as unreachable. */
  unmount(name: string): void {
    this.#targets.delete(name)
  }

  /** Fault injection: while unreachable, calls to `name` fail like a refused connection. */
  setReachable(name: string, reachable: boolean): void {
    const m = this.#targets.get(name)
    if (m !== undefined) m.reachable = reachable
  }

  /** Names currently mounted. */
  get targets(): string[] {
    return [...this.#targets.keys()]
  }

  /**
   * Dispatches `req` to the target mounted as `target`.
   * @throws {@link NotReadyError} (unknown or unreachable target), {@link TimeoutError} (no
   * response head within `timeoutMs`), {@link CanceledError} (`req.signal` aborted),
   * {@link ClosedError} (after `close()`)
   */
  async request(target: string, req: TransportRequest): Promise<TransportResponse> {
    if (this.#closed) throw new ClosedError('memory transport closed')
    if (req.signal?.aborted) throw abortReason(req.signal)
    const mounted = this.#targets.get(target)
    if (mounted === undefined || !mounted.reachable) throw unreachable(target)

    // One controller per call: aborted by the deadline (until the response head) or by the
    // caller's signal (until the body is consumed); the target sees it as its request signal.
    const ac = new AbortController()
    const onCallerAbort = (): void => ac.abort(abortReason(req.signal!))
    req.signal?.addEventListener('abort', onCallerAbort, { once: true })
    const release = (): void => req.signal?.removeEventListener('abort', onCallerAbort)
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs
    const deadline = callDeadline(this.#clock, timeoutMs, () => {
      ac.abort(new TimeoutError(`${req.method} ${target}${req.path} timed out after ${timeoutMs} ms`, { details: { op: 'transport', target } }))
    })

    const headers: IncomingHttpHeaders = {}
    for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v
    if (typeof req.body === 'string' && headers['content-length'] === undefined) headers['content-length'] = String(Buffer.byteLength(req.body))
    if (req.body instanceof Uint8Array && headers['content-length'] === undefined) headers['content-length'] = String(req.body.byteLength)
    const ronReq: RonRequest = {
      method: req.method.toUpperCase(),
      url: req.path,
      headers,
      body: bodyIterable(withProgress(req.body, deadline.progress)),
      remoteAddress: this.#remoteAddress,
      signal: ac.signal,
    }

    let res: RonResponse
    try {
      const pending = mounted.target.dispatch(ronReq)
      // If the signal wins, the late response's body is discarded so its producer is released.
      res = await raceAbort(pending, ac.signal, discard)
    } catch (e) {
      release()
      throw ac.signal.aborted ? abortReason(ac.signal) : toRonError(e)
    } finally {
      deadline.settle()
    }

    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(res.headers)) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v
    const body = guardBody(res.body, ac.signal, release)
    return new StreamResponse({
      status: res.status,
      headers: out,
      body,
      dump: async () => {
        // Stop the producer rather than draining it: the target's iterator return() runs.
        await body[Symbol.asyncIterator]().return?.()
        release()
      },
    })
  }

  /** Unmounts everything; later calls fail with {@link ClosedError}. Idempotent. */
  /** Same as `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  close(): Promise<void> {
    this.#closed = true
    this.#targets.clear()
    return Promise.resolve()
  }
}

function discard(r: RonResponse): void {
  closeIterator(r.body[Symbol.asyncIterator]())
}
