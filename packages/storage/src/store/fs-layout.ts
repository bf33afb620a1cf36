/**
 * On-disk layout of the filesystem backend (format 2), and the low-level helpers around it:
 * paths, directory fsync, I/O error mapping, and crash recovery.
 *
 * ```
 * <dir>/FORMAT                        "ron-storage-fs 2"
 * <dir>/objects/ab/<64 hex>          object bytes + chunk table trailer (see integrity.ts);
 *                                    ab = first byte of the digest; all 256 created up front
 * <dir>/tmp/<uuid>.data              puts in progress (same filesystem, so rename is atomic)
 * <dir>/backup-format-1/             what a migration from format 1 replaced (see fs-format.ts)
 * ```
 *
 * An object file is written whole in `tmp/`, fsynced, and renamed into place, so an object is
 * never visible without its integrity data and there is no torn state to recover from. The 256
 * shard directories exist from the start, so a put never creates a directory (which would cost
 * an fsync of its parent to be durable): a put's durability costs exactly what a bare durable
 * write costs, one file fsync and one directory fsync.
 *
 * @module
 */

import { mkdir, open, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { diskFaultReason, hasErrnoCode, parseAddress, toDiskFault } from '@ron/core'
import type { Address } from '@ron/core'

/** Where one object lives. */
export interface ObjectPaths {
  /** Shard directory (`objects/ab`). */
  dir: string
  /** The object file (its bytes from offset 0, then the chunk table trailer). */
  data: string
}

/**
 * Paths of `address` under `objectsDir`. Validates the address first, so nothing outside the store
 * can be named.
 * @throws `MalformedError` when `address` is not a well-formed address.
 */
export function objectPaths(objectsDir: string, address: Address): ObjectPaths {
  const hex = parseAddress(address, 'address').slice(3)
  const dir = join(objectsDir, hex.slice(0, 2))
  return { dir, data: join(dir, hex) }
}

/** The 256 shard directory names, `00` … `ff`. */
export const SHARDS: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

/** Creates the shard directories that are missing (and makes their entries durable). */
export async function ensureShards(objectsDir: string, doFsync: boolean): Promise<void> {
  const present = new Set(await readdir(objectsDir))
  const missing = SHARDS.filter((s) => !present.has(s))
  if (missing.length === 0) return
  await Promise.all(missing.map((s) => mkdir(join(objectsDir, s), { recursive: true })))
  if (doFsync) await fsyncDir(objectsDir)
}

/** Makes a directory's entries (creations, renames, unlinks) durable. */
export async function fsyncDir(path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } catch (e) {
    // Some filesystems refuse fsync on directories; there is nothing better to do there.
    if (!hasCode(e, 'EINVAL', 'EISDIR', 'EPERM', 'EBADF')) throw e
  } finally {
    await fh.close()
  }
}

/** True when `e` is a Node system error with one of `codes` (core's {@link hasErrnoCode}). */
export const hasCode = hasErrnoCode

/** The write-readiness reason for a system error, when it is one that the disk imposes (core's classifier). */
export const ioReason: (e: unknown) => string | undefined = diskFaultReason

/**
 * Maps disk-imposed write failures (ENOSPC, EDQUOT, EFBIG, EIO, EROFS) to `NotReadyError` with
 * `details.reason` (`disk_full`, `io_error`, `read_only`) so the service can flip write
 * readiness. RonErrors and other errors pass through unchanged.
 */
export function mapIoError(e: unknown): unknown {
  return toDiskFault(e, 'storage')
}

/** What {@link recover} did. */
export interface RecoveryReport {
  /** Entries removed from `tmp/` (interrupted puts). */
  tmpRemoved: number
}

/**
 * Crash recovery, run when a store opens: empties `tmp/` (leftovers of interrupted puts). Objects
 * need no scan: each is one file renamed into place after its fsync.
 */
export async function recover(tmpDir: string): Promise<RecoveryReport> {
  const report: RecoveryReport = { tmpRemoved: 0 }
  for (const name of await readdir(tmpDir)) {
    await rm(join(tmpDir, name), { recursive: true, force: true })
    report.tmpRemoved++
  }
  return report
}
