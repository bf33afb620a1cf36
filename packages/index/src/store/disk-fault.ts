/**
 * LMDB's failures as SPEC §4 disk faults. `lmdb` reports a failed commit as an `Error('Commit
 * failed')` whose `commitError` promise rejects, in the same turn, with LMDB's own error — a
 * numeric `errno` (`code: 5`), not Node's string code. On a full volume the kernel answers LMDB's
 * `writev` with a short write, which LMDB reports as `EIO`; so an I/O error on a volume with (almost)
 * no space left is `disk_full`. Everything maps through core's {@link toDiskFault}, so the answer is
 * the same 503 `NotReady` with `details.reason` `disk_full`, `io_error` or `read_only` as storage's.
 *
 * @module
 */

import { statfs } from 'node:fs/promises'
import { constants } from 'node:os'
import { diskFaultReason, isRonError, toDiskFault } from '@ron/core'
import type { DiskFaultReason } from '@ron/core'

/** Free bytes below which an I/O error is taken for a full volume. */
export const LOW_SPACE_BYTES = 64 * 1024

const ERRNO_REASONS = new Map<number, DiskFaultReason>([
  [constants.errno.ENOSPC, 'disk_full'],
  [constants.errno.EDQUOT, 'disk_full'],
  [constants.errno.EFBIG, 'disk_full'],
  [constants.errno.EIO, 'io_error'],
  [constants.errno.EROFS, 'read_only'],
])

const STRING_CODES: Readonly<Record<DiskFaultReason, string>> = { disk_full: 'ENOSPC', io_error: 'EIO', read_only: 'EROFS' }

/**
 * LMDB's own error behind a failed commit: `commitError` settles in the same turn as the commit's
 * rejection, so it is looked at once every pending callback of that turn has run. The promise is
 * always handled here, so a failed commit never becomes an unhandled rejection.
 */
async function lmdbCause(e: unknown): Promise<unknown> {
  const pending = (e as { commitError?: unknown } | null)?.commitError
  if (!(pending instanceof Promise)) return e
  const settled: Promise<unknown> = pending.then(
    () => e,
    (cause: unknown) => cause,
  )
  return Promise.race([settled, new Promise<unknown>((resolve) => setImmediate(resolve, e))])
}

function reasonOf(e: unknown): DiskFaultReason | undefined {
  const r = diskFaultReason(e)
  if (r !== undefined) return r
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === 'number' ? ERRNO_REASONS.get(Math.abs(code)) : undefined
}

/** Free bytes of the volume holding `dir`, or `undefined` when it cannot be asked. */
export async function freeBytes(dir: string): Promise<number | undefined> {
  try {
    const s = await statfs(dir)
    return s.bavail * s.bsize
  } catch {
    return undefined
  }
}

/**
 * Turns a failure of an LMDB write, commit or flush in `dir` into the SPEC §4 disk fault
 * ({@link NotReadyError} with `details.reason`); a RonError thrown by the caller's own code (a
 * compare-and-set conflict) passes through. Any other failure of a write is the disk's: an
 * `io_error` unless the volume is (almost) full.
 */
export async function lmdbFault(e: unknown, dir: string, what = 'index'): Promise<unknown> {
  if (isRonError(e)) return e
  const cause = await lmdbCause(e)
  let reason = reasonOf(cause) ?? reasonOf(e) ?? 'io_error'
  if (reason === 'io_error') {
    const free = await freeBytes(dir)
    if (free !== undefined && free < LOW_SPACE_BYTES) reason = 'disk_full'
  }
  const err = Object.assign(new Error(cause instanceof Error ? cause.message : String(cause)), { code: STRING_CODES[reason], cause })
  return toDiskFault(err, what)
}
