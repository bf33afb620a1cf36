import { describe, expect, it } from 'vitest'
import { createTestIssuer } from '@ron/core/testing'
import { signToken, type IssuerKey } from '@ron/core'
import { createPassportService } from '../src/index.js'
import { T0, headerOf, payloadOf, rejection, setup } from './helpers.js'

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

describe('issue → verify', () => {
  it('issues a standard EdDSA JWT that verifies, with the policy default ttl', async () => {
    const { client, passport, close } = await setup()
    try {
      const issued = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
      expect(issued.kid).toBe(passport.jwks().keys.find((k) => k.status === 'current')!.kid)
      expect(issued.exp).toBe(T0 / 1000 + 900)
      expect(headerOf(issued.token)).toEqual({ alg: 'EdDSA', typ: 'JWT', kid: issued.kid })
      expect(payloadOf(issued.token)).toMatchObject({ iss: 'passport', sub: 'ci', aud: ['storage'], scope: 'storage:write', iat: T0 / 1000, jti: issued.jti })
      const v = await client.verify(issued.token, 'storage')
      expect(v).toEqual({ valid: true, claims: expect.objectContaining({ sub: 'ci', scope: ['storage:write'], jti: issued.jti }) })
      expect(await client.verify(issued.token)).toMatchObject({ valid: true })
    } finally {
      await close()
    }
  })

  it('answers every failure reason of SPEC.md section 4', async () => {
    const { client, clock, passport, close } = await setup()
    try {
      const ok = (await client.issue({ sub: 'a', aud: ['storage'], scope: ['storage:write'], ttlSec: 60 })).token
      const kid = headerOf(ok)['kid'] as string
      const [h, p, s] = ok.split('.') as [string, string, string]
      const stranger = createTestIssuer({ kid })
      const claims = { ...payloadOf(ok) }
      const reasons: Record<string, string> = {
        malformed: 'abc.def',
        bad_alg: `${b64({ alg: 'HS256', kid })}.${p}.${s}`,
        bad_signature: `${h}.${p}.${stranger.mint({ scope: 'x' }).split('.')[2]}`,
        unknown_kid: createTestIssuer({ kid: 'nobody#9' }).mint({ scope: 'storage:write' }),
        wrong_audience: ok,
        not_yet_valid: signWith(stranger.key, { ...claims, nbf: T0 / 1000 + 3600 }),
        unknown_caveat: signWith(stranger.key, { ...claims, ron: { budget: 1 } }),
      }
      // not_yet_valid / unknown_caveat need passport's own key: mint them through the admin path shape.
      const own = await passport.mintAdminToken({ aud: ['storage'], scope: ['storage:write'], ttlSec: 60 })
      expect(own.kid).toBe(kid)
      for (const [reason, token] of Object.entries(reasons)) {
        if (reason === 'not_yet_valid' || reason === 'unknown_caveat') continue
        const aud = reason === 'wrong_audience' ? 'registry' : 'storage'
        expect(await client.verify(token, aud), reason).toEqual({ valid: false, reason })
      }
      const revoked = (await client.issue({ sub: 'r', aud: ['storage'], scope: ['storage:write'] })).token
      await client.revoke({ token: revoked })
      expect(await client.verify(revoked)).toEqual({ valid: false, reason: 'revoked' })
      await clock.advance(91_000)
      expect(await client.verify(ok)).toEqual({ valid: false, reason: 'expired' })
    } finally {
      await close()
    }
  })

  it('verify/batch answers each token on its own', async () => {
    const { client, close } = await setup()
    try {
      const t = (await client.issue({ sub: 'a', aud: ['storage'], scope: ['storage:read'] })).token
      const results = await client.verifyBatch([{ token: t }, { token: 'garbage' }, { token: t, aud: 'index' }])
      expect(results.map((r) => (r.valid ? 'ok' : r.reason))).toEqual(['ok', 'malformed', 'wrong_audience'])
    } finally {
      await close()
    }
  })

  it('a bearer token refused by passport is 401 with the same reason', async () => {
    const { transport, close } = await setup()
    try {
      const res = await transport.request('passport', {
        method: 'POST',
        path: '/v1/passport/issue',
        headers: { authorization: 'Bearer a.b.c', 'content-type': 'application/json' },
        body: JSON.stringify({ sub: 'x', aud: ['storage'], scope: ['storage:write'] }),
      })
      expect(res.status).toBe(401)
      expect((await res.json<{ error: { details: { reason: string } } }>()).error.details.reason).toBe('malformed')
    } finally {
      await close()
    }
  })
})

describe('policy', () => {
  it('refuses what the policy does not allow, naming the field', async () => {
    const { client, close } = await setup({ policy: { maxTtlSec: 3600, callers: { admin: { scopes: ['storage:write'], audiences: ['storage'] } } } })
    try {
      expect((await rejection(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:admin'] }))).details).toMatchObject({ reason: 'policy', field: 'scope' })
      expect((await rejection(client.issue({ sub: 'x', aud: ['index'], scope: ['storage:write'] }))).details).toMatchObject({ reason: 'policy', field: 'aud' })
      const e = await rejection(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 3601 }))
      expect([e.status, e.details['field']]).toEqual([403, 'ttlSec'])
      expect((await rejection(client.issue({ sub: 'x', aud: ['storage'], scope: ['nope:x'] }))).status).toBe(400)
      await expect(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 3600 })).resolves.toBeDefined()
    } finally {
      await close()
    }
  })

  it('issues nothing without a policy (503 no_policy, issue path unready), verifies still', async () => {
    const { client, passport, close } = await setup({ policy: undefined })
    try {
      const e = await rejection(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] }))
      expect([e.status, e.code, e.details['reason']]).toEqual([503, 'NotReady', 'no_policy'])
      expect(passport.health().paths).toEqual({ issue: false, verify: true })
      // reload() brings a policy in atomically.
      await passport.reload({ policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] } } } })
      expect(passport.health().paths).toEqual({ issue: true, verify: true })
      await expect(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] })).resolves.toBeDefined()
    } finally {
      await close()
    }
  })

  it('a reload with an invalid policy is refused and the old one stays', async () => {
    const { client, passport, close } = await setup()
    try {
      await expect(passport.reload({ policy: { maxTtlSec: 10, defaultTtlSec: 20 } })).rejects.toMatchObject({ code: 'Malformed' })
      await expect(passport.reload({ dataDir: '/elsewhere' })).rejects.toMatchObject({ code: 'Malformed' })
      await expect(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] })).resolves.toBeDefined()
    } finally {
      await close()
    }
  })
})

describe('strict DTOs', () => {
  it.each([
    ['/v1/passport/issue', { sub: 'x', aud: ['storage'], scope: ['storage:write'], extra: 1 }, 'extra'],
    ['/v1/passport/issue', { sub: 'x', aud: ['storage'], scope: ['storage:write'], caveats: { budget: 1 } }, 'caveats.budget'],
    ['/v1/passport/verify', { token: 't', audience: 'x' }, 'audience'],
    ['/v1/passport/attenuate', { token: 't', scopes: [] }, 'scopes'],
    ['/v1/passport/revoke', { jti: 'a', why: 'x' }, 'why'],
    ['/v1/passport/revoke', { jti: 'a', token: 'b' }, 'jti'],
    ['/v1/passport/token', { assertion: 'a', aud: 'storage', scope: ['x'], ttlSec: 1 }, 'ttlSec'],
    ['/v1/passport/nodes', { nodeId: 'n', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: 'a', d: 'secret' }, scopes: ['x'] }, 'publicJwk.d'],
  ])('%s refuses %j with 400 naming %s', async (path, body, field) => {
    const { transport, admin, close } = await setup()
    try {
      const res = await transport.request('passport', {
        method: 'POST',
        path,
        headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(400)
      expect((await res.json<{ error: { details: { field: string } } }>()).error.details.field).toBe(field)
    } finally {
      await close()
    }
  })
})

describe('startup', () => {
  it('registers every metric at startup', async () => {
    const svc = await createPassportService({})
    try {
      const text = await svc.metrics.metrics()
      for (const [name, label] of [
        ['queue_dropped_total', 'queue="issue"'],
        ['queue_dropped_total', 'queue="revoke"'],
        ['busy_rejections_total', 'queue="issue"'],
        ['tokens_issued_total', 'kind="issue"'],
        ['revocations_total', ''],
        ['kms_call_latency_seconds_count', 'op="sign"'],
        ['revocation_propagation_seconds_count', ''],
        ['epoch_current', ''],
        ['io_timeouts_total', 'op="kms"'],
        ['bus_lagged_total', 'topic="policy"'],
        ['passport_issue_latency_seconds_count', ''],
        ['config_reloads_total', ''],
      ] as const) {
        const found = text.split('\n').some((l) => l.startsWith(`${name}{`) && l.includes(label))
        expect(found, `${name}{${label}}`).toBe(true)
      }
      expect(text).toMatch(/epoch_current\{service="passport"\} 1/)
    } finally {
      await svc.close()
    }
  })
})

function signWith(key: IssuerKey, claims: Record<string, unknown>): string {
  return signToken(key, { ...(claims as never), ttlSec: undefined })
}
