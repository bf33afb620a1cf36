/**
 * Refused requests are cheap (issue 10): a 4xx RonError captures no stack trace and its envelope
 * is written without intermediate objects, byte for byte what `JSON.stringify(toEnvelope())` gives.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  BusyError,
  ErrorCodes,
  InternalError,
  NotFoundError,
  RonError,
  UnauthorizedError,
  envelopeJson,
  errorForCode,
  errorFromEnvelope,
  isRonError,
  type ErrorCode,
} from '../src/errors.js'

const CODES = Object.keys(ErrorCodes) as ErrorCode[]

function makeUnauthorized(): RonError {
  return new UnauthorizedError('missing bearer token', { details: { reason: 'missing' } })
}

describe('stack traces of RonErrors', () => {
  it('a 4xx error has no stack frames, only its Name: message line', () => {
    for (const code of CODES.filter((c) => ErrorCodes[c] < 500)) {
      const err = errorForCode(code, 'refused')
      expect(err.stack).toBe(`${code}Error: refused`)
    }
    expect(makeUnauthorized().stack).toBe('UnauthorizedError: missing bearer token')
  })

  it('a 5xx error keeps its stack, with the frame that made it', () => {
    for (const code of CODES.filter((c) => ErrorCodes[c] >= 500)) {
      const err = errorForCode(code, 'failed')
      expect(err.stack?.split('\n').length).toBeGreaterThan(1)
    }
    const err = new InternalError('boom')
    expect(err.stack).toMatch(/^InternalError: boom\n\s+at /)
    expect(err.stack).toContain('error-cost.test.ts')
  })

  it('leaves Error.stackTraceLimit as it was, also for errors made with a cause', () => {
    const before = Error.stackTraceLimit
    new BusyError('full', { cause: new Error('inner'), details: { queue: 'q' } })
    new NotFoundError()
    expect(Error.stackTraceLimit).toBe(before)
    expect(new Error('plain').stack?.split('\n').length).toBeGreaterThan(1)
  })

  it('errors rebuilt from an envelope on the client side keep a stack, 4xx ones included', () => {
    const err = errorFromEnvelope(401, { error: { code: 'Unauthorized', message: 'no', retryable: false, corr_id: 'c', details: {} } })
    expect(err.code).toBe('Unauthorized')
    expect(err.stack?.split('\n').length).toBeGreaterThan(1)
    expect(err.stack).toContain('error-cost.test.ts')
  })

  it('the brand still marks every RonError (on the prototype, not an own property)', () => {
    const err = makeUnauthorized()
    expect(isRonError(err)).toBe(true)
    expect(err instanceof RonError).toBe(true)
    expect(Object.getOwnPropertySymbols(err)).toEqual([])
    expect(isRonError({ ...err })).toBe(false)
  })
})

describe('envelopeJson', () => {
  it('is byte-identical to JSON.stringify(err.toEnvelope(corrId)) for every code and any message, details and corr-id', () => {
    const json = fc.jsonValue({ maxDepth: 3 })
    fc.assert(
      fc.property(
        fc.constantFrom(...CODES),
        fc.string({ unit: 'binary' }),
        fc.dictionary(fc.string({ unit: 'binary' }), json),
        fc.string({ unit: 'binary' }),
        (code, message, details, corrId) => {
          const err = errorForCode(code, message, { details })
          expect(envelopeJson(err, corrId)).toBe(JSON.stringify(err.toEnvelope(corrId)))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('matches for the default message, a retry hint and details that JSON drops or converts', () => {
    const cases: RonError[] = [
      new NotFoundError(),
      new BusyError('queue work is full', { details: { queue: 'work', n: undefined, at: new Date(0), big: 1e21 }, retryAfterMs: 1500 }),
      new InternalError('x', { cause: new Error('secret') }),
    ]
    for (const err of cases) expect(envelopeJson(err, 'abc-1')).toBe(JSON.stringify(err.toEnvelope('abc-1')))
    expect(envelopeJson(new NotFoundError(), 'abc-1')).toBe('{"error":{"code":"NotFound","message":"not found","retryable":false,"corr_id":"abc-1","details":{}}}')
  })
})
