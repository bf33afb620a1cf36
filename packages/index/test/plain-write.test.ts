/**
 * The zod-free check of the common name-write body (`src/routes/plain-write.ts`) accepts and
 * refuses exactly what `nameWriteSchema` does, with the same output (and member order) and the
 * same error.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { nameWriteSchema } from '@ron/core'
import { nameWriteBody, plainNameWrite } from '../src/routes/plain-write.js'

const A = `b3:${'a'.repeat(64)}`
const B = `b3:${'0123456789abcdef'.repeat(4)}`
const addressLike = fc.constantFrom<unknown>(A, B, `B3:${'a'.repeat(64)}`, `b3:${'A'.repeat(64)}`, `b3:${'a'.repeat(63)}`, ` ${A}`, `${A}\n`, '', null, 1, [A], { a: A })
const around = fc.oneof({ arbitrary: fc.constantFrom<unknown>(A, B), weight: 8 }, { arbitrary: addressLike, weight: 3 }, { arbitrary: fc.anything(), weight: 1 })

const body: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.record({ manifestAddress: around, expectedPrevious: fc.oneof(around, fc.constant(null)) }, { requiredKeys: [] }), weight: 10 },
  { arbitrary: fc.record({ manifestAddress: around, expectedPrevious: around, other: fc.anything() }, { requiredKeys: ['other'] }), weight: 2 },
  { arbitrary: fc.constantFrom<unknown>(JSON.parse(`{"__proto__": 1, "manifestAddress": "${A}"}`), Object.assign(Object.create(null) as object, { manifestAddress: A }), [A], A, null, undefined), weight: 1 },
  { arbitrary: fc.anything(), weight: 1 },
)

function outcome(f: () => unknown): { ok: true; value: unknown; keys: string[] } | { ok: false; error: string } {
  try {
    const value = f()
    return { ok: true, value, keys: Object.keys(value as object) }
  } catch (e) {
    return { ok: false, error: JSON.stringify((e as { issues?: unknown }).issues ?? String(e)) }
  }
}

describe('the name-write body check', () => {
  it('accepts and refuses exactly what nameWriteSchema does, with the same output, member order and error', () => {
    fc.assert(
      fc.property(body, (v) => {
        expect(outcome(() => nameWriteBody.parse(v))).toStrictEqual(outcome(() => nameWriteSchema.parse(v)))
      }),
      { numRuns: 5000 },
    )
  })

  it('recognises the common bodies itself and leaves the rest to the schema', () => {
    expect(plainNameWrite({ manifestAddress: A })).toStrictEqual({ manifestAddress: A })
    expect(plainNameWrite({ manifestAddress: A, expectedPrevious: null })).toStrictEqual({ manifestAddress: A, expectedPrevious: null })
    expect(plainNameWrite({ expectedPrevious: B, manifestAddress: A })).toStrictEqual({ manifestAddress: A, expectedPrevious: B })
    for (const v of [{}, { manifestAddress: A, extra: 1 }, { manifestAddress: A, expectedPrevious: 'x' }, { manifestAddress: A.toUpperCase() }, JSON.parse(`{"__proto__": {}, "manifestAddress": "${A}"}`), [A], null]) {
      expect(plainNameWrite(v)).toBeUndefined()
    }
  })
})
