import { readFileSync } from 'node:fs'
import { createHmac, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto'
import { UnsecuredJWT, createLocalJWKSet, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { ed25519Verify, publicKeyFromJwk } from '@ron/core'
import { T0, headerOf, setup } from './helpers.js'

const b64 = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

describe('interop with jose', () => {
  it('jose verifies our tokens with the published JWKS, across a rotation', async () => {
    const { client, clock, close } = await setup()
    try {
      const before = (await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })).token
      await client.rotate()
      const after = (await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })).token
      expect(headerOf(before)['kid']).not.toBe(headerOf(after)['kid'])
      const jwks = createLocalJWKSet(await client.keys())
      for (const t of [before, after]) {
        const { payload, protectedHeader } = await jwtVerify(t, jwks, { algorithms: ['EdDSA'], audience: 'storage', issuer: 'passport', currentDate: new Date(clock.now()) })
        expect(protectedHeader.alg).toBe('EdDSA')
        expect(payload.scope).toBe('storage:write')
      }
    } finally {
      await close()
    }
  })

  it('refuses what jose accepts when told to but our policy forbids: none, HS256 with the public key, crit', async () => {
    const { client, close } = await setup()
    try {
      const good = (await client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })).token
      const claims = JSON.parse(Buffer.from(good.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
      const kid = headerOf(good)['kid'] as string
      const jwk = (await client.keys()).keys.find((k) => k.kid === kid)!
      const now = { currentDate: new Date(T0) }

      // alg none: jose's UnsecuredJWT reads it.
      const none = new UnsecuredJWT(claims).encode()
      expect(UnsecuredJWT.decode(none, now).payload['sub']).toBe('ci')
      expect(await client.verify(none)).toEqual({ valid: false, reason: 'bad_alg' })

      // HS256 MACed with the public key as the secret: jose accepts it when handed that secret.
      const secret = Buffer.from(jwk.x, 'base64url')
      const input = `${b64({ alg: 'HS256', typ: 'JWT', kid })}.${b64(claims)}`
      const hs = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
      await expect(jwtVerify(hs, secret, now)).resolves.toBeDefined()
      expect(await client.verify(hs)).toEqual({ valid: false, reason: 'bad_alg' })

      // crit: jose accepts a critical header it is told to understand; we understand none.
      const mine = generateKeyPairSync('ed25519')
      const critInput = `${b64({ alg: 'EdDSA', kid, crit: ['urn:x'], 'urn:x': true })}.${b64(claims)}`
      const crit = `${critInput}.${sign(null, Buffer.from(critInput), mine.privateKey).toString('base64url')}`
      await expect(jwtVerify(crit, mine.publicKey, { ...now, crit: { 'urn:x': true } })).resolves.toBeDefined()
      expect(await client.verify(crit)).toEqual({ valid: false, reason: 'malformed' })

      // alg confusion: an ES256 header over our signature.
      const [, p, s] = good.split('.')
      expect(await client.verify(`${b64({ alg: 'ES256', kid })}.${p}.${s}`)).toEqual({ valid: false, reason: 'bad_alg' })
    } finally {
      await close()
    }
  })
})

interface WycheproofTest {
  tcId: number
  comment: string
  msg: string
  sig: string
  result: 'valid' | 'invalid' | 'acceptable'
}
interface WycheproofGroup {
  publicKey: { pk: string }
  tests: WycheproofTest[]
}

describe('Ed25519 conformance vectors through the verifier signature step', () => {
  const hex = (h: string): Buffer => Buffer.from(h, 'hex')
  const keyOf = (pkHex: string) => publicKeyFromJwk({ kty: 'OKP', crv: 'Ed25519', x: hex(pkHex).toString('base64url') })

  it('RFC 8032 section 7.1', () => {
    const { cases } = JSON.parse(readFileSync(new URL('./vectors/rfc8032-ed25519.json', import.meta.url), 'utf8')) as {
      cases: Array<{ name: string; publicKey: string; message: string; signature: string }>
    }
    expect(cases).toHaveLength(5)
    for (const c of cases) {
      const key = keyOf(c.publicKey)!
      expect(ed25519Verify(key, hex(c.message), hex(c.signature)), c.name).toBe(true)
      const bad = hex(c.signature)
      bad[10]! ^= 0x40
      expect(ed25519Verify(key, hex(c.message), bad), c.name).toBe(false)
    }
  })

  it('every Wycheproof EdDSA vector (valid accepted, invalid refused)', () => {
    const doc = JSON.parse(readFileSync(new URL('./vectors/wycheproof-ed25519.json', import.meta.url), 'utf8')) as { numberOfTests: number; testGroups: WycheproofGroup[] }
    let n = 0
    for (const g of doc.testGroups) {
      const key = keyOf(g.publicKey.pk)
      for (const t of g.tests) {
        n++
        const ok = key !== undefined && ed25519Verify(key, hex(t.msg), hex(t.sig))
        expect(ok, `tcId ${t.tcId} ${t.comment}`).toBe(t.result === 'valid')
      }
    }
    expect(n).toBe(doc.numberOfTests)
  })

  it('a token signed with the RFC 8032 TEST 1 key round-trips through the full verifier', async () => {
    const d = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60'
    const x = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a'
    const priv = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: hex(d).toString('base64url'), x: hex(x).toString('base64url') }, format: 'jwk' })
    const { passport, close } = await setup()
    try {
      const kid = 'rfc8032#1'
      const input = `${b64({ alg: 'EdDSA', kid })}.${b64({ iss: 'passport', sub: 's', aud: ['storage'], scope: 'storage:read', iat: T0 / 1000, exp: T0 / 1000 + 60, jti: 'v' })}`
      const token = `${input}.${sign(null, Buffer.from(input), priv).toString('base64url')}`
      // Passport does not know that key: unknown_kid, while the signature itself checks out.
      await expect(passport.verifier.verify(token, { audience: 'storage' })).rejects.toMatchObject({ details: { reason: 'unknown_kid' } })
      expect(ed25519Verify(keyOf(x)!, Buffer.from(input), Buffer.from(token.split('.')[2]!, 'base64url'))).toBe(true)
    } finally {
      await close()
    }
  })
})
