/**
 * Transports: the one {@link Transport} interface typed clients are written against, the
 * in-process {@link MemoryTransport} and the undici-based {@link HttpTransport}, and
 * {@link throwIfError} to turn error responses back into typed errors.
 *
 * Unreachable targets (unknown, unmounted, `setReachable(false)`, connection refused or reset)
 * fail the same way on both transports: {@link NotReadyError} with
 * `details: { target, reason: 'unreachable' }`.
 *
 * @module @ron/core/transport
 */

export type { Transport, TransportRequest, TransportResponse } from './types.js'
export { MemoryTransport } from './memory.js'
export type { DispatchTarget, MemoryTransportOptions } from './memory.js'
export { HttpTransport } from './http.js'
export { RoutingTransport } from './routing.js'
export type { RoutingTransportOptions } from './routing.js'
export type { HttpTransportOptions } from './http.js'
export { StreamResponse, throwIfError, expectOk, errorFromResponse, parseRetryAfter } from './response.js'
export type { StreamResponseInit } from './response.js'
