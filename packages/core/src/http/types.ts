/**
 * The request/reply model of the RON HTTP host. It is deliberately not the Web `Request`/`Response`
 * pair: on `node:http` a request is wrapped (never copied) and a reply is written straight to the
 * `ServerResponse`; `MemoryTransport` passes the same objects in-process; the fetch adapter
 * converts only at the edge.
 *
 * @module
 */

import type { IncomingHttpHeaders } from 'node:http'
import type { Claims } from '../auth/types.js'

/** HTTP methods a route may declare. */
export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'

/** An incoming request as the host sees it, however it arrived. */
export interface RonRequest {
  /** Upper-case method. */
  readonly method: string
  /** Path plus query string, as received (e.g. `/o/b3:…?x=1`). */
  readonly url: string
  /** Lower-case header names, as `node:http` gives them. */
  readonly headers: IncomingHttpHeaders
  /** The raw request body (possibly compressed). Empty for bodiless requests. */
  readonly body: AsyncIterable<Uint8Array>
  /** Peer address, used for per-IP limits (`'memory'` on the in-memory transport). */
  readonly remoteAddress: string
  /** Aborts when the client goes away or the service force-closes. */
  readonly signal: AbortSignal
  /**
   * Calls `listener` once when the request would abort `signal` (at once when it already has),
   * without making the signal: cheaper for a handler that only needs to hear of it. Optional:
   * without it, {@link RouteContext.onAbort} listens on `signal`.
   * @returns a disposer that removes the listener (idempotent)
   */
  onAbort?(listener: (reason: Error) => void): () => void
}

/** A reply body: nothing, bytes, text, or a stream of byte chunks. */
export type ReplyBody = undefined | string | Uint8Array | AsyncIterable<Uint8Array>

/** Header values of a reply. */
export type ReplyHeaders = Record<string, string | number | readonly string[]>

/** What a route handler returns. */
export interface Reply {
  status: number
  headers?: ReplyHeaders
  /** Raw body. Exclusive with `json`. */
  body?: ReplyBody
  /** A JSON value, serialised by the host with `content-type: application/json`. */
  json?: unknown
}

/** The response side as seen by in-process callers (`dispatch`, `MemoryTransport`). */
export interface RonResponse {
  readonly status: number
  /** Lower-case header names; multi-valued headers as arrays. */
  readonly headers: Record<string, string | string[]>
  /** The body as a stream of chunks (empty for HEAD, 204, 304). */
  readonly body: AsyncIterable<Uint8Array>
}

/** Everything a route handler gets. */
export interface RouteContext {
  readonly req: RonRequest
  /** Path parameters by name (`/o/:addr` → `params.addr`), already URI-decoded. */
  readonly params: Readonly<Record<string, string>>
  /** Parsed query string. */
  readonly query: URLSearchParams
  /** The request's correlation id (accepted from `X-Corr-ID` or generated). */
  readonly corrId: string
  /** Verified token claims when the route declared a scope; `undefined` on public routes. */
  readonly auth: Claims | undefined
  /** Aborts on client disconnect, deadline, or forced shutdown. */
  readonly signal: AbortSignal
  /**
   * Calls `listener` with the abort reason once when {@link RouteContext.signal} would abort (at
   * once when it already has). On the `node:http` host, when nothing read `signal` yet, this
   * listens on the response's `close` without making an `AbortController` and its signal (the
   * request's signal is made on first read): the cheap way for a hot handler to hear of a client
   * that went away.
   * @returns a disposer that removes the listener (idempotent); call it when the work is done
   */
  onAbort(listener: (reason: Error) => void): () => void
  /**
   * Reads the body (decoded per `Content-Encoding`, under the route's body cap and the
   * decompression caps) and validates it strictly against `schema`. A body whose `Content-Type`
   * is not JSON (`application/json`, with parameters, or any `application/…+json`) — or that has
   * none — is refused with 415; a request without a body is not checked.
   * @throws {@link MalformedError} naming the field; {@link OverLimitError}; {@link UnsupportedMediaTypeError};
   *   {@link RequestTimeoutError} (a client too slow); {@link BusyError} (`per_principal`)
   */
  json<T>(schema: { parse(value: unknown): T }): Promise<T>
  /**
   * Reads the whole decoded body under the route's cap, the gap timeout, the minimum rate and the
   * whole-request deadline; a body still arriving after a tenth of the rate window takes one of
   * its principal's shares (`maxBodiesPerPrincipal`) until it ends.
   * @throws {@link OverLimitError}, {@link RequestTimeoutError}, {@link BusyError} (`per_principal`)
   */
  bytes(): Promise<Uint8Array>
  /** The decoded body as a stream, enforcing the route's cap as it flows. */
  stream(): AsyncIterable<Uint8Array>
  /**
   * Names the principal this request's body counts against (the per-principal share of bodies in
   * flight, `maxBodiesPerPrincipal`): for routes that authenticate without a bearer token (an API
   * key). Call it before reading the body.
   * @defaultValue `sub:<token subject>` on routes with a verified token, else `ip:<remote address>`
   * @throws {@link RonError} `Internal` when the body was already read
   */
  setPrincipal(principal: string): void
}

/** A route declaration. A write route (POST/PUT/PATCH/DELETE) must declare `scope` or `public: true`. */
export interface Route {
  method: HttpMethod
  /**
   * Path pattern with `:name` params, e.g. `/o/:addr`; a last segment `*name` is a catch-all that
   * takes the rest of the path (one segment or more, possibly empty: `/n/:name/*path` matches
   * `/n/a/` and `/n/a/b/c`, not `/n/a`), tried after every fixed-length pattern.
   */
  path: string
  /**
   * Dispatch by `Host` (port, case and a trailing dot ignored): the route answers only requests to
   * that host — `':site.localhost'` captures the first label of any `*.localhost` host into
   * `params.site`; a plain host name matches exactly. A request whose host matches a host pattern
   * is routed among that pattern's routes only, before the built-in endpoints; other requests never
   * see these routes. Services without host routes pay nothing for them.
   */
  host?: string
  /**
   * `false`: responses of this route carry no CORS headers, whatever the service's CORS policy
   * (content served as its own origin, which other origins must not read). @default true
   */
  cors?: false
  /** Metric label; defaults to the path pattern. */
  name?: string
  /** Capability scope the token must carry (e.g. `storage:write`). */
  scope?: string
  /** Explicitly public (no token). Required to declare a write route without a scope. */
  public?: boolean
  /**
   * Work queue (declared in the service topology) the request is admitted through. Full queue →
   * `429 Busy`. Omit to run the handler directly (health-like routes).
   */
  queue?: string
  /**
   * Body cap in bytes after decoding. @default 1 MiB. Streaming routes set their own (e.g. the
   * service's `maxObjectBytes`), or `Infinity` when the handler enforces one itself.
   */
  bodyLimit?: number
  /**
   * The readiness path (SPEC.md 3.3a) this route serves, declared in the host's `readiness.paths`:
   * during a drain the route is refused (503 `Draining`) from the stage that path is shed at.
   * @default by method: GET/HEAD/OPTIONS are reads (shed when the read window ends), others are writes (shed at once)
   */
  readinessPath?: string
  handler(ctx: RouteContext): Promise<Reply> | Reply
}
