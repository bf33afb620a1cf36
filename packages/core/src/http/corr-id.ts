/**
 * Correlation ids (SPEC.md section 4): accepted from `X-Corr-ID` when well formed, generated
 * otherwise, echoed on every response and carried into error bodies and logs.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'

/** The header carrying the correlation id (lower case, as `node:http` presents it). */
export const CORR_ID_HEADER = 'x-corr-id'

const CORR_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/

/** True when `value` is an acceptable incoming correlation id (1-128 chars of `[A-Za-z0-9._:-]`). */
export function isValidCorrId(value: unknown): value is string {
  return typeof value === 'string' && CORR_ID_RE.test(value)
}

// Generation is on the hot path: one random prefix per process plus a counter is unique enough for
// correlating logs and costs no syscall or crypto per request.
const PREFIX = randomBytes(6).toString('hex')
let counter = 0

/** Generates a fresh correlation id (`<12 hex process prefix>-<base36 counter>`). */
export function generateCorrId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER
  return `${PREFIX}-${counter.toString(36)}`
}

/** The incoming id when valid, else a generated one. */
export function corrIdFrom(header: string | string[] | undefined): string {
  return isValidCorrId(header) ? header : generateCorrId()
}
