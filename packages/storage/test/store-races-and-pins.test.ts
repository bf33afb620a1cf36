/**
 * Regression tests for review finding 9 (pins crash durability). They act at an exact point
 * inside the code under test, so this file wraps `node:fs/promises` readFile and the fs layer's
 * `fsyncDir` with pass-through spies. (Finding 7, an open racing a delete between the data and
 * table files, cannot happen since store format 2 keeps both in one file: `test/store/fs.test.ts`.)
 */
import { mkdir, mkdtemp, readFile, rm, rmdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { PinSet } from '../src/pins.js'

/** Runs before the fs backend reads a file (set by a test, cleared after each). */
const hooks = vi.hoisted(() => ({
  beforeReadFile: undefined as ((path: string) => Promise<void>) | undefined,
  fsyncDirCalls: [] as Array<{ dir: string; pinsFile: string | undefined }>,
}))

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  const readFileSpy = async (...args: Parameters<typeof real.readFile>): Promise<unknown> => {
    const [path] = args
    if (typeof path === 'string' && hooks.beforeReadFile !== undefined) await hooks.beforeReadFile(path)
    return real.readFile(...args)
  }
  return { ...real, default: { ...real, readFile: readFileSpy }, readFile: readFileSpy }
})

vi.mock('../src/store/fs-layout.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/store/fs-layout.js')>()
  const { readFile: rf } = await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises')
  return {
    ...real,
    async fsyncDir(path: string): Promise<void> {
      // What pins.json holds at the moment the directory is synced (the rename must come first).
      const pinsFile = await rf(join(path, 'pins.json'), 'utf8').catch(() => undefined)
      hooks.fsyncDirCalls.push({ dir: path, pinsFile })
      return real.fsyncDir(path)
    },
  }
})

describe('PinSet durability', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ron-fix-pins-'))
    hooks.fsyncDirCalls.length = 0
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  const A = `b3:${'a'.repeat(64)}` as const
  const B = `b3:${'b'.repeat(64)}` as const

  it('fsyncs the meta directory after renaming pins.json into place, on add and on remove', async () => {
    const meta = join(dir, 'meta')
    const pins = await PinSet.open(meta)
    hooks.fsyncDirCalls.length = 0
    expect(await pins.add(A)).toBe(true)
    expect(hooks.fsyncDirCalls).toEqual([{ dir: meta, pinsFile: JSON.stringify({ pins: [A] }) }])
    expect(await pins.remove(A)).toBe(true)
    expect(hooks.fsyncDirCalls[1]).toEqual({ dir: meta, pinsFile: JSON.stringify({ pins: [] }) })
  })

  it('leaves memory unchanged when persisting a pin fails, so a retry pins and persists it', async () => {
    const meta = join(dir, 'meta')
    const pins = await PinSet.open(meta)
    const blocker = join(meta, 'pins.json.tmp')
    await mkdir(blocker) // writing the temp file now fails (EISDIR)
    await expect(pins.add(A)).rejects.toMatchObject({ code: 'EISDIR' })
    expect(pins.has(A)).toBe(false)
    expect(pins.size).toBe(0)
    await rmdir(blocker)
    expect(await pins.add(A)).toBe(true) // the retry really writes
    expect(JSON.parse(await readFile(join(meta, 'pins.json'), 'utf8'))).toEqual({ pins: [A] })
    expect((await PinSet.open(meta)).has(A)).toBe(true)
  })

  it('keeps a pin in memory when persisting its removal fails, so a retry unpins and persists it', async () => {
    const meta = join(dir, 'meta')
    const pins = await PinSet.open(meta)
    await pins.add(A)
    const blocker = join(meta, 'pins.json.tmp')
    await mkdir(blocker)
    await expect(pins.remove(A)).rejects.toMatchObject({ code: 'EISDIR' })
    expect(pins.has(A)).toBe(true)
    await rmdir(blocker)
    expect(await pins.remove(A)).toBe(true)
    expect((await PinSet.open(meta)).has(A)).toBe(false)
  })

  it('persists every one of concurrent pins, in memory and on disk', async () => {
    const meta = join(dir, 'meta')
    const pins = await PinSet.open(meta)
    expect(await Promise.all([pins.add(A), pins.add(B), pins.add(A)])).toEqual([true, true, false])
    expect(pins.list().sort()).toEqual([A, B])
    expect((await PinSet.open(meta)).list().sort()).toEqual([A, B])
  })

  it('applies changes at once without a directory (memory mode)', async () => {
    const pins = await PinSet.open()
    const added = pins.add(A)
    expect(pins.has(A)).toBe(true) // same turn: the delete/pin protocol relies on it
    expect(await added).toBe(true)
    expect(await pins.remove(A)).toBe(true)
    expect(pins.has(A)).toBe(false)
  })
})
