/**
 * The RON HTTP host: route types, {@link createHttpHandler} and {@link serve}.
 *
 * @module
 */

export type { HttpMethod, RonRequest, ReplyBody, ReplyHeaders, Reply, RonResponse, RouteContext, Route } from './types.js'
export { createHttpHandler } from './handler.js'
export type { HttpHandler, HttpHandlerOptions, HttpHooks, HttpLimits } from './handler.js'
export { RouteConfigError } from './router.js'
export { CORR_ID_HEADER, corrIdFrom, generateCorrId, isValidCorrId } from './corr-id.js'
export { DECOMPRESSION_SLACK } from './body.js'
export { serve } from './serve.js'
export type { RonServer, ServeOptions } from './serve.js'
export { SseHub, sseEvents, encodeSseEvent } from './sse.js'
export type { SseEvent, SseMessage, SseHubOptions, SseEventsOptions } from './sse.js'
export type { CorsOptions } from './cors.js'
