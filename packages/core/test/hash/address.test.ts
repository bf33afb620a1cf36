import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MalformedError } from '../../src/errors.js'
import { addressOf, addressToDigest, blake3, isAddress, parseAddress, toAddress } from '../../src/hash/index.js'

const EMPTY = 'b3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262'

describe('addresses', () => {
  it('addressOf the empty input is the official empty BLAKE3 hash', () => {
    expect(addressOf(new Uint8Array())).toBe(EMPTY)
  })

  it('toAddress and addressToDigest round-trip any 32-byte digest', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (d) => {
        const a = toAddress(d)
        expect(isAddress(a)).toBe(true)
        expect(Buffer.from(addressToDigest(a)).equals(Buffer.from(d))).toBe(true)
      }),
      { numRuns: 100, seed: 1 },
    )
  })

  it('toAddress encodes only the 32 bytes a view covers, not the rest of its buffer', () => {
    const whole = new Uint8Array(64).map((_, i) => i)
    const digest = whole.subarray(16, 48)
    expect(toAddress(digest)).toBe(`b3:${Buffer.from(whole.slice(16, 48)).toString('hex')}`)
  })

  it('toAddress rejects digests that are not 32 bytes', () => {
    expect(() => toAddress(new Uint8Array(31))).toThrow(MalformedError)
    expect(() => toAddress(new Uint8Array(33))).toThrow(MalformedError)
  })

  it('parseAddress accepts exactly b3: plus 64 lowercase hex digits', () => {
    expect(parseAddress(EMPTY)).toBe(EMPTY)
    expect(addressOf(new TextEncoder().encode('x'))).toBe(toAddress(blake3(new TextEncoder().encode('x'))))
  })

  it.each([
    ['uppercase hex', EMPTY.toUpperCase()],
    ['uppercase digit run', `b3:${'A'.repeat(64)}`],
    ['uppercase prefix', `B3:${'a'.repeat(64)}`],
    ['63 digits', EMPTY.slice(0, -1)],
    ['65 digits', `${EMPTY}0`],
    ['no prefix', EMPTY.slice(3)],
    ['other prefix', `sha256:${'a'.repeat(64)}`],
    ['leading space', ` ${EMPTY}`],
    ['trailing newline', `${EMPTY}\n`],
    ['non-hex', `b3:${'g'.repeat(64)}`],
    ['empty', ''],
  ])('parseAddress rejects %s with a Malformed error', (_name, s) => {
    let err: unknown
    try {
      parseAddress(s, 'address')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(MalformedError)
    expect((err as MalformedError).code).toBe('Malformed')
    expect((err as MalformedError).details['field']).toBe('address')
    expect(isAddress(s)).toBe(false)
  })

  it('parseAddress truncates long offending values in details', () => {
    try {
      parseAddress('x'.repeat(10_000))
      expect.unreachable()
    } catch (e) {
      const v = (e as MalformedError).details['value'] as string
      expect(v.length).toBeLessThanOrEqual(81)
      expect((e as MalformedError).details).not.toHaveProperty('field')
    }
  })

  it('isAddress is false for non-strings', () => {
    expect(isAddress(42)).toBe(false)
    expect(isAddress(undefined)).toBe(false)
  })
})
