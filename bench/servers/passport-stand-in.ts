/**
 * A passport stand-in for benches that need capabilities minted on demand (interop's uploads):
 * `POST /v1/passport/issue` mints the requested capability with the issuer storage trusts.
 */
import { createHttpHandler } from '@ron/core'
import type { TestIssuer } from '@ron/core/testing'

interface IssueRequest {
  sub: string
  aud: string[]
  scope: string[]
  ttlSec: number
  caveats?: { maxBytes: number }
}

export function passportStandIn(issuer: TestIssuer): ReturnType<typeof createHttpHandler> {
  return createHttpHandler({
    serviceId: 'passport',
    routes: [
      {
        method: 'POST',
        path: '/v1/passport/issue',
        public: true,
        handler: async (ctx) => {
          const req = await ctx.json({ parse: (v: unknown) => v as IssueRequest })
          const jti = `j${Math.random().toString(36).slice(2)}`
          return { status: 200, json: { token: issuer.mint({ sub: req.sub, aud: req.aud, scope: req.scope, ttlSec: req.ttlSec, jti, ...(req.caveats === undefined ? {} : { ron: req.caveats }) }), jti } }
        },
      },
    ],
  })
}
