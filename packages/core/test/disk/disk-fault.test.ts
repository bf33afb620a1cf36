import { describe, expect, it } from 'vitest'
import { BusyError, NotReadyError, diskFaultReason, hasErrnoCode, isRonError, toDiskFault } from '../../src/index.js'

function sysError(code: string, message = `${code}: failed`): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code })
}

describe('disk faults', () => {
  it('classifies the errors a disk imposes and nothing else', () => {
    expect(diskFaultReason(sysError('ENOSPC'))).toBe('disk_full')
    expect(diskFaultReason(sysError('EDQUOT'))).toBe('disk_full')
    expect(diskFaultReason(sysError('EFBIG'))).toBe('disk_full')
    expect(diskFaultReason(sysError('EIO'))).toBe('io_error')
    expect(diskFaultReason(sysError('EROFS'))).toBe('read_only')
    expect(diskFaultReason(new Error('MDB_MAP_FULL: Environment mapsize limit reached'))).toBe('disk_full')
    expect(diskFaultReason(sysError('ENOENT'))).toBeUndefined()
    expect(diskFaultReason(new TypeError('x is undefined'))).toBeUndefined()
    expect(diskFaultReason(new NotReadyError('no space left', { details: { reason: 'closed' } }))).toBeUndefined()
    expect(diskFaultReason(null)).toBeUndefined()
    expect(diskFaultReason('ENOSPC')).toBeUndefined()
  })

  it('turns a disk fault into a retryable 503 NotReady naming the reason, and passes the rest through', () => {
    const cause = sysError('ENOSPC')
    const e = toDiskFault(cause, 'index')
    expect(isRonError(e, 'NotReady')).toBe(true)
    const err = e as NotReadyError
    expect(err.status).toBe(503)
    expect(err.retryable).toBe(true)
    expect(err.retryAfterMs).toBe(1000)
    expect(err.details).toEqual({ reason: 'disk_full' })
    expect(err.message).toBe('index not writable: disk_full')
    expect(err.cause).toBe(cause)
    const busy = new BusyError()
    expect(toDiskFault(busy)).toBe(busy)
    const bug = new TypeError('bug')
    expect(toDiskFault(bug)).toBe(bug)
  })

  it('hasErrnoCode matches any of the given codes', () => {
    expect(hasErrnoCode(sysError('EEXIST'), 'ENOENT', 'EEXIST')).toBe(true)
    expect(hasErrnoCode(sysError('EEXIST'), 'ENOENT')).toBe(false)
    expect(hasErrnoCode(undefined, 'ENOENT')).toBe(false)
  })
})
