import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import * as core from '../src/errors.js'
import {
  BusyError,
  ErrorCodes,
  RonError,
  errorForCode,
  errorFromEnvelope,
  isRonError,
  toRonError,
  type ErrorCode,
} from '../src/errors.js'
import type { UnauthorizedReason } from '../src/auth/verifier.js'

const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')
const rows = [...doc.matchAll(/^\| `(\w+)` \| (\d{3}) \| (yes|no) \| `(\w+)` \| (yes|no) \|/gm)].map((m) => ({
  code: m[1] as ErrorCode,
  status: Number(m[2]),
  retryable: m[3] === 'yes',
  cls: m[4]!,
  spec: m[5] === 'yes',
}))

/** SPEC.md section 4's error table (code → HTTP status), copied here so the test reads nothing outside the repo. */
const SPEC_CODES: Record<string, number> = {
  Malformed: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  RequestTimeout: 408,
  Gone: 410,
  Conflict: 409,
  ChainMismatch: 409,
  DuplicateApproval: 409,
  OverLimit: 413,
  UnsupportedMediaType: 415,
  RangeNotSatisfiable: 416,
  InvalidSignature: 422,
  QuorumNotMet: 422,
  IntegrityFailed: 422,
  InvalidReference: 422,
  Busy: 429,
  NotReady: 503,
  Draining: 503,
  Canceled: 503,
  BreakerOpen: 503,
  Brownout: 503,
  Unavailable: 503,
  Timeout: 504,
  Internal: 500,
  NotImplemented: 501,
}

describe('error catalog', () => {
  it('docs/errors.md lists exactly the codes of ErrorCodes, with the same status, retryability and class', () => {
    expect(rows.map((r) => r.code).sort()).toEqual(Object.keys(ErrorCodes).sort())
    for (const r of rows) {
      const e = errorForCode(r.code)
      expect(e.status, r.code).toBe(r.status)
      expect(e.retryable, r.code).toBe(r.retryable)
      expect(e.constructor.name, r.code).toBe(r.cls)
      expect((core as Record<string, unknown>)[r.cls], r.code).toBe(e.constructor)
    }
  })

  it("docs/errors.md marks exactly SPEC.md's codes, each with SPEC's status", () => {
    expect(rows.filter((r) => r.spec).map((r) => r.code).sort()).toEqual(Object.keys(SPEC_CODES).sort())
    for (const [code, status] of Object.entries(SPEC_CODES)) expect(ErrorCodes[code as ErrorCode], code).toBe(status)
  })

  it('docs/errors.md lists the details.reason values the core answers with (every UnauthorizedReason, revocation_stale, per_ip, ...)', () => {
    const reasons = new Set([...doc.matchAll(/^\| `(\w+)` \| `(\w+)` \|/gm)].map((m) => `${m[1]}:${m[2]}`))
    const unauthorized: Record<UnauthorizedReason | 'no_verifier', true> = {
      missing: true,
      malformed: true,
      bad_alg: true,
      unknown_kid: true,
      bad_signature: true,
      expired: true,
      not_yet_valid: true,
      wrong_audience: true,
      revoked: true,
      unknown_caveat: true,
      no_verifier: true,
    }
    const expected = [
      ...Object.keys(unauthorized).map((r) => `Unauthorized:${r}`),
      'Forbidden:missing_scope',
      'Forbidden:caveat',
      'Forbidden:cors_origin',
      'Forbidden:host_not_allowed',
      'Unavailable:write_quorum',
      'Unavailable:no_transport',
      'Busy:max_inflight',
      'Busy:max_rps',
      'Busy:max_connections',
      'NotReady:revocation_stale',
      'NotReady:unreachable',
      'NotReady:disk_full',
      'NotReady:io_error',
      'NotReady:read_only',
      // passport (listed in the same table; checked by packages/passport/test/errors-doc.test.ts)
      'Forbidden:widen',
      'Forbidden:policy',
      'NotReady:no_policy',
      'NotReady:kms_failing',
      'NotReady:rotating',
      'Busy:per_ip',
      'Busy:per_ip_rate',
      'Busy:too_many_keys',
      'Busy:sse_clients',
      // Slow clients and Node's own refusals (issue 20); interop's upload slots.
      'Busy:per_principal',
      'Busy:uploads',
      'RequestTimeout:gap',
      'RequestTimeout:min_rate',
      'RequestTimeout:deadline',
      'RequestTimeout:headers',
      'OverLimit:header_overflow',
      'OverLimit:chunk_extensions_overflow',
      // reload() and directory manifests.
      'Malformed:immutable',
      'Malformed:not_object',
      'Malformed:too_many',
    ]
    expect([...reasons].sort()).toEqual(expected.sort())
  })

  it('each class carries its code, name and status and is a RonError', () => {
    const e = new BusyError('queue work is full', { details: { queue: 'work' }, retryAfterMs: 1500 })
    expect(e).toBeInstanceOf(RonError)
    expect(e).toBeInstanceOf(Error)
    expect(e.code).toBe('Busy')
    expect(e.name).toBe('BusyError')
    expect(e.status).toBe(429)
    expect(e.retryAfterMs).toBe(1500)
    expect(isRonError(e, 'Busy')).toBe(true)
    expect(isRonError(e, 'Timeout')).toBe(false)
  })

  it('toEnvelope has exactly the SPEC fields', () => {
    const env = new BusyError('full', { details: { queue: 'work' } }).toEnvelope('abc')
    expect(env).toEqual({
      error: { code: 'Busy', message: 'full', retryable: true, corr_id: 'abc', details: { queue: 'work' } },
    })
  })

  it('errorFromEnvelope rebuilds the typed subclass, keeps details and corr_id, honours Retry-After', () => {
    const env = new BusyError('full', { details: { queue: 'work' } }).toEnvelope('c1')
    const e = errorFromEnvelope(429, env, 2000)
    expect(e).toBeInstanceOf(BusyError)
    expect(e.details).toEqual({ queue: 'work', corr_id: 'c1' })
    expect(e.retryAfterMs).toBe(2000)
  })

  it('errorFromEnvelope falls back on the HTTP status for bodies that are not envelopes', () => {
    expect(errorFromEnvelope(404, 'nope').code).toBe('NotFound')
    expect(errorFromEnvelope(418, undefined).code).toBe('Internal')
    expect(errorFromEnvelope(409, { error: { code: 'Nonsense' } }).code).toBe('Conflict')
  })

  it('toRonError passes RonErrors through, maps AbortError to Canceled and anything else to Internal', () => {
    const busy = new BusyError()
    expect(toRonError(busy)).toBe(busy)
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' })
    expect(toRonError(abort).code).toBe('Canceled')
    const internal = toRonError(new TypeError('x is undefined'))
    expect(internal.code).toBe('Internal')
    expect(internal.message).not.toContain('x is undefined')
  })

  it('isRonError and instanceof RonError recognise errors made by another copy of the module (Symbol.for brand)', async () => {
    const second = '../src/errors.js?second-copy'
    const other = (await import(/* @vite-ignore */ second)) as typeof core
    expect(other.RonError).not.toBe(RonError)
    const e = new other.BusyError('full')
    expect(isRonError(e, 'Busy')).toBe(true)
    expect(e instanceof RonError).toBe(true)
    expect(toRonError(e)).toBe(e)
    expect(isRonError(new Error('plain'))).toBe(false)
    expect(isRonError({ code: 'Busy' })).toBe(false)
    expect(new core.GoneError() instanceof core.ConflictError).toBe(false)
  })

  it('the codes SPEC added map to their classes, statuses and retryability', () => {
    expect([new core.RequestTimeoutError(), new core.GoneError(), new core.NotImplementedError(), new core.InvalidReferenceError()].map((e) => [e.code, e.status, e.retryable])).toEqual([
      ['RequestTimeout', 408, true],
      ['Gone', 410, false],
      ['NotImplemented', 501, false],
      ['InvalidReference', 422, false],
    ])
    expect(errorFromEnvelope(410, new core.GoneError('pruned', { details: { checkpoint: 7 } }).toEnvelope('c'))).toBeInstanceOf(core.GoneError)
  })
})
