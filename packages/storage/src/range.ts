/**
 * HTTP `Range` header parsing for single-representation byte ranges (RFC 9110 section 14).
 *
 * @module
 */

import type { ByteRange } from './store/types.js'

/**
 * The outcome of {@link parseRange}:
 * - `none`: no header, or one that is not a valid `bytes=` range set (ignore it, serve 200), or
 *   more than {@link RangeLimits.maxRanges} ranges (treated as abuse: serve the whole object);
 * - `single`: one satisfiable range (206 with `Content-Range: bytes start-end/size`);
 * - `multi`: two or more satisfiable ranges after dropping unsatisfiable ones, sorted and with
 *   overlapping or adjacent ranges coalesced (206 `multipart/byteranges`, or 200 as fallback);
 * - `unsatisfiable`: a valid header none of whose ranges overlaps the object (416 with
 *   `Content-Range: bytes *\/size`). Every range of an empty object is unsatisfiable.
 */
export type RangeResult =
  | { kind: 'none' }
  | { kind: 'single'; range: ByteRange }
  | { kind: 'multi'; ranges: ByteRange[] }
  | { kind: 'unsatisfiable' }

/** Limits of {@link parseRange}. */
export interface RangeLimits {
  /**
   * Most range specs accepted in one header (before coalescing); more → `{ kind: 'none' }`.
   * @default 16
   */
  maxRanges?: number
}

/** Default of {@link RangeLimits.maxRanges}. */
export const DEFAULT_MAX_RANGES = 16

const DIGITS = /^[0-9]+$/
const BYTES_UNIT = /^bytes=/i

type Spec = { kind: 'int'; first: number; last: number | undefined } | { kind: 'suffix'; length: number }

/**
 * Parses an HTTP `Range` header against an object of `size` bytes, per RFC 9110:
 * `bytes=a-b` (b clamped to `size - 1`), `bytes=a-`, `bytes=-n` (the last n bytes; n larger than
 * the object means all of it; n = 0 is unsatisfiable), comma-separated lists of those (optional
 * whitespace around commas). A range whose first byte is at or beyond `size` is unsatisfiable.
 * A syntactically invalid header (another unit, `b < a`, junk) is ignored (`none`), as RFC 9110
 * requires of a server.
 *
 * @param header - the `Range` header value, if any.
 * @param size - the object size in bytes.
 * @example
 * ```ts
 * parseRange('bytes=0-99', 1000)    // { kind: 'single', range: { start: 0, end: 99 } }
 * parseRange('bytes=-100', 1000)    // { kind: 'single', range: { start: 900, end: 999 } }
 * parseRange('bytes=1000-', 1000)   // { kind: 'unsatisfiable' }
 * parseRange('items=0-1', 1000)     // { kind: 'none' }
 * ```
 */
export function parseRange(header: string | undefined, size: number, limits: RangeLimits = {}): RangeResult {
  if (header === undefined) return { kind: 'none' }
  const maxRanges = limits.maxRanges ?? DEFAULT_MAX_RANGES
  const h = header.trim()
  if (!BYTES_UNIT.test(h)) return { kind: 'none' }
  const specs: Spec[] = []
  for (const raw of h.slice(6).split(',')) {
    const part = raw.trim()
    if (part === '') continue // RFC 9110 list syntax: empty elements are allowed and ignored
    const spec = parseSpec(part)
    if (spec === undefined) return { kind: 'none' }
    specs.push(spec)
    if (specs.length > maxRanges) return { kind: 'none' }
  }
  if (specs.length === 0) return { kind: 'none' }

  const ranges: ByteRange[] = []
  for (const s of specs) {
    const r = resolveSpec(s, size)
    if (r !== undefined) ranges.push(r)
  }
  if (ranges.length === 0) return { kind: 'unsatisfiable' }
  const merged = coalesce(ranges)
  return merged.length === 1 ? { kind: 'single', range: merged[0]! } : { kind: 'multi', ranges: merged }
}

function parseSpec(part: string): Spec | undefined {
  const dash = part.indexOf('-')
  if (dash < 0) return undefined
  const a = part.slice(0, dash)
  const b = part.slice(dash + 1)
  if (a === '') {
    if (!DIGITS.test(b)) return undefined
    return { kind: 'suffix', length: toNumber(b) }
  }
  if (!DIGITS.test(a)) return undefined
  const first = toNumber(a)
  if (b === '') return { kind: 'int', first, last: undefined }
  if (!DIGITS.test(b)) return undefined
  const last = toNumber(b)
  if (last < first) return undefined // invalid range-spec makes the whole header invalid
  return { kind: 'int', first, last }
}

/** Digits to a number; absurdly long inputs become Infinity, which still compares correctly. */
function toNumber(digits: string): number {
  return Number(digits)
}

function resolveSpec(s: Spec, size: number): ByteRange | undefined {
  if (size <= 0) return undefined
  if (s.kind === 'suffix') {
    if (s.length === 0) return undefined
    return { start: Math.max(0, size - s.length), end: size - 1 }
  }
  if (s.first >= size) return undefined
  return { start: s.first, end: s.last === undefined ? size - 1 : Math.min(s.last, size - 1) }
}

/** Sorts by start and merges overlapping or adjacent ranges. */
function coalesce(ranges: ByteRange[]): ByteRange[] {
  const sorted = [...ranges].sort((x, y) => x.start - y.start)
  const out: ByteRange[] = []
  for (const r of sorted) {
    const prev = out[out.length - 1]
    if (prev !== undefined && r.start <= prev.end + 1) prev.end = Math.max(prev.end, r.end)
    else out.push({ start: r.start, end: r.end })
  }
  return out
}

/** The `Content-Range` value for a satisfied range: `bytes start-end/size`. */
export function contentRange(range: ByteRange, size: number): string {
  return `bytes ${range.start}-${range.end}/${size}`
}

/** The `Content-Range` value of a 416 response: `bytes *\/size`. */
export function unsatisfiedContentRange(size: number): string {
  return `bytes */${size}`
}
