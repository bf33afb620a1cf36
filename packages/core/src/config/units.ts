/**
 * Human-friendly durations (`"250ms"`, `"5s"`) and sizes (`"64KiB"`, `"10MB"`) for config files
 * and environment variables, and their zod schemas.
 *
 * @module
 */

import { z } from 'zod'
import { ConfigError, describeValue } from './config-error.js'

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
}

const DURATION_RE = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/
const SIZE_RE = /^(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?$/i

/** What {@link parseDuration} accepts, for error messages. */
export const DURATION_EXPECTED = 'expected a duration like "250ms", "5s", "1m", "2h" or milliseconds'
/** What {@link parseSize} accepts, for error messages. */
export const SIZE_EXPECTED = 'expected a size like "64MiB", "10MB", "512" or bytes'

/**
 * Parses a duration into milliseconds: a non-negative number (already ms) or a string of a
 * number and a unit `ms`, `s`, `m`, `h` or `d` (`"1.5s"` is 1500); a string without a unit is
 * milliseconds (`"5000"`). The result is an integer.
 *
 * @throws {@link ConfigError} when `v` is not such a duration.
 * @example
 * ```ts
 * parseDuration('5s') // 5000
 * parseDuration(250) // 250
 * ```
 */
export function parseDuration(v: string | number): number {
  let ms: number | undefined
  if (typeof v === 'number') ms = v
  else if (typeof v === 'string') {
    const m = DURATION_RE.exec(v.trim())
    // A bare number is milliseconds, as from an environment variable or a flag ("5000").
    if (m) ms = Number(m[1]) * (m[2] === undefined ? 1 : DURATION_UNITS[m[2]]!)
  }
  if (ms === undefined || !Number.isFinite(ms) || ms < 0 || ms > Number.MAX_SAFE_INTEGER) {
    throw new ConfigError(`${DURATION_EXPECTED}, got ${describeValue(v)}`, { details: { expected: 'duration', got: describeValue(v) } })
  }
  return Math.round(ms)
}

/**
 * Parses a size into bytes: a non-negative integer (already bytes) or a string of a number and
 * an optional unit: `B`, decimal `KB`/`MB`/`GB`/`TB` (powers of 1000) or binary `KiB`/`MiB`/
 * `GiB`/`TiB` (powers of 1024); units are case-insensitive. The result must be a whole number.
 *
 * @throws {@link ConfigError} when `v` is not such a size.
 * @example
 * ```ts
 * parseSize('64KiB') // 65536
 * parseSize('10MB') // 10000000
 * ```
 */
export function parseSize(v: string | number): number {
  let bytes: number | undefined
  if (typeof v === 'number') bytes = v
  else if (typeof v === 'string') {
    const m = SIZE_RE.exec(v.trim())
    if (m) bytes = Number(m[1]) * SIZE_UNITS[(m[2] ?? 'b').toLowerCase()]!
  }
  if (bytes === undefined || !Number.isSafeInteger(bytes) || bytes < 0) {
    throw new ConfigError(`${SIZE_EXPECTED}, got ${describeValue(v)}`, { details: { expected: 'size', got: describeValue(v) } })
  }
  return bytes
}

function unitSchema(parse: (v: string | number) => number, expected: string) {
  return z.union([z.number(), z.string()], { error: expected }).transform((v, ctx) => {
    try {
      return parse(v)
    } catch {
      ctx.addIssue({ code: 'custom', message: expected, input: v })
      return z.NEVER
    }
  })
}

/**
 * A zod schema for durations: accepts milliseconds or a string such as `"5s"`, outputs ms.
 * @example
 * ```ts
 * z.object({ timeout: durationSchema.prefault('5s') })
 * ```
 */
export const durationSchema = unitSchema(parseDuration, DURATION_EXPECTED)

/**
 * A zod schema for sizes: accepts bytes or a string such as `"64MiB"`, outputs bytes.
 * @example
 * ```ts
 * z.object({ maxObjectBytes: sizeSchema.prefault('64MiB') })
 * ```
 */
export const sizeSchema = unitSchema(parseSize, SIZE_EXPECTED)
