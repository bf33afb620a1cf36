import { readFileSync } from 'node:fs'
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { blake3, blake3Backend, createBlake3 } from '../../src/hash/index.js'
import { blake3Backends } from '../../src/hash/blake3.js'

interface Vectors {
  cases: { input_len: number; hash: string }[]
}
const vectors = JSON.parse(readFileSync(new URL('../vectors/blake3.json', import.meta.url), 'utf8')) as Vectors

function officialInput(len: number): Uint8Array {
  const b = new Uint8Array(len)
  for (let i = 0; i < len; i++) b[i] = i % 251
  return b
}
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

describe('blake3', () => {
  it('loads the native backend on this platform', () => {
    expect(blake3Backend).toBe('native')
    expect(blake3Backends.native).toBeDefined()
  })

  it('matches every official BLAKE3 test vector, one-shot and incremental, on both backends', () => {
    expect(vectors.cases.length).toBeGreaterThanOrEqual(22)
    for (const { input_len, hash } of vectors.cases) {
      const input = officialInput(input_len)
      expect(hex(blake3(input)), `len ${input_len}`).toBe(hash)
      expect(hex(blake3Backends.noble.oneShot(input)), `noble len ${input_len}`).toBe(hash)
      const h = createBlake3()
      for (let off = 0; off < input.length; off += 1000) h.update(input.subarray(off, off + 1000))
      expect(hex(h.digest()), `incremental len ${input_len}`).toBe(hash)
      const hn = blake3Backends.noble.create()
      hn.update(input.subarray(0, 7)).update(input.subarray(7))
      expect(hex(hn.digest())).toBe(hash)
    }
  })

  it('returns a 32-byte digest', () => {
    expect(blake3(new Uint8Array(5)).length).toBe(32)
  })

  it('hashes a Uint8Array view at a non-zero offset without reading outside it', () => {
    const backing = officialInput(2048)
    const view = backing.subarray(1000, 2025)
    expect(hex(blake3(view))).toBe(hex(nobleBlake3(view.slice())))
    const h = createBlake3()
    h.update(view)
    expect(hex(h.digest())).toBe(hex(nobleBlake3(view.slice())))
  })

  it('agrees with @noble/hashes on random inputs', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 9000 }), (data) => {
        expect(hex(blake3(data))).toBe(hex(nobleBlake3(data)))
      }),
      { numRuns: 200, seed: 42 },
    )
  })

  it('a reset hasher hashes anew: after digest() and mid-input, on both backends', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 6 }), fc.uint8Array({ maxLength: 500 }), (inputs, junk) => {
        for (const make of [createBlake3, blake3Backends.noble.create]) {
          const h = make()
          for (const input of inputs) {
            // Half-fed junk is dropped by the reset, and a digested hasher is usable again.
            h.update(junk).reset()
            h.update(input.subarray(0, input.length >> 1)).update(input.subarray(input.length >> 1))
            expect(hex(h.digest())).toBe(hex(nobleBlake3(input)))
            expect(() => h.digest()).toThrow(/already digested/)
            h.reset()
          }
        }
      }),
      { numRuns: 100, seed: 11 },
    )
  })

  it('gives the same digest incrementally as one-shot for random chunkings, on both backends', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 6000 }), fc.array(fc.nat({ max: 1500 }), { maxLength: 12 }), (data, cuts) => {
        const expected = hex(nobleBlake3(data))
        for (const make of [createBlake3, blake3Backends.noble.create]) {
          const h = make()
          let off = 0
          for (const c of cuts) {
            h.update(data.subarray(off, off + c))
            off = Math.min(data.length, off + c)
          }
          h.update(data.subarray(off))
          expect(hex(h.digest())).toBe(expected)
        }
      }),
      { numRuns: 150, seed: 7 },
    )
  })

  it('refuses to update or digest a hasher after digest', () => {
    for (const make of [createBlake3, blake3Backends.noble.create]) {
      const h = make()
      h.update(new Uint8Array([1]))
      h.digest()
      expect(() => h.digest()).toThrow(expect.objectContaining({ code: 'RON_HASHER_FINISHED' }))
      expect(() => h.update(new Uint8Array([2]))).toThrow(expect.objectContaining({ code: 'RON_HASHER_FINISHED' }))
    }
  })
})
