/**
 * The JSON text of a `json:` reply: `JSON.stringify(value)`, byte for byte, with a fast path for
 * the small flat ASCII objects most replies are (`{ hello: 'world' }`, `{ ok: true, version: 3 }`).
 *
 * `JSON.stringify` is a C++ builtin: for a two-member object it cost about 2,100 instructions of a
 * 70k-instruction hello request (entering the runtime, its builder and the result's allocation).
 * Concatenating the text in optimised JavaScript costs a fraction of that. Anything the fast path
 * is not sure to write exactly as `JSON.stringify` would (a nested value, a string needing an
 * escape, a `toJSON`, a non-plain object, many members) goes to `JSON.stringify` whole. The one
 * difference a caller could see: a getter on an object the fast path gives up on part way is read
 * again by `JSON.stringify` (reply objects are data, so this is noted, not guarded).
 *
 * @module
 */

/** Members written by the fast path at most; a bigger object goes to `JSON.stringify`. */
const MAX_MEMBERS = 16

/**
 * `JSON.stringify(value)` for a reply body (`value` is not `undefined`). Throws what
 * `JSON.stringify` throws (a BigInt, a cycle). @internal
 */
export function jsonText(value: unknown): string {
  return asciiJsonText(value) ?? JSON.stringify(value)
}

/**
 * `JSON.stringify(value)` when `value` is a small flat object of ASCII keys and values (the
 * text is then ASCII: its UTF-8 length is its length, so the writer need not measure it);
 * `undefined` for anything else. @internal
 */
export function asciiJsonText(value: unknown): string | undefined {
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype && (value as { toJSON?: unknown }).toJSON === undefined) {
    return flatObject(value as Record<string, unknown>)
  }
  return undefined
}

/** The text of an object whose members are all ASCII strings without escapes, numbers, booleans or null; else undefined. */
function flatObject(o: Record<string, unknown>): string | undefined {
  const keys = Object.keys(o)
  const n = keys.length
  if (n > MAX_MEMBERS) return undefined
  let s = '{'
  for (let i = 0; i < n; i++) {
    const k = keys[i]!
    if (!plain(k)) return undefined
    const v = o[k]
    let t: string
    switch (typeof v) {
      case 'string':
        if (!plain(v)) return undefined
        t = '"' + v + '"'
        break
      case 'number':
        // JSON writes non-finite numbers as null, and every finite one as Number#toString does.
        t = Number.isFinite(v) ? String(v) : 'null'
        break
      case 'boolean':
        t = v ? 'true' : 'false'
        break
      case 'object':
        if (v !== null) return undefined
        t = 'null'
        break
      default:
        // undefined, a function or a symbol (the member is left out) or a BigInt (a TypeError):
        // JSON.stringify decides.
        return undefined
    }
    s += (i === 0 ? '"' : ',"') + k + '":' + t
  }
  return s + '}'
}

/** Whether `s` is ASCII that JSON writes as itself between quotes: no `"`, `\`, control character or non-ASCII. */
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return false
  }
  return true
}
