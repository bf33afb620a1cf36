import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ed25519 } from '@noble/curves/ed25519.js'
import { describe, expect, it } from 'vitest'

interface Vector {
  name: string
  secretKey: string
  publicKey: string
  message: string
  signature: string
}
const { cases } = JSON.parse(readFileSync(new URL('../vectors/rfc8032-ed25519.json', import.meta.url), 'utf8')) as { cases: Vector[] }
const hex = (h: string): Buffer => Buffer.from(h, 'hex')
const b64u = (h: string): string => hex(h).toString('base64url')

describe('Ed25519 (RFC 8032 section 7.1 vectors)', () => {
  it('has the five vectors, including the 1023-byte message', () => {
    expect(cases.map((c) => c.name)).toEqual(['TEST 1', 'TEST 2', 'TEST 3', 'TEST 1024', 'TEST SHA(abc)'])
    expect(hex(cases[3]!.message).length).toBe(1023)
  })

  it.each(cases)('$name: node:crypto (keys imported as JWK) signs and verifies exactly as specified', (c) => {
    const priv = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: b64u(c.secretKey), x: b64u(c.publicKey) }, format: 'jwk' })
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64u(c.publicKey) }, format: 'jwk' })
    expect((createPublicKey(priv).export({ format: 'jwk' }) as { x: string }).x).toBe(b64u(c.publicKey))
    expect(sign(null, hex(c.message), priv).toString('hex')).toBe(c.signature)
    expect(verify(null, hex(c.message), pub, hex(c.signature))).toBe(true)
    const tampered = hex(c.signature)
    tampered[0]! ^= 1
    expect(verify(null, hex(c.message), pub, tampered)).toBe(false)
  })

  it.each(cases)('$name: @noble/curves agrees (independent implementation)', (c) => {
    expect(Buffer.from(ed25519.getPublicKey(hex(c.secretKey))).toString('hex')).toBe(c.publicKey)
    expect(Buffer.from(ed25519.sign(hex(c.message), hex(c.secretKey))).toString('hex')).toBe(c.signature)
    expect(ed25519.verify(hex(c.signature), hex(c.message), hex(c.publicKey))).toBe(true)
  })
})
