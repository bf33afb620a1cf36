/** The gateway's `Range` parsing (RFC 9110 §14): one range answered with 206, others ignored or 416. */
import { describe, expect, it } from 'vitest'
import { parseSingleRange } from '../src/gateway/range.js'

describe('parseSingleRange', () => {
  it('answers a single satisfiable range, clamped to the object', () => {
    expect(parseSingleRange('bytes=0-1', 10)).toEqual({ kind: 'single', range: { start: 0, end: 1 } })
    expect(parseSingleRange('bytes=4-', 10)).toEqual({ kind: 'single', range: { start: 4, end: 9 } })
    expect(parseSingleRange('bytes=8-100', 10)).toEqual({ kind: 'single', range: { start: 8, end: 9 } })
    expect(parseSingleRange('  BYTES=2-3 ', 10)).toEqual({ kind: 'single', range: { start: 2, end: 3 } })
  })

  it('answers a suffix range with the last n bytes (all of a shorter object)', () => {
    expect(parseSingleRange('bytes=-3', 10)).toEqual({ kind: 'single', range: { start: 7, end: 9 } })
    expect(parseSingleRange('bytes=-30', 10)).toEqual({ kind: 'single', range: { start: 0, end: 9 } })
  })

  it('is unsatisfiable past the end, for an empty suffix or an empty object', () => {
    expect(parseSingleRange('bytes=10-', 10)).toEqual({ kind: 'unsatisfiable' })
    expect(parseSingleRange('bytes=-0', 10)).toEqual({ kind: 'unsatisfiable' })
    expect(parseSingleRange('bytes=-5', 0)).toEqual({ kind: 'unsatisfiable' })
  })

  it('ignores what is not one valid bytes range: the whole object is served', () => {
    for (const h of [undefined, 'bytes=-', 'bytes=5-2', 'bytes=0-1,4-5', 'items=0-1', 'bytes=a-b', `bytes=${'9'.repeat(20)}-`, `bytes=-${'9'.repeat(20)}`, `bytes=0-${'9'.repeat(20)}`]) {
      expect(parseSingleRange(h, 10), String(h)).toEqual({ kind: 'none' })
    }
  })
})
