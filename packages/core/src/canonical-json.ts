/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): one byte sequence per JSON value, so that a hash
 * or a signature over a descriptor set does not depend on key order or number spelling.
 *
 * @module
 */

import { MalformedError } from './errors.js'

/** A JSON value (I-JSON: finite numbers, well-formed strings). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

const enc = new TextEncoder()

/**
 * The RFC 8785 canonical text of `value`: object members sorted by the UTF-16 code units of their
 * names, no whitespace, strings escaped as ECMAScript's `JSON.stringify` does, numbers in
 * ECMAScript's shortest round-trip form (`1e+30`, `4.5`, `0.002`, `-0` → `0`).
 *
 * @throws {@link MalformedError} for values JSON cannot carry: non-finite numbers, lone
 *   surrogates, `undefined`, functions, bigints, symbols, or objects that are not plain.
 * @example
 * ```ts
 * canonicalJson({ b: [1e30, 4.50], a: 'x' }) // '{"a":"x","b":[1e+30,4.5]}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = []
  write(value, out, '$')
  return out.join('')
}

/** {@link canonicalJson} as UTF-8 bytes (what gets hashed and signed). */
export function canonicalBytes(value: unknown): Uint8Array {
  return enc.encode(canonicalJson(value))
}

// A lone surrogate is not a Unicode scalar value; I-JSON (RFC 7493) forbids it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

function str(s: string, path: string): string {
  if (LONE_SURROGATE.test(s)) throw new MalformedError(`${path}: string holds a lone surrogate`, { details: { field: path } })
  return JSON.stringify(s)
}

function write(v: unknown, out: string[], path: string): void {
  if (v === null) {
    out.push('null')
    return
  }
  switch (typeof v) {
    case 'boolean':
      out.push(v ? 'true' : 'false')
      return
    case 'number':
      if (!Number.isFinite(v)) throw new MalformedError(`${path}: ${v} is not a JSON number`, { details: { field: path } })
      // ECMAScript Number::toString is exactly the serialisation RFC 8785 section 3.2.2.3 requires.
      out.push(Object.is(v, -0) ? '0' : String(v))
      return
    case 'string':
      out.push(str(v, path))
      return
    case 'object':
      break
    default:
      throw new MalformedError(`${path}: a ${typeof v} is not a JSON value`, { details: { field: path } })
  }
  if (Array.isArray(v)) {
    out.push('[')
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out.push(',')
      write(v[i], out, `${path}[${i}]`)
    }
    out.push(']')
    return
  }
  const proto = Object.getPrototypeOf(v) as unknown
  if (proto !== Object.prototype && proto !== null) {
    throw new MalformedError(`${path}: only plain objects are JSON objects`, { details: { field: path } })
  }
  const obj = v as Record<string, unknown>
  // Default sort compares UTF-16 code units, which is the order RFC 8785 section 3.2.3 requires.
  const keys = Object.keys(obj).sort()
  out.push('{')
  let first = true
  for (const k of keys) {
    const item = obj[k]
    if (item === undefined) throw new MalformedError(`${path}.${k}: undefined is not a JSON value`, { details: { field: `${path}.${k}` } })
    if (!first) out.push(',')
    first = false
    out.push(str(k, path), ':')
    write(item, out, `${path}.${k}`)
  }
  out.push('}')
}
