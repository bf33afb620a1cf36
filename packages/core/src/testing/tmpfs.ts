/**
 * A small real filesystem for disk-fault tests: a tmpfs of a few hundred KiB that fills up
 * (ENOSPC) and can be remounted read-only (EROFS), where the test may mount one (root on Linux).
 * Where it cannot, {@link mountTmpfs} returns `undefined` and the test injects the fault instead.
 *
 * @module
 */

import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** A mounted tmpfs. */
export interface Tmpfs {
  /** Mount point (an empty directory at first). */
  readonly path: string
  /** Fills the free space with one file (`fill.bin`), so the next write fails with ENOSPC. */
  fill(): Promise<void>
  /** Removes `fill.bin`: writes succeed again. */
  unfill(): Promise<void>
  /** Remounts read-only (writes fail with EROFS), or back to read-write. */
  setReadOnly(readOnly: boolean): Promise<void>
  /** Unmounts (lazily, so open handles do not block it) and removes the mount point. Idempotent. */
  close(): Promise<void>
}

/**
 * Mounts a tmpfs of `sizeBytes` (rounded up to pages) on a fresh directory. Resolves to
 * `undefined` when this process cannot mount (not root, not Linux, no `mount` binary): the caller
 * then falls back to an injected fault.
 *
 * @example
 * ```ts
 * const fs = await mountTmpfs(512 * 1024)
 * if (fs) { await fs.fill(); await expect(write(fs.path)).rejects.toMatchObject({ code: 'ENOSPC' }) ; await fs.close() }
 * ```
 */
export async function mountTmpfs(sizeBytes = 512 * 1024): Promise<Tmpfs | undefined> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return undefined
  const path = await mkdtemp(join(tmpdir(), 'ron-tmpfs-'))
  const size = Math.max(4096, Math.ceil(sizeBytes / 4096) * 4096)
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', path])
  } catch {
    await rm(path, { recursive: true, force: true })
    return undefined
  }
  let closed = false
  const fillPath = join(path, 'fill.bin')
  return {
    path,
    async fill() {
      // One write of more than the volume holds: it stops at ENOSPC with the volume full.
      await writeFile(fillPath, Buffer.alloc(size)).catch((e: unknown) => {
        if ((e as { code?: unknown }).code !== 'ENOSPC') throw e
      })
    },
    async unfill() {
      await rm(fillPath, { force: true })
    },
    async setReadOnly(readOnly: boolean) {
      await run('mount', ['-o', `remount,${readOnly ? 'ro' : 'rw'}`, path])
    },
    async close() {
      if (closed) return
      closed = true
      await run('umount', ['-l', path]).catch(() => undefined)
      await rm(path, { recursive: true, force: true })
    },
  }
}
