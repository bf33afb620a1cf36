/**
 * The data directory's format version, and the migration from format 1.
 *
 * - Format 1 (no `FORMAT` file): `objects/ab/cd/<hex>` holds the bytes and `<hex>.b3t` beside it
 *   the chunk table; a put costs three fsyncs (data, table, directory) plus two more whenever it
 *   creates one of the 65,536 shard directories.
 * - Format 2 (`FORMAT` = `ron-storage-fs 2`): `objects/ab/<hex>`, the table a trailer in the
 *   object's own file (see `integrity.ts`), the 256 shards created up front; a put costs the same
 *   as a bare durable write: one file fsync, one rename, one directory fsync.
 *
 * Opening a format-1 directory migrates it in place, object by object: the old data file and
 * table are first hard-linked into `backup-format-1/` (same layout; copied when the filesystem
 * refuses links), then the new file (copy of the bytes + trailer) is written in `tmp/`, fsynced
 * and renamed to `objects/ab/<hex>`, and the old files are removed once the directories holding
 * the new file and the backup are fsynced (per shard). `FORMAT` is written last, so
 * a crash mid-way resumes on the next start (an object already in place with a valid trailer is
 * not migrated twice). Objects format 1 would have removed as torn (no valid table) are moved to the
 * backup only. Delete `backup-format-1/` once the node runs well. A directory of a newer or
 * unknown format is refused with a clear error.
 *
 * @module
 */

import { constants } from 'node:fs'
import { copyFile, link, mkdir, open, readFile, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MalformedError } from '@ron/core'
import type { Address } from '@ron/core'
import { decodeTable, encodeTrailer } from './integrity.js'
import { fsyncDir, hasCode } from './fs-layout.js'
import { writeAll } from './fs-io.js'
import { openObject } from './fs-object.js'

/** The format this code writes and reads. */
export const FORMAT_VERSION = 2
/** Name of the format file in the data directory. */
export const FORMAT_FILE = 'FORMAT'
/** Where a migration from format 1 keeps what it replaced. */
export const BACKUP_DIR = 'backup-format-1'
const FORMAT_TEXT = `ron-storage-fs ${FORMAT_VERSION}\n`
const LEGACY_TABLE_SUFFIX = '.b3t'
const HEX64 = /^[0-9a-f]{64}$/
const HEX2 = /^[0-9a-f]{2}$/

/** What a migration did. */
export interface MigrationReport {
  /** Format migrated from. */
  from: number
  /** Objects rewritten into the current format. */
  objects: number
  /** Format-1 leftovers without a usable table (torn puts, orphan tables), moved to the backup only. */
  unusable: number
  /** Directory holding the replaced files. */
  backup: string
}

/**
 * Makes `dir` a current-format directory: nothing to do when `FORMAT` says so; a fresh directory
 * gets its `FORMAT`; a format-1 directory is migrated (see the module doc).
 * @throws {@link MalformedError} (details `{ field: 'dataDir', format }`) for a directory of
 *   another format this code cannot read.
 */
export async function prepareFormat(dir: string, objectsDir: string, tmpDir: string, doFsync: boolean): Promise<MigrationReport | undefined> {
  let text: string | undefined
  try {
    text = await readFile(join(dir, FORMAT_FILE), 'utf8')
  } catch (e) {
    if (!hasCode(e, 'ENOENT')) throw e
  }
  if (text !== undefined) {
    const m = /^ron-storage-fs (\d+)\s*$/.exec(text)
    const version = m ? Number(m[1]) : undefined
    if (version === FORMAT_VERSION) return undefined
    throw new MalformedError(
      `data directory ${dir} holds storage format ${version ?? `'${text.trim().slice(0, 40)}'`}; this version of RON reads format ${FORMAT_VERSION} (and migrates format 1). Use a matching RON version, or point storage at another directory.`,
      { details: { field: 'dataDir', format: version ?? text.trim().slice(0, 40), supported: FORMAT_VERSION } },
    )
  }
  const report = (await hasShards(objectsDir)) ? await migrateFromV1(dir, objectsDir, tmpDir, doFsync) : undefined
  const tmp = join(tmpDir, `${FORMAT_FILE}.new`)
  await writeFile(tmp, FORMAT_TEXT)
  if (doFsync) {
    const fh = await open(tmp, 'r+')
    try {
      await fh.sync()
    } finally {
      await fh.close()
    }
  }
  await rename(tmp, join(dir, FORMAT_FILE))
  if (doFsync) await fsyncDir(dir)
  return report
}

/** A format-1 directory has second-level shard directories (`objects/ab/cd/`). */
async function hasShards(objectsDir: string): Promise<boolean> {
  for (const a of (await readdirSafe(objectsDir)).filter((n) => HEX2.test(n))) {
    if ((await readdirSafe(join(objectsDir, a))).some((n) => HEX2.test(n))) return true
  }
  return false
}

async function migrateFromV1(dir: string, objectsDir: string, tmpDir: string, doFsync: boolean): Promise<MigrationReport> {
  const backup = join(dir, BACKUP_DIR)
  const report: MigrationReport = { from: 1, objects: 0, unusable: 0, backup }
  for (const a of (await readdirSafe(objectsDir)).filter((n) => HEX2.test(n)).sort()) {
    const target = join(objectsDir, a)
    for (const b of (await readdirSafe(target)).filter((n) => HEX2.test(n)).sort()) {
      const shard = join(objectsDir, a, b)
      const backupShard = join(backup, 'objects', a, b)
      const names = new Set(await readdirSafe(shard))
      let kept = false
      let madeDirs = false
      const keep = async (name: string): Promise<void> => {
        if ((await mkdir(backupShard, { recursive: true })) !== undefined) madeDirs = true
        await linkOrCopy(join(shard, name), join(backupShard, name), join(tmpDir, `backup-${name}`), doFsync)
        kept = true
      }
      // Old files are removed at the end of the shard, once what replaces them is durable.
      const drops: string[] = []
      const drop = (...paths: string[]): void => {
        drops.push(...paths)
      }
      for (const name of [...names].sort()) {
        const oldData = join(shard, name)
        if (HEX64.test(name)) {
          const address: Address = `b3:${name}`
          const oldTable = oldData + LEGACY_TABLE_SUFFIX
          const hasTable = names.has(name + LEGACY_TABLE_SUFFIX)
          await keep(name)
          if (hasTable) await keep(name + LEGACY_TABLE_SUFFIX)
          const newPath = join(target, name)
          // Already migrated by an interrupted earlier run: in place with a valid trailer.
          const current = await openObject(newPath, address, false, () => undefined)
          if (current !== undefined) await current.fh.close()
          if (current !== undefined && 'table' in current.opened) {
            drop(oldData, oldTable)
            continue
          }
          const table = hasTable ? decodeTable(await readFile(oldTable), { address }) : 'table_missing'
          if (typeof table === 'string') {
            // Format 1 would have removed this as a torn put: it stays in the backup only.
            drop(oldData, oldTable)
            report.unusable++
            continue
          }
          const tmp = join(tmpDir, `migrate-${name}`)
          await copyFile(oldData, tmp, constants.COPYFILE_FICLONE)
          const fh = await open(tmp, 'a')
          try {
            await writeAll(fh, encodeTrailer(table))
            if (doFsync) await fh.sync()
          } finally {
            await fh.close()
          }
          await rename(tmp, newPath)
          drop(oldData, oldTable)
          report.objects++
        } else if (name.endsWith(LEGACY_TABLE_SUFFIX) && HEX64.test(name.slice(0, -LEGACY_TABLE_SUFFIX.length)) && !names.has(name.slice(0, -LEGACY_TABLE_SUFFIX.length))) {
          // A table without its data file: either its object never arrived (format 1 would have
          // removed it), or an interrupted earlier run migrated the object and removed its data
          // file but not yet this table. Only the first is a leftover.
          const hex = name.slice(0, -LEGACY_TABLE_SUFFIX.length)
          const current = await openObject(join(target, hex), `b3:${hex}`, false, () => undefined)
          if (current !== undefined) await current.fh.close()
          await keep(name)
          drop(oldData)
          if (current === undefined || !('table' in current.opened)) report.unusable++
        }
      }
      if (doFsync && drops.length > 0) {
        // Before an old file goes: the renames into objects/ab and the backup's entries (and any
        // directory created for them) must survive a crash, or the object would be in neither place.
        await fsyncDir(target)
        if (kept) await fsyncDir(backupShard)
        if (madeDirs) for (const d of [join(backup, 'objects', a), join(backup, 'objects'), backup, dir]) await fsyncDir(d)
      }
      for (const p of drops) await rm(p, { force: true })
      await rmdir(shard).catch(() => undefined) // only when empty: unknown files stay
    }
    // The renames into objects/ab must be durable before FORMAT says the migration is done.
    if (doFsync) await fsyncDir(target)
  }
  return report
}

/**
 * Puts `from` at `to` as a hard link, or as a copy where the filesystem refuses links. The copy
 * is written at `tmp` (in `tmp/`, emptied at every start), fsynced and renamed into place, so
 * `to` never holds a partial copy: an existing `to` is always a whole one kept by an interrupted
 * earlier run.
 */
async function linkOrCopy(from: string, to: string, tmp: string, doFsync: boolean): Promise<void> {
  try {
    await link(from, to)
  } catch (e) {
    if (hasCode(e, 'EEXIST')) return // an interrupted earlier run kept it already
    if (!hasCode(e, 'EXDEV', 'EPERM', 'ENOTSUP', 'EMLINK', 'ENOSYS')) throw e
    try {
      await stat(to)
      return // kept whole by an interrupted earlier run
    } catch (err) {
      if (!hasCode(err, 'ENOENT')) throw err
    }
    await copyFile(from, tmp)
    if (doFsync) {
      // The old file is removed once its object is migrated: its copy must be on disk by then.
      const fh = await open(tmp, 'r+')
      try {
        await fh.sync()
      } finally {
        await fh.close()
      }
    }
    await rename(tmp, to)
  }
}

async function readdirSafe(path: string): Promise<string[]> {
  try {
    return await readdir(path)
  } catch (e) {
    if (hasCode(e, 'ENOENT', 'ENOTDIR')) return []
    throw e
  }
}
