import { describe, expect, it } from 'vitest'
import { BusyError, DrainingError, ForbiddenError, IntegrityFailedError, InternalError, MalformedError, NotFoundError, TimeoutError, UnauthorizedError } from '@ron/core'
import { CliError, ExitCode, describeError, exitCodeFor } from '../src/exit-codes.js'

describe('exit codes', () => {
  it('map RON errors by code', () => {
    expect(exitCodeFor(new NotFoundError())).toBe(ExitCode.NotFound)
    expect(exitCodeFor(new UnauthorizedError())).toBe(ExitCode.Auth)
    expect(exitCodeFor(new ForbiddenError())).toBe(ExitCode.Auth)
    expect(exitCodeFor(new IntegrityFailedError())).toBe(ExitCode.Integrity)
    expect(exitCodeFor(new BusyError())).toBe(ExitCode.Unavailable)
    expect(exitCodeFor(new DrainingError())).toBe(ExitCode.Unavailable)
    expect(exitCodeFor(new TimeoutError())).toBe(ExitCode.Unavailable)
    expect(exitCodeFor(new MalformedError())).toBe(ExitCode.Usage)
    expect(exitCodeFor(new InternalError())).toBe(ExitCode.Error)
  })

  it('treat connection failures anywhere in the cause chain as unavailable', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })
    expect(exitCodeFor(new InternalError('fetch failed', { cause: new Error('x', { cause: refused }) }))).toBe(ExitCode.Unavailable)
    expect(exitCodeFor(new AggregateError([refused]))).toBe(ExitCode.Unavailable)
    expect(describeError(new Error('fetch failed', { cause: refused }))).toBe('fetch failed (ECONNREFUSED)')
  })

  it('keep the code chosen by a CliError and fall back to 1', () => {
    expect(exitCodeFor(new CliError('bad', ExitCode.Usage))).toBe(ExitCode.Usage)
    expect(exitCodeFor(new Error('boom'))).toBe(ExitCode.Error)
    expect(exitCodeFor('weird')).toBe(ExitCode.Error)
  })

  it('describe an error in one line', () => {
    expect(describeError(new Error('first\nsecond'))).toBe('first')
  })
})
