import { describe, expect, it } from 'vitest'
import {
  ALL_SCOPES,
  SCOPES,
  isRonError,
  isScope,
  isValidName,
  manifestSchema,
  nameWriteSchema,
  parseName,
  providerAnnouncementSchema,
  type Scope,
} from '@ron/core'

const A = `b3:${'a'.repeat(64)}`
const B = `b3:${'b'.repeat(64)}`

describe('scope catalog', () => {
  it("holds exactly SPEC.md section 5's scopes, and ALL_SCOPES is the catalog in order", () => {
    const spec: Scope[] = [
      'storage:read', 'storage:write', 'storage:replicate', 'storage:admin',
      'registry:propose', 'registry:approve', 'registry:commit', 'registry:admin',
      'passport:issue', 'passport:revoke', 'passport:admin',
      'index:write', 'index:announce', 'index:admin',
      'interop:admin', 'node:admin',
    ]
    expect([...ALL_SCOPES]).toEqual(spec)
    expect(Object.keys(SCOPES)).toEqual(spec)
    for (const s of spec) expect(SCOPES[s].length).toBeGreaterThan(0)
    expect(Object.isFrozen(SCOPES) && Object.isFrozen(ALL_SCOPES)).toBe(true)
  })

  it('isScope accepts catalog scopes only', () => {
    expect(isScope('storage:read')).toBe(true)
    expect(isScope('storage:everything')).toBe(false)
    expect(isScope('toString')).toBe(false)
    expect(isScope(42)).toBe(false)
  })
})

describe('provider announcement', () => {
  it('accepts the SPEC shape and rejects unknown fields, bad addresses and bad ttl', () => {
    const ok = { address: A, node: 'n1', endpoint: 'http://127.0.0.1:7701', ttlSec: 3600 }
    expect(providerAnnouncementSchema.parse(ok)).toEqual(ok)
    expect(providerAnnouncementSchema.safeParse({ ...ok, extra: 1 }).success).toBe(false)
    expect(providerAnnouncementSchema.safeParse({ ...ok, address: A.toUpperCase() }).success).toBe(false)
    expect(providerAnnouncementSchema.safeParse({ ...ok, ttlSec: 0 }).success).toBe(false)
    expect(providerAnnouncementSchema.safeParse({ ...ok, ttlSec: 1.5 }).success).toBe(false)
    expect(providerAnnouncementSchema.safeParse({ ...ok, node: '' }).success).toBe(false)
  })
})

describe('manifest', () => {
  it('accepts content/size/type with optional parts whose sizes add up', () => {
    expect(manifestSchema.parse({ content: A, size: 3, type: 'text/plain' })).toEqual({ content: A, size: 3, type: 'text/plain' })
    const parts = [{ content: A, size: 1 }, { content: B, size: 2 }]
    expect(manifestSchema.parse({ content: A, size: 3, type: 'text/plain; charset=utf-8', parts }).parts).toEqual(parts)
  })

  it('rejects parts that do not add up, bad types and unknown fields, naming the field', () => {
    const r = manifestSchema.safeParse({ content: A, size: 4, type: 'text/plain', parts: [{ content: B, size: 1 }] })
    expect(r.success).toBe(false)
    expect(r.error?.issues[0]?.path).toEqual(['parts'])
    expect(manifestSchema.safeParse({ content: A, size: 1, type: 'nonsense' }).success).toBe(false)
    expect(manifestSchema.safeParse({ content: A, size: -1, type: 'text/plain' }).success).toBe(false)
    expect(manifestSchema.safeParse({ content: A, size: 1, type: 'text/plain', x: 1 }).success).toBe(false)
  })
})

describe('names', () => {
  it('follow DNS label rules', () => {
    for (const ok of ['docs', 'docs.alice', 'a-b.c0', 'x'.repeat(63), `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`]) {
      expect(isValidName(ok), ok).toBe(true)
    }
    for (const bad of ['', 'Docs', '-a', 'a-', 'a..b', '.a', 'a.', 'a_b', 'x'.repeat(64), `${'a.'.repeat(126)}ab`, 'é']) {
      expect(isValidName(bad), bad).toBe(false)
    }
  })

  it('parseName throws Malformed naming the field', () => {
    expect(parseName('docs.alice')).toBe('docs.alice')
    try {
      parseName('Bad', 'key')
      expect.unreachable()
    } catch (e) {
      expect(isRonError(e, 'Malformed')).toBe(true)
      expect((e as { details: unknown }).details).toEqual({ field: 'key', value: 'Bad' })
    }
  })

  it('a name write is unconditional, create-only (null) or compare-and-set', () => {
    expect(nameWriteSchema.parse({ manifestAddress: A })).toEqual({ manifestAddress: A })
    expect(nameWriteSchema.parse({ manifestAddress: A, expectedPrevious: null })).toEqual({ manifestAddress: A, expectedPrevious: null })
    expect(nameWriteSchema.parse({ manifestAddress: A, expectedPrevious: B }).expectedPrevious).toBe(B)
    expect(nameWriteSchema.safeParse({ manifestAddress: A, expectedPrevious: 'x' }).success).toBe(false)
    expect(nameWriteSchema.safeParse({ manifestAddress: A, other: 1 }).success).toBe(false)
  })
})
