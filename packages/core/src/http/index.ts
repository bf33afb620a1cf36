/**
 * The RON HTTP host: route types, {@link createHttpHandler} and {@link serve}.
 *
 * @module @ron/core/http
 */

export type { HttpMethod, RonRequest, ReplyBody, ReplyHeaders, Reply, RonResponse, RouteContext, Route } from './types.js'
export { createHttpHandler, DEFAULT_SLOW_CLIENT_LIMITS } from './handler.js'
export type { HttpHandler, HttpHandlerOptions, HttpHooks, HttpLimits, SlowClientLimits } from './handler.js'
export { bodyDeadlineMs } from './pace.js'
export type { PaceLimits } from './pace.js'
export { RouteConfigError } from './router.js'
export { CORR_ID_HEADER, corrIdFrom, generateCorrId, isValidCorrId } from './corr-id.js'
export { DECOMPRESSION_SLACK } from './body.js'
export { serve } from './serve.js'
export { answerClientError } from './client-error.js'
export type { ClientErrorOptions } from './client-error.js'
export type { RonServer, ServeOptions } from './serve.js'
export { SseHub, sseEvents, encodeSseEvent } from './sse.js'
export type { SseEvent, SseMessage, SseHubOptions, SseEventsOptions } from './sse.js'
export type { CorsOptions } from './cors.js'
export type { ListenerPolicy } from './listener-policy.js'
