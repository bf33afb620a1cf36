import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { contentRange, parseRange, unsatisfiedContentRange } from '../src/range.js'
import type { RangeResult } from '../src/range.js'

const single = (start: number, end: number): RangeResult => ({ kind: 'single', range: { start, end } })

describe('parseRange', () => {
  it('returns none without a header', () => {
    expect(parseRange(undefined, 100)).toEqual({ kind: 'none' })
  })

  it('parses a closed range including the first and the last byte', () => {
    expect(parseRange('bytes=0-0', 100)).toEqual(single(0, 0))
    expect(parseRange('bytes=99-99', 100)).toEqual(single(99, 99))
    expect(parseRange('bytes=0-99', 100)).toEqual(single(0, 99))
    expect(parseRange('bytes=10-20', 100)).toEqual(single(10, 20))
  })

  it('clamps a last position beyond the end to the last byte', () => {
    expect(parseRange('bytes=50-1000', 100)).toEqual(single(50, 99))
    expect(parseRange('bytes=0-99999999999999999999999', 100)).toEqual(single(0, 99))
  })

  it('parses open ranges', () => {
    expect(parseRange('bytes=0-', 100)).toEqual(single(0, 99))
    expect(parseRange('bytes=99-', 100)).toEqual(single(99, 99))
  })

  it('parses suffix ranges, a suffix longer than the object meaning all of it', () => {
    expect(parseRange('bytes=-1', 100)).toEqual(single(99, 99))
    expect(parseRange('bytes=-10', 100)).toEqual(single(90, 99))
    expect(parseRange('bytes=-100', 100)).toEqual(single(0, 99))
    expect(parseRange('bytes=-5000', 100)).toEqual(single(0, 99))
  })

  it('reports a zero-length suffix and a first byte at or beyond the end as unsatisfiable', () => {
    expect(parseRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' })
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' })
    expect(parseRange('bytes=100-200', 100)).toEqual({ kind: 'unsatisfiable' })
    expect(parseRange('bytes=99999999999999999999999-', 100)).toEqual({ kind: 'unsatisfiable' })
  })

  it('reports every range of an empty object as unsatisfiable', () => {
    for (const h of ['bytes=0-', 'bytes=0-0', 'bytes=-1', 'bytes=-0', 'bytes=5-10', 'bytes=0-1,-3']) {
      expect(parseRange(h, 0), h).toEqual({ kind: 'unsatisfiable' })
    }
  })

  it('ignores syntactically invalid headers', () => {
    for (const h of [
      '',
      'bytes',
      'bytes=',
      'bytes=,',
      'bytes=-',
      'bytes=a-b',
      'bytes=5-4',
      'bytes=1-2-3',
      'bytes=0x10-20',
      'bytes=+1-2',
      'bytes=1.5-2',
      'bytes= 1 - 2',
      'items=0-1',
      'bytes 0-1',
      'bytes=0-1,junk',
      'bytes=0-1,5-4',
    ]) {
      expect(parseRange(h, 100), JSON.stringify(h)).toEqual({ kind: 'none' })
    }
  })

  it('accepts a case-insensitive unit, surrounding whitespace and empty list elements', () => {
    expect(parseRange('Bytes=0-1', 100)).toEqual(single(0, 1))
    expect(parseRange('  bytes=0-1  ', 100)).toEqual(single(0, 1))
    expect(parseRange('bytes=0-1, ,', 100)).toEqual(single(0, 1))
  })

  it('returns several ranges sorted, coalescing overlapping and adjacent ones', () => {
    expect(parseRange('bytes=0-9, 20-29', 100)).toEqual({
      kind: 'multi',
      ranges: [
        { start: 0, end: 9 },
        { start: 20, end: 29 },
      ],
    })
    expect(parseRange('bytes=50-59,0-9', 100)).toEqual({
      kind: 'multi',
      ranges: [
        { start: 0, end: 9 },
        { start: 50, end: 59 },
      ],
    })
    expect(parseRange('bytes=0-9,10-19', 100)).toEqual(single(0, 19))
    expect(parseRange('bytes=0-9,5-15,-90', 100)).toEqual(single(0, 99))
    expect(parseRange('bytes=0-0,-1', 1)).toEqual(single(0, 0))
  })

  it('drops unsatisfiable ranges of a list when others are satisfiable', () => {
    expect(parseRange('bytes=200-300,0-4', 100)).toEqual(single(0, 4))
    expect(parseRange('bytes=200-300,-0', 100)).toEqual({ kind: 'unsatisfiable' })
  })

  it('ignores a header with more ranges than the cap', () => {
    const many = Array.from({ length: 17 }, (_, i) => `${i * 2}-${i * 2}`).join(',')
    expect(parseRange(`bytes=${many}`, 100)).toEqual({ kind: 'none' })
    const sixteen = Array.from({ length: 16 }, (_, i) => `${i * 2}-${i * 2}`).join(',')
    expect(parseRange(`bytes=${sixteen}`, 100).kind).toBe('multi')
    expect(parseRange('bytes=0-1,3-4,6-7', 100, { maxRanges: 2 })).toEqual({ kind: 'none' })
  })

  it('formats Content-Range values', () => {
    expect(contentRange({ start: 0, end: 9 }, 100)).toBe('bytes 0-9/100')
    expect(unsatisfiedContentRange(100)).toBe('bytes */100')
  })

  it('matches a byte-set reference model for random sizes and range sets', () => {
    const spec = fc.oneof(
      fc.tuple(fc.nat(70), fc.nat(70)).map(([a, b]): { text: string; a: number; b: number | undefined; suffix: boolean } => ({ text: `${a}-${b}`, a, b, suffix: false })),
      fc.nat(70).map((a) => ({ text: `${a}-`, a, b: undefined as number | undefined, suffix: false })),
      fc.nat(70).map((n) => ({ text: `-${n}`, a: n, b: undefined as number | undefined, suffix: true })),
    )
    fc.assert(
      fc.property(fc.nat(64), fc.array(spec, { minLength: 1, maxLength: 5 }), (size, specs) => {
        const header = `bytes=${specs.map((s) => s.text).join(',')}`
        const got = parseRange(header, size)
        // Reference model: validity, then the set of covered bytes.
        if (specs.some((s) => !s.suffix && s.b !== undefined && s.b < s.a)) {
          expect(got).toEqual({ kind: 'none' })
          return
        }
        const covered = new Set<number>()
        for (const s of specs) {
          if (s.suffix) for (let i = Math.max(0, size - s.a); i < size && s.a > 0; i++) covered.add(i)
          else for (let i = s.a; i <= Math.min(s.b ?? size - 1, size - 1); i++) covered.add(i)
        }
        if (covered.size === 0) {
          expect(got).toEqual({ kind: 'unsatisfiable' })
          return
        }
        const ranges = got.kind === 'single' ? [got.range] : got.kind === 'multi' ? got.ranges : []
        expect(ranges.length).toBeGreaterThan(0)
        const fromResult = new Set<number>()
        let prevEnd = -2
        for (const r of ranges) {
          expect(r.start).toBeGreaterThanOrEqual(0)
          expect(r.end).toBeLessThan(size)
          expect(r.start).toBeLessThanOrEqual(r.end)
          expect(r.start).toBeGreaterThan(prevEnd + 1) // sorted, disjoint, not adjacent
          prevEnd = r.end
          for (let i = r.start; i <= r.end; i++) fromResult.add(i)
        }
        expect([...fromResult].sort((x, y) => x - y)).toEqual([...covered].sort((x, y) => x - y))
        expect(got.kind).toBe(ranges.length === 1 ? 'single' : 'multi')
      }),
      { seed: 0x5eed, numRuns: 2000 },
    )
  })
})
