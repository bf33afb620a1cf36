/**
 * One transport for a host that has both in-process services and peers: transport names go to
 * the local (memory) transport, URLs to the remote (HTTP) transport.
 *
 * @module
 */

import { ClosedError } from '../errors.js'
import type { Transport, TransportRequest, TransportResponse } from './types.js'

/** Options of {@link RoutingTransport}. */
export interface RoutingTransportOptions {
  /** Where transport names go (e.g. a {@link MemoryTransport} with the node's own services). */
  local: Transport
  /** Where `http://` and `https://` targets go (e.g. an {@link HttpTransport}). */
  remote: Transport
}

const URL_RE = /^https?:\/\//i

/**
 * Sends a request to `remote` when its target is an `http(s)://` URL and to `local` otherwise, so
 * a provider announcement's `endpoint` works whether it names an in-process service or a peer's
 * URL. `close()` closes both.
 *
 * @example
 * ```ts
 * const local = new MemoryTransport()
 * local.mount('storage', storage)
 * const transport = new RoutingTransport({ local, remote: new HttpTransport() })
 * await transport.request('storage', { method: 'GET', path: '/healthz' })               // in-process
 * await transport.request('http://10.0.0.2:7701', { method: 'GET', path: '/healthz' }) // a peer
 * ```
 */
export class RoutingTransport implements Transport {
  readonly #local: Transport
  readonly #remote: Transport
  #closed: Promise<void> | undefined

  constructor(options: RoutingTransportOptions) {
    this.#local = options.local
    this.#remote = options.remote
  }

  /**
   * Sends `req` through the transport `target` calls for.
   * @throws whatever that transport throws; {@link ClosedError} after `close()`.
   */
  request(target: string, req: TransportRequest): Promise<TransportResponse> {
    if (this.#closed !== undefined) return Promise.reject(new ClosedError('routing transport closed'))
    return URL_RE.test(target) ? this.#remote.request(target, req) : this.#local.request(target, req)
  }

  /** Closes both transports. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= Promise.all([this.#local.close(), this.#remote.close()]).then(() => undefined)
    return this.#closed
  }

  /** Same as `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}
