import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { plainDescriptorSet } from '../src/descriptors.js'
import { proposeBody, proposeBodySchema } from '../src/routes/writes.js'

/** What a parse gave: its output (compared by value and by key order) or the error it threw. */
function outcome(parse: () => unknown): { ok: true; value: unknown; json: string | undefined } | { ok: false; error: string } {
  try {
    const value = parse()
    return { ok: true, value, json: JSON.stringify(value) }
  } catch (err) {
    return { ok: false, error: `${(err as Error).name}: ${(err as Error).message}` }
  }
}

/** Mostly one of `valid`, else one of `near` (boundary and near-valid values), now and then anything. */
const around = (valid: readonly unknown[], near: readonly unknown[]): fc.Arbitrary<unknown> =>
  fc.oneof({ arbitrary: fc.constantFrom(...valid), weight: 40 }, { arbitrary: fc.constantFrom(...near), weight: 4 }, { arbitrary: fc.anything(), weight: 1 })

const names = [['storage.node-1', 'a', '0', 'a.b-c', 'a..b', 'x'.repeat(253)], ['x'.repeat(254), '', 'A', '-a', 'a-', 'a.', 'a b', 'ä']] as const
const labels = [['storage', 'a', 'a-b', 'a'.repeat(63)], ['a'.repeat(64), '', 'Ab', '-x', 'x-', 'a.b', 'a_b']] as const
const idents = [['node-1', 'n@x:1.2_3', 'x'.repeat(128)], ['x'.repeat(129), '', 'a b', 'a/b', 'ñ']] as const
const endpoints = [['http://10.0.0.1:7701', 'https://a.example/path?q=1#f', 'http://[::1]:80/'], [
  'http://a%zz',
  'http://a.example/\u00e9',
  'HTTP://a.example',
  'Https://a.example',
  ' http://a.example',
  'http://a.example ',
  'http://a.exa\tmple',
  'http://a.example\n',
  'http:a.example',
  'https:/a.example',
  'http:\\\\a.example',
  'ftp://a.example',
  'http://',
  'http://a b',
  'http://a:99999',
  'http://ä.example',
  'http://a:b',
  'http://[::1',
  'javascript://x',
  '',
]] as const
const ttls = [[1, 60, 31_536_000], [31_536_001, 0, -0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '5', null]] as const
const kinds = [['service'], ['policy', 'Service', 'signer-set']] as const

/** Objects from `arb`, now and then with one more member (`key`, or `__proto__` as an own key). */
const withStray = (arb: fc.Arbitrary<Record<string, unknown>>, key: string): fc.Arbitrary<unknown> =>
  arb.chain((o) =>
    fc.oneof(
      { arbitrary: fc.constant<unknown>(o), weight: 12 },
      { arbitrary: fc.anything().map((x): unknown => ({ ...o, [key]: x })), weight: 1 },
      { arbitrary: fc.constant<unknown>(JSON.parse(`{"__proto__": 1, ${JSON.stringify(o).slice(1)}`.replace(', }', '}'))), weight: 1 },
    ),
  )

/** A valid service descriptor, half the time with one member replaced by a near-valid value or anything. */
const service = withStray(
  fc
    .tuple(
      fc.record(
        { kind: fc.constantFrom(...kinds[0]), name: fc.constantFrom(...names[0]), service: fc.constantFrom(...labels[0]), node: fc.constantFrom(...idents[0]), endpoint: fc.constantFrom(...endpoints[0]), ttlSec: fc.constantFrom(...ttls[0]) },
        { requiredKeys: ['kind', 'name', 'service', 'node', 'endpoint'] },
      ),
      fc.option(fc.constantFrom(['kind', kinds], ['name', names], ['service', labels], ['node', idents], ['endpoint', endpoints], ['ttlSec', ttls]).chain(([k, [, near]]) => around(near, near).map((x) => [k, x] as const)), { freq: 2 }),
    )
    .map(([d, m]): Record<string, unknown> => (m === null ? d : { ...d, [m[0]]: m[1] })),
  'url',
)

const otherItem = fc.constantFrom<unknown>(
  { kind: 'policy', name: 'p', rules: { a: 1 } },
  { kind: 'signer-set', threshold: 1, signers: [{ id: 's', publicKey: 'A'.repeat(43) }] },
  null,
  [],
  'service',
)

const descriptorSet = withStray(
  fc.record({
    schemaVersion: around([1], [2, 0, '1', 1.0000001]),
    items: fc.oneof({ arbitrary: fc.array(fc.oneof({ arbitrary: service, weight: 12 }, { arbitrary: otherItem, weight: 1 }), { maxLength: 3 }), weight: 9 }, { arbitrary: fc.anything(), weight: 1 }),
  }),
  'meta',
)

const body = fc.oneof(
  {
    arbitrary: withStray(fc.record({ payload: descriptorSet, baseVersion: around([0, 1, 7, 2 ** 53 - 1], [-0, 2 ** 53, -1, 1.5, '3', null, Number.NaN]) }, { requiredKeys: ['payload'] }), 'items'),
    weight: 20,
  },
  { arbitrary: fc.anything(), weight: 1 },
)

describe('proposal body check', () => {
  it('accepts and refuses exactly what proposeBodySchema does, with the same output and key order', () => {
    fc.assert(
      fc.property(body, (v) => {
        const fast = outcome(() => proposeBody.parse(v))
        const schema = outcome(() => proposeBodySchema.parse(v))
        expect(fast).toStrictEqual(schema)
      }),
      { numRuns: 5000 },
    )
  })

  it('recognises the common descriptor set itself (no zod) and leaves the rest to the schema', () => {
    const set = { schemaVersion: 1, items: [{ kind: 'service', name: 'storage.node-1', service: 'storage', node: 'node-1', endpoint: 'http://10.0.0.1:7701', ttlSec: 60 }] }
    expect(plainDescriptorSet(set)).toStrictEqual(set)
    expect(plainDescriptorSet({ schemaVersion: 1, items: [] })).toStrictEqual({ schemaVersion: 1, items: [] })
    // Shapes it does not positively recognise, valid or not, go to the schema.
    expect(plainDescriptorSet({ ...set, meta: { note: 'n' } })).toBeUndefined()
    expect(plainDescriptorSet({ schemaVersion: 1, items: [{ kind: 'policy', name: 'p', rules: {} }] })).toBeUndefined()
    expect(plainDescriptorSet({ schemaVersion: 1, items: [{ ...set.items[0], endpoint: ' http://a.example' }] })).toBeUndefined()
    expect(plainDescriptorSet({ schemaVersion: 1, items: [{ ...set.items[0], endpoint: 'HTTP://a.example' }] })).toBeUndefined()
    // A refusal keeps zod's error details: the field is named.
    expect(() => proposeBody.parse({ payload: { schemaVersion: 1, items: [{ ...set.items[0], endpoint: 'ftp://a.example' }] } })).toThrow(/endpoint/)
  })
})
