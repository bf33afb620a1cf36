/**
 * The data directory's format: a directory written by the format-1 code (committed fixture, made
 * before the layout changed) is migrated on open with a backup; an interrupted migration resumes;
 * an unknown or newer format is refused with a clear error.
 */
import { cp, link, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isRonError } from '@ron/core'
import type { Address } from '@ron/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsStore } from '../../src/store/index.js'
import { fsRecovery } from '../../src/store/testing.js'
import { bytes, collect, listAll, rejection } from './helpers.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/format-1', import.meta.url))
const MANIFEST = fileURLToPath(new URL('../fixtures/format-1.json', import.meta.url))

interface FixtureObject {
  address: Address
  size: number
  seed: number
  chunkSize: number
}

async function manifest(): Promise<FixtureObject[]> {
  return (JSON.parse(await readFile(MANIFEST, 'utf8')) as { objects: FixtureObject[] }).objects
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name).slice(dir.length + 1))
  }
  return out.sort()
}

describe('fs store format', () => {
  let dir: string
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'ron-fs-format-')), 'data')
    await cp(FIXTURE, dir, { recursive: true })
  })
  afterEach(async () => {
    await rm(join(dir, '..'), { recursive: true, force: true })
  })

  it('migrates a directory written by the format-1 code, keeping every object readable and a backup of the old files', async () => {
    const objects = await manifest()
    const before = await walk(dir)
    expect(before.filter((f) => f.endsWith('.b3t'))).toHaveLength(objects.length)
    const store = await createFsStore({ dir })
    expect(fsRecovery(store).migrated).toEqual({ from: 1, objects: objects.length, unusable: 0, backup: join(dir, 'backup-format-1') })
    expect(await readFile(join(dir, 'FORMAT'), 'utf8')).toBe('ron-storage-fs 2\n')
    expect(await listAll(store.list())).toEqual(objects.map((o) => o.address).sort())
    for (const o of objects) {
      const r = (await store.open(o.address))!
      expect(r.size).toBe(o.size)
      expect(r.chunkSize).toBe(o.chunkSize) // objects keep the chunk size they were written with
      expect(Buffer.from((await collect(r.read())).data).equals(Buffer.from(bytes(o.size, o.seed)))).toBe(true)
      await r.close()
      expect(await store.verify(o.address)).toEqual({ ok: true, size: o.size, badChunks: [] })
      expect(await store.stat(o.address)).toEqual({ size: o.size })
    }
    // No sidecars left; the backup holds exactly the old files, byte for byte.
    const after = await walk(dir)
    expect(after.filter((f) => f.startsWith('objects/'))).toEqual(objects.map((o) => join('objects', o.address.slice(3, 5), o.address.slice(3))).sort())
    const backup = after.filter((f) => f.startsWith('backup-format-1/')).map((f) => f.slice('backup-format-1/'.length))
    expect(backup).toEqual(before)
    for (const f of before) expect((await readFile(join(dir, 'backup-format-1', f))).equals(await readFile(join(FIXTURE, f)))).toBe(true)
    await store.close()
    // Opening again does nothing more.
    const again = await createFsStore({ dir })
    expect(fsRecovery(again).migrated).toBeUndefined()
    expect(await listAll(again.list())).toHaveLength(objects.length)
    await again.close()
  })

  it('resumes an interrupted migration without migrating an object twice', async () => {
    const objects = await manifest()
    const store = await createFsStore({ dir })
    await store.close()
    // Back to "crashed mid-migration": FORMAT not yet written, one object migrated but its old
    // files not yet removed, another not migrated at all.
    await rm(join(dir, 'FORMAT'))
    const [done, todo] = objects.filter((o) => o.size > 0)
    const v1 = (a: Address): string => join('objects', a.slice(3, 5), a.slice(5, 7), a.slice(3))
    const v2 = (a: Address): string => join('objects', a.slice(3, 5), a.slice(3))
    for (const o of [done!, todo!]) {
      await mkdir(join(dir, v1(o.address), '..'), { recursive: true })
      await link(join(dir, 'backup-format-1', v1(o.address)), join(dir, v1(o.address)))
      await link(join(dir, 'backup-format-1', `${v1(o.address)}.b3t`), join(dir, `${v1(o.address)}.b3t`))
    }
    await rm(join(dir, v2(todo!.address)))
    const again = await createFsStore({ dir })
    expect(fsRecovery(again).migrated).toMatchObject({ from: 1, objects: 1, unusable: 0 })
    for (const o of objects) {
      expect(await again.verify(o.address)).toEqual({ ok: true, size: o.size, badChunks: [] })
      const r = (await again.open(o.address))!
      expect(Buffer.from((await collect(r.read())).data).equals(Buffer.from(bytes(o.size, o.seed)))).toBe(true)
      await r.close()
    }
    expect((await walk(dir)).filter((f) => f.startsWith('objects/') && f.endsWith('.b3t'))).toEqual([])
    await again.close()
  })

  it('resumes a migration interrupted between removing an object\'s old data file and its old table, reporting nothing unusable', async () => {
    const objects = await manifest()
    const store = await createFsStore({ dir })
    await store.close()
    await rm(join(dir, 'FORMAT'))
    const o = objects.find((x) => x.size > 0)!
    const v1 = join('objects', o.address.slice(3, 5), o.address.slice(5, 7), o.address.slice(3))
    await mkdir(join(dir, v1, '..'), { recursive: true })
    await link(join(dir, 'backup-format-1', `${v1}.b3t`), join(dir, `${v1}.b3t`))
    const again = await createFsStore({ dir })
    expect(fsRecovery(again).migrated).toMatchObject({ from: 1, objects: 0, unusable: 0 })
    expect(await again.verify(o.address)).toEqual({ ok: true, size: o.size, badChunks: [] })
    expect((await walk(dir)).filter((f) => f.startsWith('objects/') && f.endsWith('.b3t'))).toEqual([])
    await again.close()
  })

  it('moves format-1 leftovers without a usable table to the backup instead of migrating them', async () => {
    const objects = await manifest()
    const victim = objects.find((o) => o.size === 3000)!
    const path = join(dir, 'objects', victim.address.slice(3, 5), victim.address.slice(5, 7), victim.address.slice(3))
    await writeFile(`${path}.b3t`, bytes(40)) // a torn table
    const fixtureTable = await readFile(join(FIXTURE, 'objects', victim.address.slice(3, 5), victim.address.slice(5, 7), `${victim.address.slice(3)}.b3t`))
    const store = await createFsStore({ dir })
    expect(fsRecovery(store).migrated).toMatchObject({ objects: objects.length - 1, unusable: 1 })
    expect(await store.open(victim.address)).toBeUndefined()
    const kept = join(dir, 'backup-format-1', 'objects', victim.address.slice(3, 5), victim.address.slice(5, 7), victim.address.slice(3))
    expect((await stat(kept)).size).toBe(3000)
    expect((await readFile(`${kept}.b3t`)).equals(fixtureTable)).toBe(false) // the torn one, as found
    await store.close()
  })

  it('refuses a directory of a newer or unknown format with a clear error, touching nothing', async () => {
    for (const text of ['ron-storage-fs 3\n', 'something else\n']) {
      await writeFile(join(dir, 'FORMAT'), text)
      const before = await walk(dir)
      const e = await rejection(createFsStore({ dir }))
      expect(isRonError(e, 'Malformed')).toBe(true)
      expect((e as Error).message).toMatch(/storage format .* this version of RON reads format 2/)
      expect((e as { details: { field: string } }).details.field).toBe('dataDir')
      expect(await walk(dir)).toEqual(before)
    }
  })

  it('writes FORMAT into a fresh directory and does not migrate it', async () => {
    const fresh = join(dir, '..', 'fresh')
    const store = await createFsStore({ dir: fresh })
    expect(fsRecovery(store)).toEqual({ tmpRemoved: 0 })
    expect(await readFile(join(fresh, 'FORMAT'), 'utf8')).toBe('ron-storage-fs 2\n')
    await store.close()
  })
})
