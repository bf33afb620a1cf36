import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { checkCaveats, type Claims } from '@ron/core'
import { narrow, prefixWithin } from '../src/index.js'
import { payloadOf, rejection, setup } from './helpers.js'

describe('POST /v1/passport/attenuate', () => {
  it('narrows a token without a bearer token; the child names its parent in prf', async () => {
    const { client, close } = await setup()
    try {
      const parent = await client.issue({ sub: 'ci', aud: ['storage', 'index'], scope: ['storage:write', 'storage:read', 'index:write'], ttlSec: 600, caveats: { maxBytes: 1000 } })
      const child = await client.attenuate({ token: parent.token, scope: ['storage:write'], aud: ['storage'], ttlSec: 60, caveats: { maxBytes: 10, pathPrefix: '/o' } })
      const c = payloadOf(child.token)
      expect(c).toMatchObject({ sub: 'ci', aud: ['storage'], scope: 'storage:write', prf: parent.jti, ron: { maxBytes: 10, pathPrefix: '/o' } })
      expect(c.exp).toBeLessThanOrEqual(parent.exp)
      // Omitted fields inherit the parent's, caveats included.
      const same = payloadOf((await client.attenuate({ token: parent.token })).token)
      expect(same).toMatchObject({ aud: ['storage', 'index'], scope: 'storage:write storage:read index:write', exp: parent.exp, ron: { maxBytes: 1000 } })
      // Narrowing the scopes narrows omitted audiences to the services they name.
      expect(payloadOf((await client.attenuate({ token: parent.token, scope: ['index:write'] })).token)).toMatchObject({ aud: ['index'], scope: 'index:write' })
    } finally {
      await close()
    }
  })

  it.each([
    ['a scope the parent lacks', { scope: ['storage:admin'] }, 'scope'],
    ['an audience the parent lacks', { aud: ['registry'] }, 'aud'],
    ['a later expiry', { ttlSec: 601 }, 'ttlSec'],
    ['a larger maxBytes', { caveats: { maxBytes: 2000 } }, 'caveats.maxBytes'],
    ['a path outside the parent prefix', { caveats: { pathPrefix: '/other' } }, 'caveats.pathPrefix'],
    ['a method the parent does not allow', { caveats: { methods: ['DELETE'] } }, 'caveats.methods'],
  ])('refuses %s with 403', async (_n, req, field) => {
    const { client, close } = await setup()
    try {
      const parent = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600, caveats: { maxBytes: 1000, pathPrefix: '/o', methods: ['PUT'] } })
      const e = await rejection(client.attenuate({ token: parent.token, ...req }))
      expect([e.status, e.details['reason'], e.details['field']]).toEqual([403, 'widen', field])
    } finally {
      await close()
    }
  })

  it('refuses an expired, revoked or forged parent with 401', async () => {
    const { client, clock, close } = await setup()
    try {
      const p = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 60 })
      await client.revoke({ jti: p.jti })
      expect((await rejection(client.attenuate({ token: p.token }))).details).toMatchObject({ reason: 'revoked', field: 'token' })
      const q = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 60 })
      expect((await rejection(client.attenuate({ token: `${q.token.slice(0, -3)}AAA` }))).details).toMatchObject({ reason: 'bad_signature' })
      await clock.advance(120_000)
      expect((await rejection(client.attenuate({ token: q.token }))).details).toMatchObject({ reason: 'expired' })
    } finally {
      await close()
    }
  })

  it('revoking a token revokes its whole subtree, grandchildren included', async () => {
    const { client, close } = await setup()
    try {
      const root = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
      const child = await client.attenuate({ token: root.token, ttlSec: 300 })
      const sibling = await client.attenuate({ token: root.token, ttlSec: 300 })
      const grandchild = await client.attenuate({ token: child.token, ttlSec: 100 })
      const other = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
      const r = await client.revoke({ token: root.token })
      expect(new Set(r.revoked)).toEqual(new Set([root.jti, child.jti, sibling.jti, grandchild.jti]))
      for (const t of [root, child, sibling, grandchild]) expect(await client.verify(t.token)).toEqual({ valid: false, reason: 'revoked' })
      expect(await client.verify(other.token)).toMatchObject({ valid: true })
      // The feed carries every id of the subtree.
      const page = await client.revocations(0)
      expect(page.items.map((i) => i.jti)).toEqual(expect.arrayContaining(r.revoked))
      expect(page.seq).toBe(r.seq)
      // Revoking a middle node revokes only below it.
      const a = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })
      const b = await client.attenuate({ token: a.token })
      const c = await client.attenuate({ token: b.token })
      expect(new Set((await client.revoke({ jti: b.jti })).revoked)).toEqual(new Set([b.jti, c.jti]))
      expect(await client.verify(a.token)).toMatchObject({ valid: true })
    } finally {
      await close()
    }
  })
})

// ---- property: attenuation never widens ----

const SCOPES = ['storage:read', 'storage:write', 'storage:admin', 'index:write', 'registry:propose']
const AUDS = ['storage', 'index', 'registry', 'interop']
const METHODS = ['GET', 'PUT', 'POST', 'DELETE']
const PATHS = ['/o', '/o/a', '/o/ab', '/o/a/b', '/names', '/o/']
const NOW = 1_800_000_000

const subset = <T>(xs: readonly T[]) => fc.subarray([...xs], { minLength: 1 })
const caveats = fc.record(
  { maxBytes: fc.nat({ max: 5000 }), pathPrefix: fc.constantFrom(...PATHS), methods: subset(METHODS) },
  { requiredKeys: [] },
)
const parentArb = fc.record({
  scope: subset(SCOPES),
  aud: subset(AUDS),
  ttl: fc.integer({ min: 1, max: 3600 }),
  ron: caveats,
})
const requestArb = fc.record(
  { scope: subset(SCOPES), aud: subset(AUDS), ttlSec: fc.integer({ min: 1, max: 4000 }), caveats },
  { requiredKeys: [] },
)

function claimsOf(p: { scope: string[]; aud: string[]; ttl: number; ron: Record<string, unknown> }): Claims {
  return { iss: 'passport', sub: 's', aud: p.aud, scope: p.scope, iat: NOW, exp: NOW + p.ttl, jti: 'p', ...(Object.keys(p.ron).length > 0 ? { ron: p.ron } : {}) }
}

/** Would `claims` allow this request (scope, audience, method, path, size, at a time)? */
function allows(c: { scope: string[]; aud: string[]; exp: number; ron?: Record<string, unknown> }, r: { scope: string; aud: string; method: string; path: string; bytes: number; at: number }): boolean {
  if (!c.scope.includes(r.scope) || !c.aud.includes(r.aud) || r.at > c.exp) return false
  try {
    checkCaveats({ ron: c.ron ?? {} }, { method: r.method, path: r.path, bytes: r.bytes })
    return true
  } catch {
    return false
  }
}

describe('attenuation never widens (property)', () => {
  it('whatever a child allows, its parent allows; or narrowing is refused', () => {
    const probe = fc.record({
      scope: fc.constantFrom(...SCOPES),
      aud: fc.constantFrom(...AUDS),
      method: fc.constantFrom(...METHODS),
      path: fc.constantFrom(...PATHS, '/o/a/b/c', '/x'),
      bytes: fc.nat({ max: 6000 }),
      at: fc.integer({ min: NOW, max: NOW + 5000 }),
    })
    fc.assert(
      fc.property(parentArb, requestArb, fc.array(probe, { minLength: 1, maxLength: 20 }), (p, req, probes) => {
        const parent = claimsOf(p)
        let child
        try {
          child = narrow(parent, req, NOW)
        } catch (e) {
          expect((e as { code: string }).code).toBe('Forbidden')
          return
        }
        expect(child.exp).toBeLessThanOrEqual(parent.exp)
        for (const s of child.scope) expect(parent.scope).toContain(s)
        for (const a of child.aud) expect(parent.aud).toContain(a)
        const childClaims = { scope: child.scope, aud: child.aud, exp: child.exp, ...(child.caveats === undefined ? {} : { ron: child.caveats as Record<string, unknown> }) }
        for (const r of probes) {
          if (allows(childClaims, r)) expect(allows(parent, r), JSON.stringify({ parent, child, r })).toBe(true)
        }
      }),
      { numRuns: 2000, seed: 11 },
    )
  })

  it('prefixWithin follows the same segment boundary as checkCaveats', () => {
    expect(prefixWithin('/o/a', '/o')).toBe(true)
    expect(prefixWithin('/ob', '/o')).toBe(false)
    expect(prefixWithin('/o/x', '/o/')).toBe(true)
    expect(prefixWithin('/o', '/o/a')).toBe(false)
  })
})
