import { describe, expect, it } from 'vitest'
import { generateIssuerKey, newTokenId, signToken } from '../../src/auth/index.js'
import { MalformedError } from '../../src/errors.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'

const payloadOf = (t: string): Record<string, unknown> => JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>

describe('signToken', () => {
  it('takes iat from the clock and exp from ttlSec, and normalises aud and scope', () => {
    const clock = new VirtualClock(1_800_000_000_500)
    const p = payloadOf(signToken(generateIssuerKey(), { sub: 's', aud: 'storage', scope: ['a:b', 'c:d'], ttlSec: 60 }, { clock }))
    expect(p).toMatchObject({ iss: 'passport', sub: 's', aud: ['storage'], scope: 'a:b c:d', iat: 1_800_000_000, exp: 1_800_000_060 })
    expect(p).not.toHaveProperty('nbf')
    expect(p).not.toHaveProperty('prf')
  })

  it('uses an explicit exp and keeps nbf, prf and caveats', () => {
    const p = payloadOf(signToken(generateIssuerKey(), { sub: 's', aud: ['x'], scope: 'a  b', exp: 5, nbf: 1, prf: 'p', ron: { methods: ['GET'] } }))
    expect(p).toMatchObject({ exp: 5, nbf: 1, prf: 'p', ron: { methods: ['GET'] }, scope: 'a b' })
  })

  it('generates a distinct random jti per token unless one is given', () => {
    const k = generateIssuerKey()
    const jtis = new Set(Array.from({ length: 50 }, () => payloadOf(signToken(k, { sub: 's', aud: 'x', scope: 'a', ttlSec: 1 })).jti))
    expect(jtis.size).toBe(50)
    expect(payloadOf(signToken(k, { sub: 's', aud: 'x', scope: 'a', ttlSec: 1, jti: 'mine' })).jti).toBe('mine')
  })

  it('refuses tokens without a lifetime, without audience, or with whitespace inside a scope', () => {
    const k = generateIssuerKey()
    expect(() => signToken(k, { sub: 's', aud: 'x', scope: 'a' })).toThrow(MalformedError)
    expect(() => signToken(k, { sub: 's', aud: [], scope: 'a', ttlSec: 1 })).toThrow(MalformedError)
    expect(() => signToken(k, { sub: 's', aud: 'x', scope: ['a b'], ttlSec: 1 })).toThrow(MalformedError)
    expect(() => signToken(k, { sub: 's', aud: 'x', scope: 'a', exp: Infinity })).toThrow(MalformedError)
  })
})

describe('newTokenId', () => {
  it('redraws an id that would begin with "-", so it is never read as a command-line option', () => {
    // 0xf8 is 111110|00…: base64url index 62, "-". The second draw begins with 0x00: "A".
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x00)]
    const sizes: number[] = []
    const id = newTokenId((size) => {
      sizes.push(size)
      return draws.shift()!
    })
    expect(Buffer.alloc(16, 0xf8).toString('base64url')[0]).toBe('-')
    expect(sizes).toEqual([16, 16])
    expect(id).toBe('A'.repeat(22))
  })

  it('gives 22 base64url characters of 128 bits, none beginning with "-"', () => {
    const ids = Array.from({ length: 4000 }, () => newTokenId())
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/)
  })
})
