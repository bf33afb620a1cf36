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

describe('token precheck before a streamed upload', () => {
  it('rejects malformed, expired and under-scoped tokens with exit code 4', async () => {
    const { precheckToken } = await import('../src/client.js')
    const enc = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url')
    const tok = (claims: unknown): string => `${enc({ alg: 'EdDSA' })}.${enc(claims)}.c2ln`
    const codeOf = (t: string): number | undefined => {
      try {
        precheckToken(t, 'storage:write', 1000)
        return undefined
      } catch (e) {
        return exitCodeFor(e)
      }
    }
    expect(codeOf('garbage')).toBe(ExitCode.Auth)
    expect(codeOf(tok({ exp: 969, scope: 'storage:write' }))).toBe(ExitCode.Auth)
    // Within the node's clock tolerance (30 s) past exp the node still accepts it, so the CLI does too.
    expect(codeOf(tok({ exp: 971, scope: 'storage:write' }))).toBeUndefined()
    expect(codeOf(tok({ exp: 2000, scope: 'storage:read' }))).toBe(ExitCode.Auth)
    expect(codeOf(tok({ exp: 2000, scope: 'registry:propose storage:write' }))).toBeUndefined()
  })
})
