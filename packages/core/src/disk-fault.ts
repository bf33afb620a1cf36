/**
 * Faults the local disk imposes (SPEC.md §4): one classifier for every service, so a full, failing
 * or read-only volume is a 503 `NotReady` with the same `details.reason` wherever it happens, never
 * a 500 and never a crash.
 *
 * @module
 */

import { NotReadyError, isRonError } from './errors.js'

/** Why the local disk refused a write: SPEC.md §4's `details.reason` values of a disk fault. */
export type DiskFaultReason = 'disk_full' | 'io_error' | 'read_only'

const REASONS: Readonly<Record<string, DiskFaultReason>> = Object.freeze({
  ENOSPC: 'disk_full',
  EDQUOT: 'disk_full',
  EFBIG: 'disk_full',
  EIO: 'io_error',
  EROFS: 'read_only',
})

// LMDB reports its own failures by message and negative code; map the ones a full volume causes.
const LMDB_FULL = /MDB_MAP_FULL|No space left|ENOSPC/i

/** True when `e` is a Node system error with one of `codes` (`ENOENT`, `EEXIST`, …). */
export function hasErrnoCode(e: unknown, ...codes: string[]): boolean {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === 'string' && codes.includes(code)
}

/**
 * The {@link DiskFaultReason} of a system error the disk imposed (ENOSPC, EDQUOT, EFBIG → `disk_full`;
 * EIO → `io_error`; EROFS → `read_only`; an LMDB map-full or "no space" failure → `disk_full`), or
 * `undefined` for anything else (a bug, a missing file, a RonError).
 *
 * @example
 * ```ts
 * try { await fh.sync() } catch (e) { if (diskFaultReason(e) === 'disk_full') alarm() ; throw e }
 * ```
 */
export function diskFaultReason(e: unknown): DiskFaultReason | undefined {
  if (e === null || typeof e !== 'object' || isRonError(e)) return undefined
  const code = (e as { code?: unknown }).code
  if (typeof code === 'string') {
    const r = REASONS[code]
    if (r !== undefined) return r
  }
  const message = (e as { message?: unknown }).message
  if (typeof message === 'string' && LMDB_FULL.test(message)) return 'disk_full'
  return undefined
}

/**
 * Turns a disk-imposed failure into {@link NotReadyError} (503, `Retry-After` 1 s) with
 * `details.reason` set to its {@link DiskFaultReason}, keeping the original as `cause`. Anything
 * else — RonErrors included — passes through unchanged, so `throw toDiskFault(e, 'index')` is safe
 * in any `catch`.
 *
 * @param what - the subject of the message: `"<what> not writable: disk_full"`. @default 'storage'
 * @example
 * ```ts
 * try { await log.append(entry) } catch (e) { throw toDiskFault(e, 'registry log') }
 * ```
 */
export function toDiskFault(e: unknown, what = 'storage'): unknown {
  const reason = diskFaultReason(e)
  if (reason === undefined) return e
  return new NotReadyError(`${what} not writable: ${reason}`, { details: { reason }, cause: e, retryAfterMs: 1000 })
}
