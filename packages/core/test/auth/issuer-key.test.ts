import { sign, verify } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { MalformedError } from '../../src/errors.js'
import { exportIssuerKey, generateIssuerKey, importIssuerKey, jwkThumbprint, publicKeyFromJwk } from '../../src/auth/index.js'

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
