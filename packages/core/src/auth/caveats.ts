/**
 * The standard caveats of the `ron` claim and the helper that enforces them on a request.
 *
 * @module
 */

import { ForbiddenError } from '../errors.js'
import type { Claims } from './types.js'

/** What a request looks like to {@link checkCaveats}. */
export interface CaveatRequest {
  /** HTTP method, any case. */
  method: string
  /** Request path (without query). */
  path: string
  /** Declared or known body size in bytes, when the route writes. */
  bytes?: number
}

/**
 * True when `p` is a normalised path: it starts with `/` and has no `.` or `..` segment, no empty
 * segment (`//`), no backslash and no percent-encoded dot, slash or backslash (`%2e`, `%2f`,
 * `%5c`). A `pathPrefix` caveat must be one (SPEC.md section 5), so a prefix means the same thing
 * to every service whatever its path handling; `/o/` (a trailing slash) is fine.
 *
 * @example
 * ```ts
 * isNormalizedPath('/o/a')       // true
 * isNormalizedPath('/o/a/../b')  // false
 * ```
 */
export function isNormalizedPath(p: string): boolean {
  if (!p.startsWith('/') || p.includes('//') || p.includes('\\') || /%2e|%2f|%5c/i.test(p)) return false
  let start = 1
  while (start <= p.length) {
    let end = p.indexOf('/', start)
    if (end < 0) end = p.length
    const seg = p.slice(start, end)
    if (seg === '.' || seg === '..') return false
    start = end + 1
  }
  return true
}

/**
 * Enforces the standard caveats of `claims.ron` on a request:
 * - `methods`: the method must be listed (case-insensitive);
 * - `pathPrefix`: the path must start with it, at a segment boundary when the prefix does not
 *   end with `/` (so `/o/a` allows `/o/a` and `/o/a/x` but not `/o/ab`); a request path that is
 *   not normalised ({@link isNormalizedPath}: `..`, `.`, `//`, encoded dots or slashes) is refused,
 *   since a service may resolve it to somewhere outside the prefix;
 * - `maxBytes`: `bytes`, when known, must not exceed it.
 *
 * Unknown caveats are left to the service.
 *
 * @throws {@link ForbiddenError} with `details` `{ reason: 'caveat', caveat, ... }`.
 * @example
 * ```ts
 * const claims = await verifier.verify(token, { audience: 'storage', scope: 'storage:write' })
 * checkCaveats(claims, { method: 'PUT', path: '/o', bytes: contentLength })
 * ```
 */
export function checkCaveats(claims: Pick<Claims, 'ron'>, req: CaveatRequest): void {
  const ron = claims.ron
  if (!ron) return
  if (ron.methods !== undefined) {
    const m = req.method.toUpperCase()
    if (!ron.methods.some((x) => x.toUpperCase() === m)) {
      throw new ForbiddenError(`token does not allow method ${m}`, { details: { reason: 'caveat', caveat: 'methods', method: m } })
    }
  }
  if (ron.pathPrefix !== undefined) {
    const p = ron.pathPrefix
    const ok = isNormalizedPath(req.path) && (req.path === p || (req.path.startsWith(p) && (p.endsWith('/') || req.path.charAt(p.length) === '/')))
    if (!ok) {
      throw new ForbiddenError('token does not allow this path', { details: { reason: 'caveat', caveat: 'pathPrefix', pathPrefix: p } })
    }
  }
  if (ron.maxBytes !== undefined && req.bytes !== undefined && req.bytes > ron.maxBytes) {
    throw new ForbiddenError(`token allows at most ${ron.maxBytes} bytes`, {
      details: { reason: 'caveat', caveat: 'maxBytes', maxBytes: ron.maxBytes, bytes: req.bytes },
    })
  }
}

/**
 * True when the `namePrefix` caveat `prefix` allows writing `name`: the name itself or any name
 * under it (`docs.alice` allows `docs.alice` and `a.docs.alice`, not `xdocs.alice` or `alice`).
 * Comparison is on the lowercase DNS form names are stored in.
 * @example
 * ```ts
 * nameWithinPrefix('blog.docs.alice', 'docs.alice') // true
 * ```
 */
export function nameWithinPrefix(name: string, prefix: string): boolean {
  return name === prefix || (prefix.length > 0 && name.endsWith(`.${prefix}`))
}
