/**
 * A passport stand-in for benches that need capabilities minted on demand (interop's uploads):
 * `POST /v1/passport/attenuate` mints the requested child of the token in the body with the issuer
 * storage trusts (interop attenuates its upload capabilities from its own `storage:write` token).
 * No checks beyond reading the parent: a bench stand-in, not a passport.
 */
import { createHttpHandler } from '@ron/core'
import type { TestIssuer } from '@ron/core/testing'

interface AttenuateRequest {
  token: string
  aud?: string[]
  scope?: string[]
  ttlSec?: number
  caveats?: { maxBytes: number }
}

export function passportStandIn(issuer: TestIssuer): ReturnType<typeof createHttpHandler> {
  return createHttpHandler({
    serviceId: 'passport',
    routes: [
      {
        method: 'POST',
        path: '/v1/passport/attenuate',
        public: true,
        handler: async (ctx) => {
          const req = await ctx.json({ parse: (v: unknown) => v as AttenuateRequest })
          const parent = JSON.parse(Buffer.from(req.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub: string; aud: string[]; scope: string; jti: string }
          const jti = `j${Math.random().toString(36).slice(2)}`
          const token = issuer.mint({
            sub: parent.sub,
            aud: req.aud ?? parent.aud,
            scope: req.scope ?? parent.scope.split(' '),
            ttlSec: req.ttlSec ?? 60,
            jti,
            prf: parent.jti,
            ...(req.caveats === undefined ? {} : { ron: req.caveats }),
          })
          return { status: 200, json: { token, jti } }
        },
      },
    ],
  })
}
