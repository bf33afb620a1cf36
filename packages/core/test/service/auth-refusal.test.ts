/**
 * The host's token check rejects (never throws synchronously) for every refusal, whether it comes
 * from the missing verifier, a missing token, or a verifier that throws instead of rejecting; the
 * route answers 401 with the envelope either way.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { UnauthorizedError, createServiceHost, type RonService, type TokenVerifier, type Topology } from '@ron/core'
import { mkReq, readJson } from '../http/helpers.js'

const topology: Topology = { service: 'svc', tasks: [], channels: [] }
const services: RonService[] = []
afterEach(async () => {
  for (const s of services.splice(0)) await s.close()
})

function host(verifier?: TokenVerifier) {
  const h = createServiceHost({ id: 'svc', version: '1', topology, ...(verifier === undefined ? {} : { auth: { verifier } }) })
  h.routes([{ method: 'GET', path: '/secret', scope: 'svc:read', handler: (ctx) => ({ status: 200, json: { sub: ctx.auth?.sub } }) }])
  services.push(h.service)
  return h
}

describe('host token refusals', () => {
  it('authenticate() returns a rejected promise for no verifier, a missing token and a verifier that throws synchronously', async () => {
    const throwing: TokenVerifier = {
      verify() {
        throw new UnauthorizedError('bad token', { details: { reason: 'malformed' } })
      },
    }
    const cases: Array<[ReturnType<typeof host>, Record<string, string>, string]> = [
      [host(), { authorization: 'Bearer x' }, 'no_verifier'],
      [host(throwing), {}, 'missing'],
      [host(throwing), { authorization: 'Bearer x' }, 'malformed'],
    ]
    for (const [h, headers, reason] of cases) {
      let p: Promise<unknown> | undefined
      expect(() => (p = h.authenticate(mkReq('GET', '/secret', { headers }), 'svc:read'))).not.toThrow()
      await expect(p).rejects.toMatchObject({ code: 'Unauthorized', details: { reason } })
      const res = await h.service.dispatch(mkReq('GET', '/secret', { headers }))
      expect(res.status).toBe(401)
      expect(await readJson(res)).toMatchObject({ error: { code: 'Unauthorized', details: { reason } } })
    }
  })
})
