/**
 * One byte range out of an HTTP `Range` header (RFC 9110 §14), for the gateway's answers from
 * verified bytes. Several ranges are answered with the whole object (a server may ignore `Range`);
 * a header that is not a valid `bytes=` range is ignored.
 *
 * @module
 */

/** Inclusive byte range. */
export interface ByteRange {
  start: number
  end: number
}

/** `none`: serve it all (200); `single`: 206; `unsatisfiable`: 416 with `Content-Range: bytes *\/size`. */
export type RangeAnswer = { kind: 'none' } | { kind: 'single'; range: ByteRange } | { kind: 'unsatisfiable' }

const SINGLE = /^bytes=(\d*)-(\d*)$/i

/**
 * Parses `header` against an object of `size` bytes: `bytes=a-b`, `bytes=a-`, `bytes=-n`.
 * @example
 * ```ts
 * parseSingleRange('bytes=0-1', 10)  // { kind: 'single', range: { start: 0, end: 1 } }
 * parseSingleRange('bytes=-3', 10)   // { kind: 'single', range: { start: 7, end: 9 } }
 * parseSingleRange('bytes=10-', 10)  // { kind: 'unsatisfiable' }
 * ```
 */
export function parseSingleRange(header: string | undefined, size: number): RangeAnswer {
  if (header === undefined) return { kind: 'none' }
  const m = SINGLE.exec(header.trim())
  if (m === null) return { kind: 'none' }
  const [, a = '', b = ''] = m
  if (a === '' && b === '') return { kind: 'none' }
  if (a === '') {
    const n = Number(b)
    if (!Number.isSafeInteger(n)) return { kind: 'none' }
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' }
    return { kind: 'single', range: { start: Math.max(0, size - n), end: size - 1 } }
  }
  const start = Number(a)
  // An open range (`bytes=a-`) ends at the last byte, even of an object shorter than `a` (→ 416).
  const last = b === '' ? Math.max(start, size - 1) : Number(b)
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(last) || last < start) return { kind: 'none' }
  if (start >= size) return { kind: 'unsatisfiable' }
  return { kind: 'single', range: { start, end: Math.min(last, size - 1) } }
}
