import { sign, verify } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { MalformedError } from '../../src/errors.js'
import {
  RevocationSet,
  createTokenVerifier,
  exportIssuerKey,
  generateIssuerKey,
  importIssuerKey,
  isStrongEd25519Key,
  jwkThumbprint,
  publicKeyFromJwk,
  staticKeySource,
} from '../../src/auth/index.js'

describe('issuer keys', () => {
  it('the JWK thumbprint matches the RFC 8037 appendix A.3 example', () => {
    expect(jwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' })).toBe('kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k')
  })

  it('the default kid is the thumbprint and the epoch', () => {
    const k = generateIssuerKey({ epoch: 7 })
    expect(k.kid).toBe(`${jwkThumbprint(k.publicJwk)}#7`)
    expect(k.kid).toMatch(/^[A-Za-z0-9_-]{43}#7$/)
    expect(generateIssuerKey().kid.endsWith('#1')).toBe(true)
    expect(generateIssuerKey({ kid: 'mine' }).kid).toBe('mine')
    expect(k.publicJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', kid: k.kid, alg: 'EdDSA', use: 'sig' })
    expect(k.publicJwk).not.toHaveProperty('d')
  })

  it('export then import round-trips the key and keeps the kid', () => {
    const k = generateIssuerKey({ epoch: 3 })
    const text = exportIssuerKey(k)
    const back = importIssuerKey(text)
    expect(back.kid).toBe(k.kid)
    expect(back.publicJwk).toEqual(k.publicJwk)
    const sig = sign(null, Buffer.from('m'), back.privateKey)
    expect(verify(null, Buffer.from('m'), k.publicKey, sig)).toBe(true)
  })

  it('import rejects non-JSON, public-only, non-Ed25519 and mismatched keys with Malformed', () => {
    const k = generateIssuerKey()
    const other = generateIssuerKey()
    const jwk = JSON.parse(exportIssuerKey(k)) as Record<string, unknown>
    expect(() => importIssuerKey('not json')).toThrow(MalformedError)
    expect(() => importIssuerKey(JSON.stringify(k.publicJwk))).toThrow(MalformedError)
    expect(() => importIssuerKey(JSON.stringify({ ...jwk, crv: 'X25519' }))).toThrow(MalformedError)
    expect(() => importIssuerKey(JSON.stringify({ ...jwk, x: other.publicJwk.x }))).toThrow(MalformedError)
    expect(() => importIssuerKey('null')).toThrow(MalformedError)
  })

  it('publicKeyFromJwk accepts Ed25519 public JWKs and ignores anything else', () => {
    const k = generateIssuerKey()
    expect(publicKeyFromJwk(k.publicJwk)?.asymmetricKeyType).toBe('ed25519')
    expect(publicKeyFromJwk({ ...k.publicJwk, alg: 'ES256' })).toBeUndefined()
    expect(publicKeyFromJwk({ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' })).toBeUndefined()
    expect(publicKeyFromJwk({ kty: 'OKP', crv: 'Ed25519', x: 'short' })).toBeUndefined()
    expect(publicKeyFromJwk(null)).toBeUndefined()
  })
})

describe('weak public keys (small order, non-canonical)', () => {
  const b64 = (h: string): string => Buffer.from(h, 'hex').toString('base64url')
  const IDENTITY = '01' + '00'.repeat(31)

  it('node:crypto verifies R = identity, S = 0 under the identity key for any message; publicKeyFromJwk refuses that key', async () => {
    const { ED25519_TORSION_SUBGROUP } = await import('@noble/curves/ed25519.js')
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: b64(IDENTITY) }
    const forged = Buffer.concat([Buffer.from(IDENTITY, 'hex'), Buffer.alloc(32)])
    // The reason for the check: OpenSSL accepts this forgery.
    const { createPublicKey } = await import('node:crypto')
    expect(verify(null, Buffer.from('any message'), createPublicKey({ key: jwk, format: 'jwk' }), forged)).toBe(true)
    expect(publicKeyFromJwk(jwk)).toBeUndefined()
    for (const h of ED25519_TORSION_SUBGROUP) {
      expect(isStrongEd25519Key(Buffer.from(h, 'hex')), h).toBe(false)
      expect(publicKeyFromJwk({ kty: 'OKP', crv: 'Ed25519', x: b64(h) }), h).toBeUndefined()
    }
  })

  it('a token forged under a small-order key in a key set is refused (the key never enters the set)', async () => {
    const kid = 'weak#1'
    const keys = staticKeySource({ keys: [{ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', kid, x: b64(IDENTITY) }] })
    const enc = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url')
    const now = Math.floor(Date.now() / 1000)
    const signingInput = `${enc({ alg: 'EdDSA', typ: 'JWT', kid })}.${enc({ iss: 'x', sub: 'mallory', aud: ['storage'], scope: 'storage:write', iat: now, exp: now + 600, jti: 'j' })}`
    const token = `${signingInput}.${Buffer.concat([Buffer.from(IDENTITY, 'hex'), Buffer.alloc(32)]).toString('base64url')}`
    const verifier = createTokenVerifier({ keys, revocations: new RevocationSet() })
    await expect(verifier.verify(token, { audience: 'storage', scope: 'storage:write' })).rejects.toMatchObject({ code: 'Unauthorized', details: { reason: 'unknown_kid' } })
  })

  it('ordinary keys pass', () => {
    for (let i = 0; i < 10; i++) {
      const k = generateIssuerKey()
      expect(isStrongEd25519Key(Buffer.from(k.publicJwk.x, 'base64url'))).toBe(true)
      expect(publicKeyFromJwk(k.publicJwk)).toBeDefined()
    }
  })
})
