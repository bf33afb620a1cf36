import { describe, expect, it } from 'vitest'
import { generateIssuerKey } from '@ron/core'
import { setup } from './helpers.js'

/** One valid body per route, so that the only fault in each case is the added field. */
describe('strict DTOs (SPEC.md section 4)', () => {
  it('an unknown field, top-level or nested, is 400 Malformed naming the field on every body route', async () => {
    const { transport, admin, client, close } = await setup()
    try {
      const { token } = await client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:read'] })
      const nodeJwk = { kty: 'OKP', crv: 'Ed25519', x: generateIssuerKey({ kid: 'n1' }).publicJwk.x }
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ['/v1/passport/issue', { sub: 'x', aud: ['storage'], scope: ['storage:read'], extra: 1 }, 'extra'],
        ['/v1/passport/issue', { sub: 'x', aud: ['storage'], scope: ['storage:read'], caveats: { budget: 5 } }, 'caveats.budget'],
        ['/v1/passport/verify', { token, audience: 'storage' }, 'audience'],
        ['/v1/passport/verify/batch', { tokens: [{ token, extra: true }] }, 'tokens.0.extra'],
        ['/v1/passport/verify/batch', { tokens: [], more: 1 }, 'more'],
        ['/v1/passport/attenuate', { token, scopes: ['storage:read'] }, 'scopes'],
        ['/v1/passport/revoke', { jti: 'abc', reason: 'lost' }, 'reason'],
        ['/v1/passport/token', { assertion: 'a.b.c', aud: 'storage', scope: ['storage:read'], nodeId: 'n' }, 'nodeId'],
        ['/v1/passport/nodes', { nodeId: 'n1', publicJwk: { ...nodeJwk, d: 'secret' }, scopes: ['storage:read'] }, 'publicJwk.d'],
      ]
      for (const [path, body, field] of cases) {
        const res = await transport.request('passport', {
          method: 'POST',
          path,
          headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        const json = await res.json<{ error: { code: string; message: string; details: { field?: string } } }>()
        expect([path, res.status, json.error.code, json.error.details.field], JSON.stringify(json)).toEqual([path, 400, 'Malformed', field])
        expect(json.error.message).toContain(field)
      }
    } finally {
      await close()
    }
  })
})
