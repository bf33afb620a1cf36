import { describe, expect, it } from 'vitest'
import { CorrIdGenerator, generateCorrId, isValidCorrId } from '../../src/http/corr-id.js'

/** Deterministic "random" bytes: 0, 1, 2, … across calls. */
function countingBytes(): (n: number) => Uint8Array {
  let next = 0
  return (n) => Uint8Array.from({ length: n }, () => next++ % 256)
}

describe('generated correlation ids', () => {
  it('are a 6-character base-36 prefix, a dash and a base-36 counter, valid as incoming ids, and distinct', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 10_000; i++) {
      const id = generateCorrId()
      expect(id).toMatch(/^[0-9a-z]{6}-[0-9a-z]{1,5}$/)
      expect(isValidCorrId(id)).toBe(true)
      seen.add(id)
    }
    expect(seen.size).toBe(10_000)
  })

  it('stay at most 12 characters: the counter restarts under a fresh prefix before it needs a sixth digit', () => {
    const g = new CorrIdGenerator(countingBytes(), 36 ** 5 - 4)
    const ids = [g.next(), g.next(), g.next(), g.next()]
    expect(ids.slice(0, 2)).toEqual(['012345-zzzzx', '012345-zzzzy'])
    expect(ids[2]).toBe('012345-zzzzz')
    expect(ids[3]).toBe('6789ab-1')
    for (const id of ids) expect(id.length).toBeLessThanOrEqual(12)
  })
})

describe('the counter part of generated ids', () => {
  it('is the counter in base 36 across block boundaries (table of low digits plus cached high digits)', () => {
    for (const start of [0, 1290, 36 * 36 - 2, 36 ** 3 - 3, 5 * 36 ** 4 + 1290, 36 ** 5 - 1300]) {
      const g = new CorrIdGenerator(() => new Uint8Array(6), start)
      for (let n = start + 1; n < Math.min(start + 1400, 36 ** 5); n++) expect(g.next()).toBe(`000000-${n.toString(36)}`)
    }
  })
})
