import { describe, expect, it } from 'vitest'
import { generateIssuerKey, signClientAssertion } from '@ron/core'
import { createPassportClient } from '../src/index.js'
import { controllableKms, payloadOf, rejection, setup, until } from './helpers.js'

describe('authority never grows (SPEC §5)', () => {
  it('an attenuated admin token (passport:issue, maxBytes 10) cannot issue a broader token: the escalation chain is refused', async () => {
    const { client, transport, admin, close } = await setup()
    try {
      const child = await client.attenuate({ token: admin.token, scope: ['passport:issue'], ttlSec: 60, caveats: { maxBytes: 10 } })
      expect(payloadOf(child.token)).toMatchObject({ sub: 'admin', scope: 'passport:issue', ron: { maxBytes: 10 } })
      const asChild = createPassportClient(transport, { token: child.token })
      // Today's escalation: every scope, an hour, no caveats.
      const broad = await rejection(asChild.issue({ sub: 'x', aud: ['storage', 'passport'], scope: ['storage:write', 'passport:issue', 'passport:admin'], ttlSec: 3600 }))
      expect([broad.status, broad.details['reason'], broad.details['field']]).toEqual([403, 'widen', 'scope'])
      // A scope it holds but an expiry past its own.
      const late = await rejection(asChild.issue({ sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 3600 }))
      expect([late.status, late.details['reason'], late.details['field']]).toEqual([403, 'widen', 'ttlSec'])
      // Dropping the caveat is widening too.
      const loose = await rejection(asChild.issue({ sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 30, caveats: { maxBytes: 11 } }))
      expect([loose.status, loose.details['reason'], loose.details['field']]).toEqual([403, 'widen', 'caveats.maxBytes'])
      // What it may mint: at most itself, with its caveat and its jti as prf.
      const ok = await asChild.issue({ sub: 'x', aud: ['passport'], scope: ['passport:issue'], ttlSec: 30 })
      expect(payloadOf(ok.token)).toMatchObject({ scope: 'passport:issue', aud: ['passport'], prf: child.jti, ron: { maxBytes: 10 } })
      expect(payloadOf(ok.token).exp).toBeLessThanOrEqual(child.exp)
    } finally {
      await close()
    }
  })

  it('a token issued from a token dies with it: revoking the issuer revokes what it minted', async () => {
    const { client, transport, admin, close } = await setup()
    try {
      const child = await client.attenuate({ token: admin.token, scope: ['passport:issue', 'storage:write'], ttlSec: 600 })
      const minted = await createPassportClient(transport, { token: child.token }).issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'], ttlSec: 300 })
      expect(payloadOf(minted.token).prf).toBe(child.jti)
      const r = await client.revoke({ jti: child.jti })
      expect(new Set(r.revoked)).toEqual(new Set([child.jti, minted.jti]))
      expect(await client.verify(minted.token)).toEqual({ valid: false, reason: 'revoked' })
      expect(await client.verify(admin.token)).toMatchObject({ valid: true })
    } finally {
      await close()
    }
  })
})

describe('issue decides on the caller token, never on its sub', () => {
  it('refuses audiences outside the caller or not named by the scopes, node: subjects, and clamps the default ttl to the caller', async () => {
    const { client, transport, clock, close } = await setup({ policy: { callers: { admin: { scopes: ['*'], audiences: ['*'] }, ops: { scopes: ['*'], audiences: ['*'] } } } })
    try {
      const narrowCaller = await client.issue({ sub: 'ops', aud: ['passport', 'storage'], scope: ['passport:issue', 'storage:write', 'index:write'], ttlSec: 600 })
      const asIt = createPassportClient(transport, { token: narrowCaller.token })
      // index:write is held, the index audience is not.
      const notHeld = await rejection(asIt.issue({ sub: 'x', aud: ['index'], scope: ['index:write'] }))
      expect([notHeld.details['reason'], notHeld.details['field']]).toEqual(['widen', 'aud'])
      const unnamed = await rejection(asIt.issue({ sub: 'x', aud: ['passport'], scope: ['storage:write'] }))
      expect([unnamed.details['reason'], unnamed.details['field']]).toEqual(['widen', 'aud'])
      const node = await rejection(asIt.issue({ sub: 'node:n0123456789abcdef', aud: ['storage'], scope: ['storage:write'] }))
      expect([node.status, node.details['reason'], node.details['field']]).toEqual([403, 'policy', 'sub'])
      // The policy default (900 s) would outlive the caller's remaining life: it stops where the caller does.
      await clock.advance(500_000)
      const t = await asIt.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] })
      expect(payloadOf(t.token).exp).toBe(narrowCaller.exp)
    } finally {
      await close()
    }
  })

  it('a caller whose policy entry is * gets no more than its token: the policy only narrows', async () => {
    const { transport, passport, close } = await setup({ policy: { callers: { '*': { scopes: ['*'], audiences: ['*'] } } } })
    try {
      const weak = await passport.mintAdminToken({ sub: 'admin', aud: ['passport', 'storage'], scope: ['passport:issue', 'storage:read'], ttlSec: 3600 })
      const e = await rejection(createPassportClient(transport, { token: weak.token }).issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] }))
      expect([e.details['reason'], e.details['field'], e.details['scope']]).toEqual(['widen', 'scope', 'storage:write'])
    } finally {
      await close()
    }
  })

  it('a token without passport:issue cannot issue, whatever its sub', async () => {
    const { client, transport, admin, close } = await setup()
    try {
      const child = await client.attenuate({ token: admin.token, scope: ['storage:write', 'passport:revoke'] })
      expect(payloadOf(child.token).sub).toBe('admin')
      const e = await rejection(createPassportClient(transport, { token: child.token }).issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] }))
      expect([e.status, e.details['reason']]).toEqual([403, 'missing_scope'])
    } finally {
      await close()
    }
  })
})

describe('caveats in requests (issue 20, item 8)', () => {
  it('attenuate accepts a namePrefix within the parent one and refuses one outside', async () => {
    const { client, close } = await setup()
    try {
      const parent = await client.issue({ sub: 'ci', aud: ['index'], scope: ['index:write'], ttlSec: 600, caveats: { namePrefix: 'docs.alice' } })
      const child = await client.attenuate({ token: parent.token, caveats: { namePrefix: 'blog.docs.alice' } })
      expect(payloadOf(child.token).ron).toEqual({ namePrefix: 'blog.docs.alice' })
      for (const outside of ['alice', 'xdocs.alice', 'docs.bob']) {
        const e = await rejection(client.attenuate({ token: parent.token, caveats: { namePrefix: outside } }))
        expect([e.status, e.details['reason'], e.details['field']]).toEqual([403, 'widen', 'caveats.namePrefix'])
      }
      expect((await rejection(client.attenuate({ token: parent.token, caveats: { namePrefix: 'Docs.Alice' } }))).status).toBe(400)
      // Omitted, it is inherited.
      expect(payloadOf((await client.attenuate({ token: child.token, ttlSec: 60 })).token).ron).toEqual({ namePrefix: 'blog.docs.alice' })
    } finally {
      await close()
    }
  })

  it.each(['/o/a/../b', '/o/./a', '/o//a', '/o/%2e%2e/b', 'o/a'])('an attenuation or issue to pathPrefix %s is refused with 400', async (pathPrefix) => {
    const { client, close } = await setup()
    try {
      const parent = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600, caveats: { pathPrefix: '/o/a' } })
      const e = await rejection(client.attenuate({ token: parent.token, caveats: { pathPrefix } }))
      expect([e.status, e.code]).toEqual([400, 'Malformed'])
      expect(JSON.stringify(e.details)).toContain('pathPrefix')
      expect((await rejection(client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], caveats: { pathPrefix } }))).status).toBe(400)
    } finally {
      await close()
    }
  })

  it('a caveat named __proto__ or constructor in a request is refused, never silently dropped', async () => {
    const { client, transport, close } = await setup()
    try {
      const parent = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
      for (const name of ['__proto__', 'constructor']) {
        const res = await transport.request('passport', {
          method: 'POST',
          path: '/v1/passport/attenuate',
          headers: { 'content-type': 'application/json' },
          body: `{"token":"${parent.token}","caveats":{"${name}":{"maxBytes":1}}}`,
        })
        expect(res.status, name).toBe(400)
        await res.dump()
      }
    } finally {
      await close()
    }
  })
})

describe('service tokens carry at most the service-call scopes (SPEC §5)', () => {
  it('mintServiceToken refuses passport:*, node:admin and admin scopes; storage:write comes with maxBytes', async () => {
    const { passport, close } = await setup({ serviceWriteMaxBytes: '64MiB' })
    try {
      for (const scope of ['passport:issue', 'passport:admin', 'node:admin', 'storage:admin', 'registry:commit']) {
        const e = await rejection(passport.mintServiceToken({ sub: 'node:n0123456789abcdef', aud: scope.split(':')[0]!, scope: [scope], ttlSec: 600 }))
        expect([e.status, e.details['reason'], e.details['scope']]).toEqual([403, 'missing_scope', scope])
      }
      const w = await passport.mintServiceToken({ sub: 'node:n0123456789abcdef', aud: 'storage', scope: ['storage:write'], ttlSec: 600 })
      expect(payloadOf(w.token)).toMatchObject({ aud: ['storage'], scope: 'storage:write', ron: { maxBytes: 64 * 1024 * 1024 } })
      const e = await rejection(passport.mintServiceToken({ sub: 'node:n0123456789abcdef', aud: 'index', scope: ['storage:replicate'], ttlSec: 600 }))
      expect([e.details['reason'], e.details['field']]).toEqual(['widen', 'aud'])
    } finally {
      await close()
    }
  })

  it("a node's client assertion yields at most the service-call scopes, even enrolled with *; enrolment refuses more", async () => {
    const { client, clock, close } = await setup()
    try {
      const nodeKey = generateIssuerKey()
      const publicJwk = { kty: 'OKP' as const, crv: 'Ed25519' as const, x: nodeKey.publicJwk.x }
      for (const scope of ['passport:issue', 'node:admin', 'storage:admin']) {
        expect((await rejection(client.enrolNode({ nodeId: 'n0123456789abcdef', publicJwk, scopes: [scope] }))).status, scope).toBe(400)
      }
      await client.enrolNode({ nodeId: 'n0123456789abcdef', publicJwk, scopes: ['*'] })
      const assertion = (): string => signClientAssertion(nodeKey, { nodeId: 'n0123456789abcdef', audience: 'passport', clock })
      const e = await rejection(client.exchange({ assertion: assertion(), aud: 'passport', scope: ['passport:issue'] }))
      expect([e.status, e.details['reason']]).toEqual([403, 'missing_scope'])
      const ok = await client.exchange({ assertion: assertion(), aud: 'storage', scope: ['storage:write'] })
      expect(payloadOf(ok.token)).toMatchObject({ sub: 'node:n0123456789abcdef', scope: 'storage:write', ron: { maxBytes: 1024 ** 3 } })
    } finally {
      await close()
    }
  })
})

describe('a mint racing a revocation (race-free by construction, see revocations.ts)', () => {
  it('a child being signed when its parent is revoked is in the revoked subtree and is never handed out', async () => {
    const kms = controllableKms()
    const { client, close } = await setup({ keystore: kms })
    try {
      const parent = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
      kms.hold()
      const minting = client.attenuate({ token: parent.token, ttlSec: 60 }).then(
        (t) => ({ ok: true as const, t }),
        (e: unknown) => ({ ok: false as const, e: e as { details: Record<string, unknown> } }),
      )
      await until(() => kms.held === 1, 'the child is being signed')
      const r = await client.revoke({ jti: parent.jti })
      // The child (adopted before it was signed) is in the revocation, under an id nobody holds yet.
      expect(r.revoked).toHaveLength(2)
      kms.release()
      const out = await minting
      expect(out.ok).toBe(false)
      if (!out.ok) expect(out.e.details['reason']).toBe('revoked')
    } finally {
      kms.release()
      await close()
    }
  })
})
