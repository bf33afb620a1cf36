import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { diskFaultReason } from '../../src/index.js'
import { mountTmpfs } from '../../src/testing/index.js'

describe('mountTmpfs', () => {
  it('gives a real volume that fills up (ENOSPC), turns read-only (EROFS) and recovers, or undefined where it cannot mount', async () => {
    const fs = await mountTmpfs(64 * 1024)
    if (fs === undefined) {
      // Not root, or not Linux: the helper says so instead of failing; callers inject the fault.
      expect(process.platform !== 'linux' || process.getuid?.() !== 0).toBe(true)
      return
    }
    try {
      await writeFile(join(fs.path, 'a'), 'ok')
      await fs.fill()
      const full = await writeFile(join(fs.path, 'b'), Buffer.alloc(8192)).then(() => undefined, (e: unknown) => e)
      expect(diskFaultReason(full)).toBe('disk_full')
      await fs.unfill()
      await writeFile(join(fs.path, 'b'), Buffer.alloc(8192))
      await fs.setReadOnly(true)
      const ro = await mkdir(join(fs.path, 'd')).then(() => undefined, (e: unknown) => e)
      expect(diskFaultReason(ro)).toBe('read_only')
      await fs.setReadOnly(false)
      await mkdir(join(fs.path, 'd'))
    } finally {
      await fs.close()
      await fs.close()
    }
  })
})
