import { describe, expect, it, vi } from 'vitest'
import { bearerToken, checkCaveats } from '../../src/auth/index.js'
import { ForbiddenError } from '../../src/errors.js'

function caveatError(fn: () => void): Record<string, unknown> | undefined {
  try {
    fn()
    return undefined
  } catch (e) {
    expect(e).toBeInstanceOf(ForbiddenError)
    return (e as ForbiddenError).details
  }
}

describe('checkCaveats', () => {
  it('allows anything when there are no caveats', () => {
    expect(caveatError(() => checkCaveats({}, { method: 'DELETE', path: '/x', bytes: 1e12 }))).toBeUndefined()
  })

  it('enforces methods case-insensitively', () => {
    const c = { ron: { methods: ['get', 'HEAD'] } }
    expect(caveatError(() => checkCaveats(c, { method: 'GET', path: '/' }))).toBeUndefined()
    expect(caveatError(() => checkCaveats(c, { method: 'head', path: '/' }))).toBeUndefined()
    expect(caveatError(() => checkCaveats(c, { method: 'PUT', path: '/' }))).toMatchObject({ reason: 'caveat', caveat: 'methods' })
  })

  it('enforces pathPrefix at segment boundaries', () => {
    const c = { ron: { pathPrefix: '/o/a' } }
    expect(caveatError(() => checkCaveats(c, { method: 'GET', path: '/o/a' }))).toBeUndefined()
    expect(caveatError(() => checkCaveats(c, { method: 'GET', path: '/o/a/b' }))).toBeUndefined()
    expect(caveatError(() => checkCaveats(c, { method: 'GET', path: '/o/ab' }))).toMatchObject({ reason: 'caveat', caveat: 'pathPrefix' })
    expect(caveatError(() => checkCaveats(c, { method: 'GET', path: '/o' }))).toMatchObject({ caveat: 'pathPrefix' })
    const slash = { ron: { pathPrefix: '/v1/' } }
    expect(caveatError(() => checkCaveats(slash, { method: 'GET', path: '/v1/x' }))).toBeUndefined()
  })

  it('enforces maxBytes when the size is known', () => {
    const c = { ron: { maxBytes: 100 } }
    expect(caveatError(() => checkCaveats(c, { method: 'PUT', path: '/o', bytes: 100 }))).toBeUndefined()
    expect(caveatError(() => checkCaveats(c, { method: 'PUT', path: '/o' }))).toBeUndefined()
    expect(caveatError(() => checkCaveats(c, { method: 'PUT', path: '/o', bytes: 101 }))).toMatchObject({ reason: 'caveat', caveat: 'maxBytes', maxBytes: 100 })
  })
})

describe('bearerToken', () => {
  it('extracts the token of an Authorization: Bearer header', () => {
    expect(bearerToken({ authorization: 'Bearer abc.def.ghi' })).toBe('abc.def.ghi')
    expect(bearerToken({ authorization: 'bearer   abc.def.ghi ' })).toBe('abc.def.ghi')
  })

  it('gives the same answers for a header seen before, after another one, and after a malformed one', () => {
    const a = `Bearer ${'a'.repeat(400)}.b.c`
    const b = `Bearer ${'a'.repeat(400)}.b.d`
    for (let i = 0; i < 3; i++) {
      expect(bearerToken({ authorization: a })).toBe(`${'a'.repeat(400)}.b.c`)
      expect(bearerToken({ authorization: a })).toBe(`${'a'.repeat(400)}.b.c`)
      expect(bearerToken({ authorization: `${a} x` })).toBeUndefined()
      expect(bearerToken({ authorization: b })).toBe(`${'a'.repeat(400)}.b.d`)
      expect(bearerToken({ authorization: ` ${b}` })).toBeUndefined()
      expect(bearerToken({})).toBeUndefined()
      // Built at run time (not the same string object): equal content is the same header.
      expect(bearerToken({ authorization: ['Bearer ', 'a'.repeat(400), '.b.d'].join('') })).toBe(`${'a'.repeat(400)}.b.d`)
    }
  })

  it('an empty header is not a match of the memo in a fresh module', async () => {
    vi.resetModules()
    const fresh = await import('../../src/auth/bearer.js')
    expect(fresh.bearerToken({ authorization: '' })).toBeUndefined()
    expect(fresh.bearerToken({ authorization: 'Bearer x' })).toBe('x')
  })

  it.each([
    ['absent', {}],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['an empty token', { authorization: 'Bearer ' }],
    ['two tokens', { authorization: 'Bearer a b' }],
    ['no space', { authorization: 'Bearerabc' }],
    ['a repeated header', { authorization: ['Bearer a', 'Bearer b'] }],
  ])('is undefined for %s', (_n, h) => {
    expect(bearerToken(h)).toBeUndefined()
  })
})
