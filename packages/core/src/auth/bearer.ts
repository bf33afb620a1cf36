/**
 * Extracting a bearer token from request headers.
 *
 * @module
 */

import type { IncomingHttpHeaders } from 'node:http'

const BEARER_RE = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750), or `undefined` when the
 * header is absent, repeated, uses another scheme, or is not a single well-formed token.
 *
 * @example
 * ```ts
 * const token = bearerToken(req.headers)
 * if (token === undefined) throw new UnauthorizedError('missing token', { details: { reason: 'missing' } })
 * ```
 */
export function bearerToken(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): string | undefined {
  const h = headers['authorization']
  if (typeof h !== 'string') return undefined
  const m = BEARER_RE.exec(h)
  return m?.[1]
}
