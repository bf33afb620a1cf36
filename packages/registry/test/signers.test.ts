import { readFileSync } from 'node:fs'
import { createPublicKey, verify } from 'node:crypto'
import { ED25519_TORSION_SUBGROUP, ed25519 } from '@noble/curves/ed25519.js'
import { describe, expect, it } from 'vitest'
import { generateSignerKey, isStrongEd25519Key, publicKeyObject, signApproval, verifyApprovalSig, type ApprovalSubject } from '../src/signers.js'

const hex = (h: string): Buffer => Buffer.from(h, 'hex')
const subject: ApprovalSubject = { origin: 'test.ron/registry', baseVersion: 7, payloadB3: `b3:${'ab'.repeat(32)}` }
const L = (1n << 252n) + 27742317777372353535851937790883648493n
const P = (1n << 255n) - 19n
const le = (n: bigint): Buffer => {
  const b = Buffer.alloc(32)
  for (let i = 0; i < 32; i++) {
    b[i] = Number(n & 255n)
    n >>= 8n
  }
  return b
}
const fromLe = (b: Uint8Array): bigint => {
  let n = 0n
  for (let i = b.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(b[i]!)
  return n
}

describe('approval signatures: strict Ed25519', () => {
  it('refuses the eight small-order points (noble torsion subgroup), whatever node:crypto says', () => {
    expect(ED25519_TORSION_SUBGROUP).toHaveLength(8)
    for (const h of ED25519_TORSION_SUBGROUP) {
      // Some of these encodings are non-canonical or off the curve for noble; all are weak keys.
      expect(isStrongEd25519Key(hex(h)), h).toBe(false)
      expect(publicKeyObject(hex(h).toString('base64url'))).toBeUndefined()
    }
  })

  it('agrees with noble on random keys and on keys shifted by a torsion point (mixed order: accepted)', () => {
    for (let i = 0; i < 40; i++) {
      const pub = ed25519.getPublicKey(ed25519.utils.randomSecretKey())
      expect(isStrongEd25519Key(pub)).toBe(true)
      const t = ed25519.Point.fromHex(ED25519_TORSION_SUBGROUP[1 + (i % 7)]!)
      const mixed = ed25519.Point.fromBytes(pub).add(t)
      expect(mixed.isSmallOrder()).toBe(false)
      expect(isStrongEd25519Key(mixed.toBytes())).toBe(true)
    }
    // The RFC 8032 test keys are ordinary keys.
    const { cases } = JSON.parse(readFileSync(new URL('../../core/test/vectors/rfc8032-ed25519.json', import.meta.url), 'utf8')) as { cases: Array<{ publicKey: string }> }
    for (const c of cases) expect(isStrongEd25519Key(hex(c.publicKey))).toBe(true)
  })

  it('refuses non-canonical encodings: y ≥ p, and x = 0 with the sign bit set', () => {
    // p + 1 encodes y = 1 (the identity) non-canonically; p + 3 would be y = 3 if it were on the curve.
    expect(isStrongEd25519Key(le(P + 1n))).toBe(false)
    const negZero = le(1n)
    negZero[31]! |= 0x80
    expect(isStrongEd25519Key(negZero)).toBe(false)
    // Not on the curve (y = 2 has no x).
    expect(isStrongEd25519Key(le(2n))).toBe(false)
    expect(isStrongEd25519Key(new Uint8Array(31))).toBe(false)
  })

  it('the identity-key forgery verifies with node:crypto for any message, never as an approval', () => {
    const identity = le(1n)
    const forged = Buffer.alloc(64)
    forged[0] = 1 // R = identity, S = 0
    const raw = identity.toString('base64url')
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw }, format: 'jwk' })
    expect(verify(null, Buffer.from('anything at all'), key, forged)).toBe(true)
    expect(verifyApprovalSig(raw, forged.toString('base64url'), subject)).toBe(false)
  })

  it('a valid approval verifies; the same one with S + L (malleated) or another subject does not', () => {
    const k = generateSignerKey('s1')
    const a = signApproval(k, subject)
    expect(verifyApprovalSig(k.publicKey, a.sig, subject)).toBe(true)
    expect(verifyApprovalSig(k.publicKey, a.sig, { ...subject, baseVersion: 8 })).toBe(false)
    const sig = Buffer.from(a.sig, 'base64url')
    const s = fromLe(sig.subarray(32))
    expect(s + L < 1n << 256n).toBe(true)
    const malleated = Buffer.concat([sig.subarray(0, 32), le(s + L)])
    expect(verifyApprovalSig(k.publicKey, malleated.toString('base64url'), subject)).toBe(false)
  })
})
