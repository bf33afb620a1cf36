import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { canonicalJson } from '@ron/core'
import { canonicalPayload, payloadB3, type DescriptorSet } from '../src/descriptors.js'
import { plainApprovalsJson, plainIntJson, plainSetJson, plainStringJson } from '../src/plain-json.js'
import type { Approval } from '../src/signers.js'

// Strings the direct writers take (printable ASCII, quotes and backslashes included) and ones
// they must hand to canonicalJson (controls, non-ASCII, lone surrogates).
const ascii = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 24 })
const anyText = fc.oneof(ascii, fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('\u0000', 'a\nb', '\ud800', 'é'))
const text = fc.oneof({ weight: 4, arbitrary: ascii }, { weight: 1, arbitrary: anyText })
const number = fc.oneof(fc.integer(), fc.constantFrom(0, -0, 2 ** 53, -(2 ** 53), 1.5, 1e21, Number.MAX_SAFE_INTEGER))

const service = fc.record(
  { kind: fc.oneof({ weight: 9, arbitrary: fc.constant('service') }, { weight: 1, arbitrary: text }), name: text, service: text, node: text, endpoint: text, ttlSec: number },
  { requiredKeys: ['kind', 'name', 'service', 'node', 'endpoint'] },
)
/** A service descriptor, now and then with a member missing, added or of the wrong type. */
const item = fc.oneof(
  { weight: 8, arbitrary: service },
  { weight: 1, arbitrary: fc.tuple(service, fc.constantFrom('name', 'endpoint', 'kind', 'ttlSec')).map(([s, k]) => ({ ...s, [k]: undefined })) },
  { weight: 1, arbitrary: fc.tuple(service, fc.constantFrom('port', 'zz', 'a')).map(([s, k]) => ({ ...s, [k]: 1 })) },
  { weight: 1, arbitrary: fc.tuple(service, fc.constantFrom('name', 'node')).map(([s, k]) => ({ ...s, [k]: 7 })) },
)

/** What canonicalJson gives, or the error it throws. */
function canonical(v: unknown): string {
  try {
    return canonicalJson(v)
  } catch (e) {
    return `throws ${(e as Error).message}`
  }
}

describe('direct canonical JSON of common values (plain-json.ts)', () => {
  it('writes a service descriptor set exactly as canonicalJson does, or declines (property)', () => {
    let written = 0
    fc.assert(
      fc.property(fc.array(item, { maxLength: 4 }), fc.constantFrom(1, 2), fc.boolean(), (items, schemaVersion, reversed) => {
        const set = (reversed ? { items, schemaVersion } : { schemaVersion, items }) as unknown as DescriptorSet
        const direct = plainSetJson(set)
        if (direct === undefined) return
        written++
        expect(direct).toBe(canonical(set))
        expect(JSON.parse(direct)).toEqual(JSON.parse(JSON.stringify(set)))
      }),
      { seed: 5, numRuns: 2000 },
    )
    // Most generated sets are of the common shape: the direct path is what the test exercises.
    expect(written).toBeGreaterThan(200)
  })

  it('declines anything that is not a plain set of plain service descriptors', () => {
    const s = { kind: 'service', name: 'storage.a', service: 'storage', node: 'a', endpoint: 'http://10.0.0.1:7701' }
    const declined: unknown[] = [
      { schemaVersion: 1, items: [s], meta: { note: 'x' } },
      { schemaVersion: 1, items: [{ ...s, ttlSec: undefined }] },
      { schemaVersion: 1, items: [{ ...s, ttlSec: 1.5 }] },
      { schemaVersion: 1, items: [{ ...s, name: 'caf\u00e9' }] },
      { schemaVersion: 1, items: [{ ...s, node: '\ud800' }] },
      { schemaVersion: 1, items: [Object.assign(Object.create({ inherited: 1 }) as object, s)] },
      { schemaVersion: 1, items: [{ kind: 'policy', name: 'p', rules: {} }] },
      { schemaVersion: 1, items: 'no' },
      Object.assign(Object.create(null) as object, { schemaVersion: 1, items: [s] }),
    ]
    for (const v of declined) expect(plainSetJson(v as DescriptorSet), JSON.stringify(v)).toBeUndefined()
    const quoted = { schemaVersion: 1, items: [{ ...s, endpoint: 'http://a/"\\', ttlSec: 60 }] } as DescriptorSet
    expect(plainSetJson(quoted)).toBe(canonicalJson(quoted))
  })

  it('a proposal hashes the same bytes on either path', () => {
    const set = { items: [{ endpoint: 'http://10.0.0.1:7701', node: 'n', service: 'storage', name: 'storage.n', kind: 'service' }], schemaVersion: 1 } as DescriptorSet
    const { json, b3 } = canonicalPayload(set)
    expect(json).toBe(canonicalJson(set))
    expect(b3).toBe(payloadB3(set))
    expect(payloadB3({ ...set, meta: { note: 'x' } })).not.toBe(b3)
  })

  it('writes approvals, strings and integers exactly as canonicalJson does, or declines (property)', () => {
    const approval = fc.oneof(
      { weight: 8, arbitrary: fc.record({ signerId: text, sig: text }) },
      { weight: 1, arbitrary: fc.record({ signerId: text, sig: text, extra: text }) },
      { weight: 1, arbitrary: fc.record({ signerId: text, other: text }) },
    )
    fc.assert(
      fc.property(fc.array(approval, { maxLength: 4 }), anyText, number, (approvals, s, n) => {
        const a = plainApprovalsJson(approvals as Approval[])
        if (a !== undefined) expect(a).toBe(canonical(approvals))
        const str = plainStringJson(s)
        if (str !== undefined) expect(str).toBe(canonical(s))
        const int = plainIntJson(n)
        if (int !== undefined) expect(int).toBe(canonical(n))
      }),
      { seed: 6, numRuns: 2000 },
    )
    expect(plainApprovalsJson([{ signerId: 's1', sig: 'x'.repeat(86) }])).toBe(canonicalJson([{ signerId: 's1', sig: 'x'.repeat(86) }]))
    // Every printable-ASCII string is written directly (quotes and backslashes escaped as canonicalJson does).
    fc.assert(
      fc.property(ascii, (s) => {
        expect(plainStringJson(s)).toBe(canonicalJson(s))
      }),
      { seed: 7, numRuns: 2000 },
    )
    expect(plainStringJson('a"b\\c')).toBe('"a\\"b\\\\c"')
    expect(plainStringJson('\ud800')).toBeUndefined()
    expect(plainStringJson('tab\there')).toBeUndefined()
    expect(plainStringJson('\x7f')).toBeUndefined()
    expect(plainIntJson(1.5)).toBeUndefined()
    expect(plainIntJson(-0)).toBe('0')
  })
})
