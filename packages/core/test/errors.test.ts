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

const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')
const rows = [...doc.matchAll(/^\| `(\w+)` \| (\d{3}) \| (yes|no) \| `(\w+)` \|/gm)].map((m) => ({
  code: m[1] as ErrorCode,
  status: Number(m[2]),
  retryable: m[3] === 'yes',
  cls: m[4]!,
}))

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

  it('SPEC.md section 4 codes all exist with the status SPEC gives them', () => {
    const spec = readFileSync(new URL('../../../../shared/SPEC.md', import.meta.url), 'utf8')
    const section = spec.slice(spec.indexOf('| code | HTTP |'), spec.indexOf('- **Correlation**'))
    for (const line of section.split('\n').slice(2)) {
      const m = /^\s*\| (.+?) \| (\d{3}) \|/.exec(line)
      if (!m) continue
      for (const code of m[1]!.matchAll(/`(\w+)`/g)) {
        expect(ErrorCodes[code[1] as ErrorCode], code[1]).toBe(Number(m[2]))
      }
    }
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
})
