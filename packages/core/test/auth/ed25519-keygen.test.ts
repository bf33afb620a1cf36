import { sign, verify } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { generateEd25519KeyPair, isStrongEd25519Key } from '../../src/index.js'

describe('generateEd25519KeyPair', () => {
  it('makes a fresh, strong Ed25519 pair whose halves sign and verify together', () => {
    const a = generateEd25519KeyPair()
    const b = generateEd25519KeyPair()
    const jwk = a.publicKey.export({ format: 'jwk' }) as { kty: string; crv: string; x: string }
    expect([jwk.kty, jwk.crv]).toEqual(['OKP', 'Ed25519'])
    expect(isStrongEd25519Key(Buffer.from(jwk.x, 'base64url'))).toBe(true)
    expect((b.publicKey.export({ format: 'jwk' }) as { x: string }).x).not.toBe(jwk.x)
    const msg = Buffer.from('checkpoint')
    const sig = sign(null, msg, a.privateKey)
    expect(verify(null, msg, a.publicKey, sig)).toBe(true)
    expect(verify(null, msg, b.publicKey, sig)).toBe(false)
  })
})
