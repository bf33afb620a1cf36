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
    const o = value as Record<string, unknown>
    const matched = memoMatch(o)
    if (matched === memoCount && !memoMissed) return memoText
    const text = flatObject(o, matched)
    if (text === undefined) forget()
    return text
  }
  return undefined
}

/** Texts up to this many characters are remembered by {@link asciiJsonText} (it holds only small ones). */
const MEMO_CHARS = 1024

/**
 * The last flat object's members and text. A route answers the same small object again and again
 * (`{ hello: 'world' }`, `{ ok: true }`), a fresh literal each time: comparing its members with the
 * last one's is a fraction of writing the text again (seven string concatenations for a
 * one-member object, and a rope that node has to flatten when it writes the reply), and the reply
 * gets the very same flat string.
 */
let memoText = ''
let memoCount = -1
const memoKeys: string[] = []
const memoValues: unknown[] = []

/** Set by {@link memoMatch} when it stopped at a member: whether it read that member's value, and the value. */
let memoMissed = false
let missedValue: unknown = undefined
let missedRead = false

/**
 * How many leading own enumerable members of `o` are the remembered object's, in the same order
 * with the same (`===`) values; `o` is the remembered object when that is all of them and
 * nothing else came ({@link memoMissed} false). `for…in` walks the own keys in `Object.keys`
 * order without making an array; an inherited enumerable key (a polluted `Object.prototype`) is
 * not own, and stops the match. Values that are `===` serialise alike: they are primitives (the
 * text was written), and `0` and `-0` both write `0`. A value read here is not read again by
 * {@link flatObject} (a getter runs once, as under `JSON.stringify`).
 */
function memoMatch(o: Record<string, unknown>): number {
  const n = memoCount
  let i = 0
  memoMissed = false
  missedRead = false
  for (const k in o) {
    if (i === n || k !== memoKeys[i] || !Object.hasOwn(o, k)) {
      memoMissed = true
      return i
    }
    const v = o[k]
    if (v !== memoValues[i]) {
      memoMissed = true
      missedRead = true
      missedValue = v
      return i
    }
    i++
  }
  return i
}

/** Empties the memo (so it keeps no value alive). */
function forget(): void {
  memoCount = -1
  missedValue = undefined
  memoKeys.length = 0
  memoValues.length = 0
}

/**
 * The text of an object whose members are all ASCII strings without escapes, numbers, booleans or
 * null; else undefined. Its first `matched` values are the memo's (already read and equal), and
 * the next one is {@link missedValue} when {@link memoMatch} read it.
 */
function flatObject(o: Record<string, unknown>, matched: number): string | undefined {
  const keys = Object.keys(o)
  const n = keys.length
  if (n > MAX_MEMBERS) return undefined
  // The memo is rewritten as the members are read (each is read once, as JSON.stringify would).
  memoCount = -1
  let s = '{'
  for (let i = 0; i < n; i++) {
    const k = keys[i]!
    if (!plain(k)) return undefined
    const v = i < matched ? memoValues[i] : i === matched && missedRead ? missedValue : o[k]
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
    memoKeys[i] = k
    memoValues[i] = v
  }
  s += '}'
  if (s.length > MEMO_CHARS) {
    forget()
    return s
  }
  memoKeys.length = n
  memoValues.length = n
  memoCount = n
  memoText = s
  return s
}

/** Whether `s` is ASCII that JSON writes as itself between quotes: no `"`, `\`, control character or non-ASCII. */
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return false
  }
  return true
}
