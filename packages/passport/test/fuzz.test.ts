import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { setup } from './helpers.js'

const ROUTES = ['/v1/passport/issue', '/v1/passport/verify', '/v1/passport/verify/batch', '/v1/passport/attenuate', '/v1/passport/revoke', '/v1/passport/token', '/v1/passport/nodes']
const FIELDS = ['sub', 'aud', 'scope', 'ttlSec', 'caveats', 'token', 'tokens', 'jti', 'assertion', 'nodeId', 'publicJwk', 'scopes', 'maxBytes', 'pathPrefix', 'methods']

describe('DTO and caveat fuzzing', () => {
  it('random bodies on every route get a typed 4xx (or a success), never a 5xx or a hang', async () => {
    const { transport, admin, close } = await setup()
    try {
      const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(admin.token, 'a.b.c', -1, 1e308, '', [], {}))
      const body = fc.oneof(
        fc.dictionary(fc.constantFrom(...FIELDS, 'extra', '__proto__', 'constructor'), value, { maxKeys: 5 }),
        fc.record({ caveats: fc.dictionary(fc.constantFrom('maxBytes', 'pathPrefix', 'methods', 'budget'), value) }, { requiredKeys: [] }),
        fc.jsonValue({ maxDepth: 1 }),
      )
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...ROUTES), body, async (path, b) => {
          const res = await transport.request('passport', {
            method: 'POST',
            path,
            headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(b),
          })
          const json = await res.json<{ error?: { code: string; details: Record<string, unknown> } }>()
          expect(res.status, JSON.stringify({ path, b, json })).toBeLessThan(500)
          if (res.status === 400) expect(json.error?.code).toBe('Malformed')
        }),
        { numRuns: 300, seed: 7 },
      )
    } finally {
      await close()
    }
  })

  it('an oversized body is 413 OverLimit', async () => {
    const { transport, admin, close } = await setup()
    try {
      const res = await transport.request('passport', {
        method: 'POST',
        path: '/v1/passport/verify',
        headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ token: 'x'.repeat(2 * 1024 * 1024) }),
      })
      expect(res.status).toBe(413)
      await res.dump()
    } finally {
      await close()
    }
  })
})
