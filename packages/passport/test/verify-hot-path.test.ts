import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isPlainVerifyBody, verifyBodyParser, verifyBodySchema } from '../src/dto.js'
import { setup } from './helpers.js'

/** What a parser does with a value: its output, or the first issue's code and path. */
function outcome(parse: (v: unknown) => unknown, v: unknown): unknown {
  try {
    return { ok: parse(v) }
  } catch (e) {
    const issue = (e as { issues?: Array<{ code: string; path: PropertyKey[]; keys?: string[] }> }).issues?.[0]
    return { error: issue === undefined ? String(e) : [issue.code, issue.path, issue.keys] }
  }
}

describe('verify body fast path', () => {
  it('accepts and refuses exactly what the zod schema does, with the same output and the same first issue', () => {
    const key = fc.constantFrom('token', 'aud', 'audience', 'extra', '__proto__', 'toString')
    const value = fc.oneof(fc.string(), fc.constantFrom('', ' ', 'storage', 'a b', 'x\t', 'ok'), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }))
    const body = fc.oneof(
      fc.dictionary(key, value, { maxKeys: 4 }),
      fc.record({ token: fc.string(), aud: fc.string() }, { requiredKeys: ['token'] }),
      fc.constantFrom(null, 'token', 42, [], [{ token: 'a' }]),
      // As the wire delivers them, a JSON "__proto__" key included.
      fc.constantFrom('{"__proto__":{"token":"a"}}', '{"token":"a","__proto__":1}', '{"token":"a","aud":"s"}', '{"token":""}').map((t) => JSON.parse(t) as unknown),
    )
    fc.assert(
      fc.property(body, (v) => {
        expect(outcome((x) => verifyBodyParser.parse(x), v)).toEqual(outcome((x) => verifyBodySchema.parse(x), v))
      }),
      { numRuns: 2000, seed: 11 },
    )
  })

  it('takes the fast path only for a well-formed body', () => {
    expect(isPlainVerifyBody({ token: 'a.b.c' })).toBe(true)
    expect(isPlainVerifyBody({ token: 'a.b.c', aud: 'storage' })).toBe(true)
    expect(isPlainVerifyBody({ token: 'a.b.c', aud: '' })).toBe(false)
    expect(isPlainVerifyBody({ token: 'a.b.c', aud: 'two words' })).toBe(false)
    expect(isPlainVerifyBody({ token: 'a.b.c', aud: undefined })).toBe(false)
    expect(isPlainVerifyBody({ token: 'a.b.c', extra: 1 })).toBe(false)
    expect(isPlainVerifyBody(Object.create({ token: 'inherited' }))).toBe(false)
  })
})

describe('verify replies', () => {
  it('answer the same text for repeated uses of a token, and still see a revocation and expiry on the next use', async () => {
    const { transport, client, clock, close } = await setup()
    try {
      const issued = await client.issue({ sub: 'hot', aud: ['storage'], scope: ['storage:read'], ttlSec: 60 })
      const post = async (body: unknown) => {
        const res = await transport.request('passport', { method: 'POST', path: '/v1/passport/verify', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
        return { status: res.status, type: res.headers['content-type'], text: await res.text() }
      }
      const first = await post({ token: issued.token, aud: 'storage' })
      const second = await post({ token: issued.token, aud: 'storage' })
      expect(first.status).toBe(200)
      expect(first.type).toBe('application/json')
      expect(second).toEqual(first)
      expect(JSON.parse(first.text)).toEqual({ valid: true, claims: expect.objectContaining({ sub: 'hot', jti: issued.jti, aud: ['storage'], scope: ['storage:read'] }) })
      // The audience is still checked on a cached token.
      expect(JSON.parse((await post({ token: issued.token, aud: 'index' })).text)).toEqual({ valid: false, reason: 'wrong_audience' })

      const other = await client.issue({ sub: 'hot2', aud: ['storage'], scope: ['storage:read'], ttlSec: 60 })
      expect(JSON.parse((await post({ token: other.token })).text)).toMatchObject({ valid: true })
      await client.revoke({ jti: other.jti })
      const refused = await post({ token: other.token })
      expect(refused).toEqual({ status: 200, type: 'application/json', text: '{"valid":false,"reason":"revoked"}' })
      expect((await post({ token: other.token })).text).toBe(refused.text)

      await clock.advance(10 * 60_000)
      expect(JSON.parse((await post({ token: issued.token, aud: 'storage' })).text)).toEqual({ valid: false, reason: 'expired' })
    } finally {
      await close()
    }
  })
})
