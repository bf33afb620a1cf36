/**
 * CORS for the service host (SPEC.md 6b): public reads from any origin by default, writes only
 * from an allow-list. Bearer tokens travel in `Authorization`, never in cookies, so no response
 * ever allows credentials.
 *
 * @module
 */

import { ForbiddenError } from '../errors.js'
import type { Reply, RonRequest } from './types.js'

/** CORS option of the service host. */
export interface CorsOptions {
  /**
   * Origins allowed to read (GET, HEAD). `'*'` answers `Access-Control-Allow-Origin: *`.
   * @default '*'
   */
  readOrigins?: '*' | readonly string[]
  /**
   * Origins allowed to write (POST, PUT, PATCH, DELETE), exact `scheme://host[:port]` strings.
   * @default [] (no cross-origin writes)
   */
  writeOrigins?: readonly string[]
}

/** Request headers a cross-origin caller may send. */
export const CORS_ALLOW_HEADERS =
  'Authorization, Content-Type, Content-Encoding, X-Expect-Address, X-Corr-ID, If-None-Match, If-Match, Range, Last-Event-ID'
/** Response headers a cross-origin caller may read. */
export const CORS_EXPOSE_HEADERS = 'ETag, Content-Range, Accept-Ranges, X-Corr-ID, Retry-After'
const READ_METHODS = new Set(['GET', 'HEAD'])
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const PREFLIGHT_MAX_AGE_SEC = '600'

/** The host's CORS decisions. @internal */
export interface CorsPolicy {
  /** Headers to add to the response of an actual request; `undefined` when none apply. */
  responseHeaders(method: string, origin: string | undefined): Record<string, string> | undefined
  /**
   * The answer to a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`);
   * `undefined` when `req` is not a preflight.
   * @throws {@link ForbiddenError} (`details.reason: 'cors_origin'`) when the origin may not use the method.
   */
  preflight(req: RonRequest): Reply | undefined
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

/** Builds the CORS policy of a host. @internal */
export function createCorsPolicy(options: CorsOptions = {}): CorsPolicy {
  const readAny = (options.readOrigins ?? '*') === '*'
  const read = new Set(readAny ? [] : (options.readOrigins as readonly string[]))
  const write = new Set(options.writeOrigins ?? [])

  /** The `Access-Control-Allow-Origin` value for `origin` using `method`, or undefined. */
  function allowOrigin(method: string, origin: string): string | undefined {
    if (READ_METHODS.has(method) || method === 'OPTIONS') {
      if (write.has(origin) || read.has(origin)) return origin
      return readAny ? '*' : undefined
    }
    if (WRITE_METHODS.has(method)) return write.has(origin) ? origin : undefined
    return undefined
  }

  function responseHeaders(method: string, origin: string | undefined): Record<string, string> | undefined {
    if (origin === undefined) return undefined
    const allow = allowOrigin(method, origin)
    if (allow === undefined) return readAny ? undefined : { vary: 'Origin' }
    const h: Record<string, string> = { 'access-control-allow-origin': allow, 'access-control-expose-headers': CORS_EXPOSE_HEADERS }
    if (allow !== '*') h.vary = 'Origin'
    return h
  }

  function preflight(req: RonRequest): Reply | undefined {
    if (req.method !== 'OPTIONS') return undefined
    const origin = headerValue(req.headers.origin)
    const wanted = headerValue(req.headers['access-control-request-method'])
    if (origin === undefined || wanted === undefined) return undefined
    const method = wanted.toUpperCase()
    const allow = allowOrigin(method, origin)
    if (allow === undefined) {
      throw new ForbiddenError(`origin ${origin} may not send ${method} requests here`, { details: { reason: 'cors_origin', origin, method } })
    }
    const methods = write.has(origin) ? 'GET, HEAD, POST, PUT, PATCH, DELETE' : 'GET, HEAD'
    return {
      status: 204,
      headers: {
        'access-control-allow-origin': allow,
        'access-control-allow-methods': methods,
        'access-control-allow-headers': CORS_ALLOW_HEADERS,
        'access-control-max-age': PREFLIGHT_MAX_AGE_SEC,
        vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      },
    }
  }

  return { responseHeaders, preflight }
}
