/**
 * What a listener applies per service: defined in the HTTP layer that applies it (`serve`), so
 * `http/` does not import `service/` above it; `service/types.ts` re-exports it.
 *
 * @module
 */

/**
 * How a listener should serve a service, from the service's config (its `http.*` keys): what
 * `serve(service)` applies when its own options do not say otherwise.
 */
export interface ListenerPolicy {
  /** Time to receive request headers (`headersTimeout`). */
  readonly readTimeoutMs: number
  /** Keep-alive idle timeout. */
  readonly idleTimeoutMs: number
  /** Open connections, all clients together (429 `max_connections` beyond). */
  readonly maxConnections: number
  /** Open connections per client address (429 `per_ip` beyond). */
  readonly maxConnectionsPerIp: number
  /**
   * Aborts when the service stops intake in a drain: the listener then closes its idle
   * keep-alive sockets; busy ones close after their response (which says `Connection: close`).
   */
  readonly intakeStopped: AbortSignal
}
