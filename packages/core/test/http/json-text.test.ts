/**
 * `json:` replies are serialised by `jsonText`, whose fast path for small flat objects must give
 * exactly what `JSON.stringify` gives, for every value, and leave the rest to `JSON.stringify`.
 */
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { asciiJsonText, jsonText } from '../../src/http/json-text.js'

/** Strings likely to need escapes: quotes, backslashes, control characters, lone and paired surrogates. */
const tricky = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\ud800', '\udfff', '😀', 'é', '\u2028', 'a"b', 'x\\y', '__proto__', '0', '10', '-1'),
)
const scalar = fc.oneof(
  tricky,
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 1e21, 5e-7, Number.MAX_SAFE_INTEGER),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
)
const flat = fc.dictionary(tricky, scalar, { maxKeys: 20 })

describe('jsonText', () => {
  it('gives exactly what JSON.stringify gives for flat objects of any keys and scalar values', () => {
    fc.assert(
      fc.property(flat, (o) => {
        expect(jsonText(o)).toBe(JSON.stringify(o))
      }),
      { numRuns: 2000 },
    )
  })

  it('gives exactly what JSON.stringify gives for nested values, arrays and non-plain objects', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(jsonText(v)).toBe(JSON.stringify(v))
      }),
      { numRuns: 1000 },
    )
  })

  it('the ASCII fast path answers exactly the flat objects whose text is ASCII, with JSON.stringify\'s text', () => {
    fc.assert(
      fc.property(flat, (dict) => {
        // fast-check's dictionaries may have a null prototype; a reply's object literal has Object's.
        const o = { ...dict }
        const text = asciiJsonText(o)
        const json = JSON.stringify(o)
        const plain = (x: string): boolean => /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(x)
        const ascii = Object.keys(o).every(plain) && Object.values(o).every((v) => v !== undefined && (typeof v !== 'string' || plain(v)))
        if (text !== undefined) {
          expect(text).toBe(json)
          expect(Buffer.byteLength(text)).toBe(text.length)
        }
        // Every flat object of plain ASCII keys and defined values (no escapes) takes the fast path.
        if (ascii && Object.keys(o).length <= 16) expect(text).toBe(json)
      }),
      { numRuns: 2000 },
    )
    expect(asciiJsonText({ s: 'é' })).toBeUndefined()
    expect(asciiJsonText({ s: 'a"b' })).toBeUndefined()
    expect(asciiJsonText([1])).toBeUndefined()
  })

  it('writes integer-like keys first in ascending order, as JSON.stringify does', () => {
    const o = { b: 1, 2: 'x', a: true, 1: null, 10: 'y' }
    expect(jsonText(o)).toBe(JSON.stringify(o))
    expect(jsonText(o)).toBe('{"1":null,"2":"x","10":"y","b":1,"a":true}')
  })

  it('honours toJSON (own, inherited and non-enumerable), Dates, class instances and null-prototype objects', () => {
    const own = { a: 1, toJSON: () => ({ replaced: true }) }
    const hidden = Object.defineProperty({ a: 1 }, 'toJSON', { value: () => 'hidden', enumerable: false })
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 })
    for (const v of [own, hidden, new Date(0), new Point(1, 2), bare, { d: new Date(0) }, { m: new Map() }]) expect(jsonText(v)).toBe(JSON.stringify(v))
  })

  it('leaves out undefined, functions and symbols, as JSON.stringify does', () => {
    const o = { a: undefined, b: () => 1, c: Symbol('s'), d: 1, [Symbol('k')]: 2 }
    expect(jsonText(o)).toBe(JSON.stringify(o))
    expect(jsonText(o)).toBe('{"d":1}')
  })

  it('throws what JSON.stringify throws: a BigInt, a cycle', () => {
    expect(() => jsonText({ n: 1n })).toThrow(TypeError)
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    expect(() => jsonText(cyclic)).toThrow(TypeError)
  })

  it('writes a small flat object without JSON.stringify, and hands anything else to it', () => {
    const spy = vi.spyOn(JSON, 'stringify')
    try {
      expect(jsonText({ hello: 'world', n: 3, ok: true, none: null })).toBe('{"hello":"world","n":3,"ok":true,"none":null}')
      expect(spy).not.toHaveBeenCalled()
      jsonText({ nested: { a: 1 } })
      expect(spy).toHaveBeenCalledTimes(1)
    } finally {
      spy.mockRestore()
    }
  })

  it('reads a getter of a flat object once and writes its value', () => {
    let reads = 0
    const o = {
      get v(): string {
        reads++
        return 'got'
      },
    }
    expect(jsonText(o)).toBe('{"v":"got"}')
    expect(reads).toBe(1)
  })

  it('remembers the last flat object: the same members give its text, any difference its own text', () => {
    const spy = vi.spyOn(Object, 'keys')
    try {
      expect(jsonText({ hello: 'world' })).toBe('{"hello":"world"}')
      expect(jsonText({ hello: 'world' })).toBe('{"hello":"world"}')
      // The second object was answered from the memo: its keys were not listed.
      expect(spy).toHaveBeenCalledTimes(1)
    } finally {
      spy.mockRestore()
    }
    const seq: object[] = [
      { a: 1, b: 'x' },
      { a: 1, b: 'x' },
      { a: 1, b: 'y' },
      { a: 1 },
      { a: 1, b: 'y', c: null },
      { b: 'y', a: 1 },
      { a: -0, b: 'y' },
      { a: 0, b: 'y' },
      {},
      {},
      { a: 1, b: 'y' },
      { a: 1, b: { nested: true } },
      { a: 1, b: 'y' },
    ]
    for (const o of seq) expect(jsonText(o)).toBe(JSON.stringify(o))
  })

  it('does not take an inherited enumerable member for the remembered one', () => {
    expect(jsonText({ a: 1, p: 2 })).toBe('{"a":1,"p":2}')
    Object.defineProperty(Object.prototype, 'p', { value: 2, enumerable: true, configurable: true, writable: true })
    try {
      expect(jsonText({ a: 1 })).toBe('{"a":1}')
    } finally {
      delete (Object.prototype as { p?: unknown }).p
    }
  })

  it('reads a getter once when the memo held the members before it', () => {
    expect(jsonText({ a: 1, v: 'old' })).toBe('{"a":1,"v":"old"}')
    let reads = 0
    const o = {
      a: 1,
      get v(): string {
        reads++
        return 'got'
      },
    }
    expect(jsonText(o)).toBe('{"a":1,"v":"got"}')
    expect(reads).toBe(1)
    // Held now: answered from the memo, with one more read to compare.
    expect(jsonText(o)).toBe('{"a":1,"v":"got"}')
    expect(reads).toBe(2)
  })
})
