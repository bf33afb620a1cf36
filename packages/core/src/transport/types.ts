/**
 * The one interface typed clients are written against. `MemoryTransport` dispatches in-process;
 * `HttpTransport` uses undici pools. A service never imports another service's package to call
 * it: it goes through a {@link Transport}.
 *
 * @module
 */

/** An outgoing request. */
export interface TransportRequest {
  method: string
  /** Path plus query, e.g. `/o/b3:…`. */
  path: string
  headers?: Record<string, string>
  body?: string | Uint8Array | AsyncIterable<Uint8Array>
  signal?: AbortSignal
  /**
   * Per-call deadline in ms, until the response head arrives. While a streamed (async iterable)
   * body is being sent over HTTP, each chunk restarts it: it bounds silence, not upload size.
   */
  timeoutMs?: number
  /**
   * Safe to retry. @default true for GET/HEAD/OPTIONS, false otherwise. Content-addressed PUTs
   * are idempotent and may set this, but a streamed body can only be retried if it is bytes.
   */
  idempotent?: boolean
}

/** An incoming response. The body must be consumed, or `dump()`ed, to release the connection. */
export interface TransportResponse {
  readonly status: number
  /** Lower-case header names; repeated headers joined with `, `. */
  readonly headers: Record<string, string>
  readonly body: AsyncIterable<Uint8Array>
  bytes(): Promise<Uint8Array>
  text(): Promise<string>
  json<T = unknown>(): Promise<T>
  /** Discards the rest of the body. */
  dump(): Promise<void>
}

/** Reaches a named service (or, for HTTP, a base URL) and returns its response. */
export interface Transport {
  /**
   * Sends `req` to `target`: a service name mounted on a memory transport, or a name mapped to a
   * base URL (or a base URL itself) on an HTTP transport.
   * @throws {@link TimeoutError}, {@link CanceledError}, {@link BreakerOpenError}, {@link NotReadyError} with `details.reason: 'unreachable'` (unknown, unmounted or unreachable target)
   */
  request(target: string, req: TransportRequest): Promise<TransportResponse>
  /** Releases pools and pending calls. Idempotent. */
  close(): Promise<void>
  /** Same as `close()`, for `await using` (the core transports implement it). */
  [Symbol.asyncDispose]?(): Promise<void>
}
