/**
 * Revocation routes: revoke (through the single revocation worker), the feed every verifier
 * follows, and its SSE stream.
 *
 * @module
 */

import { MalformedError, type Route } from '@ron/core'
import { revokeBodySchema } from '../dto.js'
import type { PassportContext } from './context.js'

/** Reads `jti` and `exp` from a token's claims without checking it (the caller holds passport:revoke). */
function claimsOf(token: string): { jti: string; exp: number | undefined } {
  const p = token.split('.')[1]
  let claims: { jti?: unknown; exp?: unknown } | undefined
  try {
    claims = p === undefined ? undefined : (JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as typeof claims)
  } catch {
    claims = undefined
  }
  if (typeof claims?.jti !== 'string' || claims.jti.length === 0) throw new MalformedError('token has no readable jti', { details: { field: 'token' } })
  return { jti: claims.jti, exp: typeof claims.exp === 'number' ? claims.exp : undefined }
}

/** The revocation routes. @internal */
export function revocationRoutes(ctx: PassportContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/passport/revoke',
      scope: 'passport:revoke',
      async handler(c) {
        const body = await c.json(revokeBodySchema)
        const { jti, exp } = body.token !== undefined ? claimsOf(body.token) : { jti: body.jti!, exp: undefined }
        const result = await ctx.revoke(jti, exp, c.signal)
        return { status: 202, json: result }
      },
    },
    {
      method: 'GET',
      path: '/v1/passport/revocations',
      handler(c) {
        const raw = c.query.get('since') ?? '0'
        if (!/^\d{1,15}$/.test(raw)) throw new MalformedError('since must be a non-negative integer', { details: { field: 'since' } })
        return { status: 200, headers: { 'cache-control': 'no-store' }, json: ctx.log.page(Number(raw), ctx.cfg.feedPageSize) }
      },
    },
    {
      method: 'GET',
      path: '/v1/passport/revocations/stream',
      handler: (c) => ctx.hub.reply(c),
    },
  ]
}
