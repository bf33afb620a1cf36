import { describe, expect, it } from 'vitest'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { exportIssuerKey, generateIssuerKey, signToken } from '@ron/core'
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
    // Passport's first epoch is an existing issuer key (as ron-node writes keys/issuer.json), so the
    // test can sign tokens passport's verifier accepts as its own.
    const dir = await mkdtemp(join(tmpdir(), 'passport-'))
    const key = generateIssuerKey({ epoch: 1 })
    await writeFile(join(dir, 'issuer.json'), exportIssuerKey(key), { mode: 0o600 })
    const { client, clock, close } = await setup({ issuerKeyFile: join(dir, 'issuer.json') })
    try {
      const now = T0 / 1000
      const base = { iss: 'passport', sub: 'a', aud: ['storage'], scope: 'storage:write', iat: now, exp: now + 60, jti: 'x' }
      const ok = signToken(key, { ...base, scope: ['storage:write'] })
      expect(await client.verify(ok, 'storage')).toMatchObject({ valid: true })
      const [h, p] = ok.split('.') as [string, string]
      const cases: Record<string, string> = {
        malformed: 'abc.def',
        bad_alg: `${b64({ alg: 'HS256', kid: key.kid })}.${p}.${ok.split('.')[2]}`,
        bad_signature: `${h}.${p}.${signToken(generateIssuerKey({ kid: key.kid }), { ...base, scope: ['storage:write'] }).split('.')[2]}`,
        unknown_kid: signToken(generateIssuerKey({ kid: 'nobody#9' }), { ...base, scope: ['storage:write'] }),
        not_yet_valid: signToken(key, { ...base, scope: ['storage:write'], nbf: now + 3600, exp: now + 7200 }),
        unknown_caveat: signToken(key, { ...base, scope: ['storage:write'], ron: { budget: 1 } }),
        revoked: signToken(key, { ...base, scope: ['storage:write'], jti: 'to-revoke' }),
      }
      await client.revoke({ jti: 'to-revoke' })
      for (const [reason, token] of Object.entries(cases)) expect(await client.verify(token, 'storage'), reason).toEqual({ valid: false, reason })
      expect(await client.verify(ok, 'registry')).toEqual({ valid: false, reason: 'wrong_audience' })
      await clock.advance(91_000)
      expect(await client.verify(ok)).toEqual({ valid: false, reason: 'expired' })
    } finally {
      await close()
      await rm(dir, { recursive: true, force: true })
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
    const { client, close } = await setup({ policy: { maxTtlSec: 3600, callers: { admin: { scopes: ['storage:write', 'index:write'], audiences: ['storage'] } } } })
    try {
      expect((await rejection(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:admin'] }))).details).toMatchObject({ reason: 'policy', field: 'scope' })
      expect((await rejection(client.issue({ sub: 'x', aud: ['index'], scope: ['index:write'] }))).details).toMatchObject({ reason: 'policy', field: 'aud' })
      // An audience no scope names is more than any caller holds.
      expect((await rejection(client.issue({ sub: 'x', aud: ['index'], scope: ['storage:write'] }))).details).toMatchObject({ reason: 'widen', field: 'aud' })
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
      expect(passport.health().paths).toEqual({ issue: false, revoke: true, verify: true })
      // reload() brings a policy in atomically.
      await passport.reload({ policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] } } } })
      expect(passport.health().paths).toEqual({ issue: true, revoke: true, verify: true })
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
      const text = await svc.metricsText()
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

