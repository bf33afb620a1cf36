/**
 * How the registry answers a failed local write (SPEC.md §4): a disk fault is a 503 `NotReady`
 * with `details.reason` `disk_full`, `io_error` or `read_only` (core's classifier), never a 500.
 *
 * @module
 * @internal
 */

import { NotReadyError, diskFaultReason, isRonError, toDiskFault } from '@ron/core'

/** True for a Node system error (it names the syscall that failed). */
function isSystemError(e: unknown): boolean {
  return typeof (e as { syscall?: unknown } | null)?.syscall === 'string'
}

/**
 * The error to answer for a failed write of the log: disk faults become `NotReady` with their
 * reason; any other system error of the write is `NotReady` `io_error`; RonErrors and bugs pass.
 */
export function writeFault(e: unknown): unknown {
  const mapped = toDiskFault(e, 'registry log')
  if (mapped !== e || isRonError(e) || !isSystemError(e)) return mapped
  return new NotReadyError('registry log not writable: io_error', { details: { reason: 'io_error' }, cause: e, retryAfterMs: 1000 })
}

/**
 * The readiness reason of a failed write (`disk_full`, `io_error`, `read_only`), or `undefined`
 * when the failure is not the disk's (a bug, a closed store).
 */
export function faultReason(e: unknown): string | undefined {
  const direct = diskFaultReason(e)
  if (direct !== undefined) return direct
  if (isRonError(e, 'NotReady')) {
    const r = (e.details as { reason?: unknown } | undefined)?.reason
    return typeof r === 'string' ? r : 'io_error'
  }
  return isSystemError(e) ? 'io_error' : undefined
}
