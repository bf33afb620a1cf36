import { describe, expect, it } from 'vitest'
import { HttpTransport, createTokenProvider, generateIssuerKey, serve, signClientAssertion, sseEvents } from '@ron/core'
import { createPassportClient, createPassportService, passportMinter, remotePassportMinter } from '../src/index.js'
import { ADMIN_POLICY, T0, payloadOf, rejection, setup } from './helpers.js'

describe('service identity: node enrolment and the client assertion exchange', () => {
  it('trades an enrolled node assertion for a short-lived service token, once', async () => {
    const { client, clock, transport, close } = await setup()
    try {
      const nodeKey = generateIssuerKey({ kid: 'node-b#1' })
      await client.enrolNode({ nodeId: 'b', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: nodeKey.publicJwk.x }, scopes: ['storage:replicate', 'index:announce'] })
      const assertion = signClientAssertion(nodeKey, { nodeId: 'b', audience: 'passport', clock })
      const anon = createPassportClient(transport)
      const t = await anon.exchange({ assertion, aud: 'index', scope: ['index:announce'] })
      expect(payloadOf(t.token)).toMatchObject({ sub: 'node:b', aud: ['index'], scope: 'index:announce', exp: T0 / 1000 + 600 })
      // Replay of the same assertion is refused.
      expect((await rejection(anon.exchange({ assertion, aud: 'index', scope: ['index:announce'] }))).details['reason']).toBe('revoked')
      // Scopes beyond the enrolment are refused.
      const again = signClientAssertion(nodeKey, { nodeId: 'b', audience: 'passport', clock })
      expect((await rejection(anon.exchange({ assertion: again, aud: 'storage', scope: ['storage:admin'] }))).status).toBe(403)
      // An unknown node, another key, an expired assertion.
      const stranger = generateIssuerKey()
      expect((await rejection(anon.exchange({ assertion: signClientAssertion(stranger, { nodeId: 'c', audience: 'passport', clock }), aud: 'index', scope: ['index:announce'] }))).details['reason']).toBe('unknown_kid')
      expect((await rejection(anon.exchange({ assertion: signClientAssertion(stranger, { nodeId: 'b', audience: 'passport', clock }), aud: 'index', scope: ['index:announce'] }))).details['reason']).toBe('bad_signature')
      const old = signClientAssertion(nodeKey, { nodeId: 'b', audience: 'passport', clock })
      await clock.advance(120_000)
      expect((await rejection(anon.exchange({ assertion: old, aud: 'index', scope: ['index:announce'] }))).details['reason']).toBe('expired')
      expect((await rejection(anon.exchange({ assertion: signClientAssertion(nodeKey, { nodeId: 'b', audience: 'registry', clock }), aud: 'index', scope: ['index:announce'] }))).details['reason']).toBe('wrong_audience')
    } finally {
      await close()
    }
  })

  it('core token providers mint through passport: in process, and by client assertion', async () => {
    const { client, clock, transport, passport, close } = await setup()
    try {
      const local = createTokenProvider({ minter: passportMinter(passport, { sub: 'node:a' }), clock })
      const t1 = await local.token({ aud: 'storage', scope: ['storage:write'] })
      expect(payloadOf(t1)).toMatchObject({ sub: 'node:a', aud: ['storage'], scope: 'storage:write' })
      expect(await local.token({ aud: 'storage', scope: ['storage:write'] })).toBe(t1) // cached
      const nodeKey = generateIssuerKey()
      await client.enrolNode({ nodeId: 'b', publicJwk: { kty: 'OKP', crv: 'Ed25519', x: nodeKey.publicJwk.x }, scopes: ['*'] })
      const remote = createTokenProvider({ minter: remotePassportMinter(transport, { nodeId: 'b', nodeKey, clock }), clock })
      const t2 = await remote.token({ aud: 'index', scope: ['index:announce'] })
      expect(await client.verify(t2, 'index')).toMatchObject({ valid: true, claims: { sub: 'node:b' } })
      local.close()
      remote.close()
    } finally {
      await close()
    }
  })
})

describe('over real sockets', () => {
  it('issue, attenuate, verify, revoke and follow the SSE stream over HTTP', async () => {
    const passport = await createPassportService({ policy: ADMIN_POLICY })
    const server = await serve(passport)
    const transport = new HttpTransport({ targets: { passport: server.url } })
    const abort = new AbortController()
    try {
      const admin = await passport.mintAdminToken({ aud: ['passport', 'storage'], scope: ['passport:issue', 'passport:revoke', 'passport:admin', 'storage:write'], ttlSec: 3600 })
      const client = createPassportClient(transport, { token: admin.token })
      const jwks = await (await fetch(`${server.url}/.well-known/jwks.json`)).json() as { keys: Array<{ status: string }> }
      expect(jwks.keys.map((k) => k.status)).toEqual(['current', 'next'])

      const stream = await fetch(`${server.url}/v1/passport/revocations/stream`, { signal: abort.signal })
      expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/)
      const events = sseEvents(stream.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()

      const { token } = await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
      const child = await client.attenuate({ token, caveats: { maxBytes: 10 } })
      expect(await client.verify(child.token, 'storage')).toMatchObject({ valid: true, claims: { ron: { maxBytes: 10 } } })
      const r = await client.revoke({ token })
      expect(r.revoked).toHaveLength(2)
      const seen: string[] = []
      while (seen.length < 2) {
        const e = await events.next()
        if (e.done === true) break
        if (e.value.event === 'revocation') seen.push((JSON.parse(e.value.data) as { jti: string }).jti)
      }
      expect(new Set(seen)).toEqual(new Set(r.revoked))
      expect((await client.revocations(0)).items).toHaveLength(2)
      const res = await fetch(`${server.url}/readyz`)
      expect(((await res.json()) as { paths: Record<string, boolean> }).paths).toEqual({ issue: true, revoke: true, verify: true })
    } finally {
      abort.abort()
      await transport.close()
      await server.close()
      await passport.close()
    }
  })
})
