/**
 * On-disk layout of the filesystem backend, and the low-level helpers around it: paths, directory
 * fsync, I/O error mapping, and crash recovery.
 *
 * ```
 * <dir>/objects/ab/cd/<64 hex>       object bytes (ab, cd = first two bytes of the digest)
 * <dir>/objects/ab/cd/<64 hex>.b3t   its chunk table (see integrity.ts)
 * <dir>/tmp/<uuid>.data|.b3t         puts in progress (same filesystem, so rename is atomic)
 * ```
 *
 * @module
 */

import { open, readdir, readFile, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { NotReadyError, isRonError, parseAddress } from '@ron/core'
import type { Address } from '@ron/core'
import { decodeTable } from './integrity.js'

/** Where one object lives. */
export interface ObjectPaths {
  /** Shard directory holding both files. */
  dir: string
  /** The object bytes. */
  data: string
  /** The chunk table sidecar. */
  table: string
}

/** File name suffix of chunk table sidecars. */
export const TABLE_SUFFIX = '.b3t'
const HEX64 = /^[0-9a-f]{64}$/
const HEX2 = /^[0-9a-f]{2}$/

/**
 * Paths of `address` under `objectsDir`. Validates the address first, so nothing outside the store
 * can be named.
 * @throws `MalformedError` when `address` is not a well-formed address.
 */
export function objectPaths(objectsDir: string, address: Address): ObjectPaths {
  const hex = parseAddress(address, 'address').slice(3)
  const dir = join(objectsDir, hex.slice(0, 2), hex.slice(2, 4))
  return { dir, data: join(dir, hex), table: join(dir, hex + TABLE_SUFFIX) }
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

/** True when `e` is a Node system error with one of `codes`. */
export function hasCode(e: unknown, ...codes: string[]): boolean {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === 'string' && codes.includes(code)
}

const IO_REASONS: Record<string, string> = {
  ENOSPC: 'disk_full',
  EDQUOT: 'disk_full',
  EFBIG: 'disk_full',
  EIO: 'io_error',
  EROFS: 'read_only',
}

/** The write-readiness reason for a system error, when it is one that the disk imposes. */
export function ioReason(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === 'string' ? IO_REASONS[code] : undefined
}

/**
 * Maps disk-imposed write failures (ENOSPC, EDQUOT, EFBIG, EIO, EROFS) to {@link NotReadyError}
 * with `details.reason` (`disk_full`, `io_error`, `read_only`) so the service can flip write
 * readiness. RonErrors and other errors pass through unchanged.
 */
export function mapIoError(e: unknown): unknown {
  if (isRonError(e)) return e
  const reason = ioReason(e)
  if (reason === undefined) return e
  return new NotReadyError(`storage not writable: ${reason}`, { details: { reason }, cause: e, retryAfterMs: 1000 })
}

/** What {@link recover} did. */
export interface RecoveryReport {
  /** Entries removed from `tmp/` (interrupted puts). */
  tmpRemoved: number
  /** Objects removed because their table was missing or invalid (torn puts). */
  tornRemoved: number
  /** Tables removed because their object was missing. */
  orphanTablesRemoved: number
  /** Valid objects seen. */
  objects: number
}

/**
 * Crash recovery, run when a store opens: empties `tmp/` (leftovers of interrupted puts), removes
 * objects whose chunk table is missing or does not decode for them (a put torn between its two
 * renames) and tables without an object. Never touches an object with a valid table, and leaves
 * unknown file names alone.
 */
export async function recover(objectsDir: string, tmpDir: string): Promise<RecoveryReport> {
  const report: RecoveryReport = { tmpRemoved: 0, tornRemoved: 0, orphanTablesRemoved: 0, objects: 0 }
  for (const name of await readdir(tmpDir)) {
    await rm(join(tmpDir, name), { recursive: true, force: true })
    report.tmpRemoved++
  }
  for (const a of await readdirSafe(objectsDir)) {
    if (!HEX2.test(a)) continue
    for (const b of await readdirSafe(join(objectsDir, a))) {
      if (!HEX2.test(b)) continue
      const shard = join(objectsDir, a, b)
      const names = new Set(await readdirSafe(shard))
      let changed = false
      for (const name of names) {
        if (HEX64.test(name)) {
          if (await hasValidTable(shard, name)) {
            report.objects++
          } else {
            await rm(join(shard, name), { force: true })
            await rm(join(shard, name + TABLE_SUFFIX), { force: true })
            report.tornRemoved++
            changed = true
          }
        } else if (name.endsWith(TABLE_SUFFIX) && HEX64.test(name.slice(0, -TABLE_SUFFIX.length))) {
          if (!names.has(name.slice(0, -TABLE_SUFFIX.length))) {
            await rm(join(shard, name), { force: true })
            report.orphanTablesRemoved++
            changed = true
          }
        }
      }
      if (changed) await fsyncDir(shard)
    }
  }
  return report
}

async function readdirSafe(path: string): Promise<string[]> {
  try {
    return await readdir(path)
  } catch (e) {
    if (hasCode(e, 'ENOENT', 'ENOTDIR')) return []
    throw e
  }
}

async function hasValidTable(shard: string, hex: string): Promise<boolean> {
  try {
    const st = await stat(join(shard, hex))
    if (!st.isFile()) return true // not ours to judge; leave it
    const bytes = await readFile(join(shard, hex + TABLE_SUFFIX))
    const t = decodeTable(bytes, { address: `b3:${hex}` })
    // A table with a good checksum for this address but a different size means the data file was
    // truncated or grown after the fact: that is corruption for repair, not a torn put, so keep it.
    return typeof t !== 'string'
  } catch (e) {
    if (hasCode(e, 'ENOENT')) return false
    throw e
  }
}
