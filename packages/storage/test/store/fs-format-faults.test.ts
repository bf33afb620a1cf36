/**
 * Migration from format 1 under injected file-system faults: where the filesystem refuses hard
 * links (the backup is then a copy), a run interrupted in the middle of copying a file to the
 * backup never leaves a partial copy there that a resumed run would take for the whole file; and
 * an old file is removed only after the directories holding its replacement and its backup were
 * fsynced.
 */
import { cp, mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import * as realFs from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createFsStore } from '../../src/store/index.js'

const fault = vi.hoisted(() => ({ noLinks: false, crashOnBackupCopy: false, log: undefined as string[] | undefined }))

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  return {
    ...real,
    link: (from: string, to: string): Promise<void> => {
      if (fault.noLinks) return Promise.reject(Object.assign(new Error(`EXDEV: cross-device link '${from}' -> '${to}'`), { code: 'EXDEV' }))
      return real.link(from, to)
    },
    rm: (path: string, opts?: Parameters<typeof real.rm>[1]): Promise<void> => {
      fault.log?.push(`rm ${path}`)
      return real.rm(path, opts)
    },
    open: (path: string, flags?: string, mode?: number) => {
      if (flags === 'r') fault.log?.push(`open ${path}`) // how fsyncDir opens a directory
      return real.open(path, flags, mode)
    },
    copyFile: async (from: string, to: string, mode?: number): Promise<void> => {
      const whole = await real.readFile(from)
      if (fault.crashOnBackupCopy && !to.includes('migrate-') && whole.length >= 2) {
        // The process dies half-way through the copy: half the bytes are at `to`.
        fault.crashOnBackupCopy = false
        await real.writeFile(to, whole.subarray(0, whole.length >> 1))
        throw new Error('simulated crash while copying to the backup')
      }
      return real.copyFile(from, to, mode)
    },
  }
})

const FIXTURE = fileURLToPath(new URL('../fixtures/format-1', import.meta.url))

async function files(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name).slice(dir.length + 1))
  }
  return out.sort()
}

describe('fs store format migration without hard links', () => {
  let dir: string
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'ron-fs-format-copy-')), 'data')
    await cp(FIXTURE, dir, { recursive: true })
    fault.noLinks = true
  })
  afterEach(async () => {
    fault.noLinks = false
    fault.crashOnBackupCopy = false
    fault.log = undefined
    await rm(join(dir, '..'), { recursive: true, force: true })
  })

  it('resumes a migration interrupted mid-copy with a whole backup of every old file', async () => {
    const before = await files(dir)
    fault.crashOnBackupCopy = true
    await expect(createFsStore({ dir })).rejects.toThrow('simulated crash')
    expect(fault.crashOnBackupCopy).toBe(false) // the crash happened
    const store = await createFsStore({ dir })
    await store.close()
    const backup = join(dir, 'backup-format-1')
    expect(await files(backup)).toEqual(before)
    for (const f of before) expect((await readFile(join(backup, f))).equals(await realFs.readFile(join(FIXTURE, f)))).toBe(true)
  })
})

describe('fs store format migration durability', () => {
  let dir: string
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'ron-fs-format-order-')), 'data')
    await cp(FIXTURE, dir, { recursive: true })
  })
  afterEach(async () => {
    fault.log = undefined
    await rm(join(dir, '..'), { recursive: true, force: true })
  })

  it('removes an old file only after fsyncing the directories of its replacement and of its backup', async () => {
    const log: string[] = []
    fault.log = log
    const store = await createFsStore({ dir })
    fault.log = undefined
    await store.close()
    const removals = log.map((e, i) => ({ e, i })).filter(({ e }) => e.startsWith(`rm ${join(dir, 'objects')}/`))
    expect(removals.length).toBeGreaterThan(0)
    for (const { e, i } of removals) {
      const rel = e.slice(`rm ${join(dir, 'objects')}/`.length) // ab/cd/<name>
      const [a, b] = rel.split('/')
      const before = log.slice(0, i)
      expect(before, rel).toContain(`open ${join(dir, 'objects', a!)}`)
      expect(before, rel).toContain(`open ${join(dir, 'backup-format-1', 'objects', a!, b!)}`)
    }
  })
})
