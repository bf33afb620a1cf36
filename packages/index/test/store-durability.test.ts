/**
 * Durability of the LMDB name store, checked where it is decided: a write must not answer before
 * LMDB reports it flushed to disk. `lmdb` commits with `overlappingSync` by default on Linux and
 * macOS: the write promise resolves at commit, and the fsync lands later (`db.flushed`). These
 * tests hold `flushed` back and check that the store's answer waits for it.
 *
 * It also confirms that `lmdb` loads its prebuilt addon from its npm platform package
 * (`@lmdb/lmdb-<platform>-<arch>`), the way a fresh `npm ci --ignore-scripts` clone gets it.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, sep } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { openLmdbNameStore } from '../src/index.js'
import { addr, manifestFor, tomb } from './helpers.js'

/** What the tests control: the flush gate of the next database opened. */
const hooks: { gate: Promise<void> | undefined; real: { flushed: PromiseLike<unknown> } | undefined } = { gate: undefined, real: undefined }

vi.mock('lmdb', async (importOriginal) => {
  const real = await importOriginal<typeof import('lmdb')>()
  const { proxiedOpen } = await import('./fixtures/lmdb-proxy.js')
  // The gate set when each database was opened.
  const gates = new WeakMap<object, Promise<void>>()
  const open = proxiedOpen(
    real,
    // `flushed` resolves only once the test opens the gate (and LMDB has really flushed).
    (target, prop) => {
      const gate = gates.get(target)
      return prop === 'flushed' && gate !== undefined ? gate.then(() => target.flushed) : undefined
    },
    (db) => {
      hooks.real = db
      if (hooks.gate === undefined) return false
      gates.set(db, hooks.gate)
      return true
    },
  )
  return { ...real, open }
})

const dirs: string[] = []
afterEach(async () => {
  hooks.gate = undefined
  hooks.real = undefined
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

const rec = (n: number) => ({ manifestAddress: addr(n), manifest: manifestFor(n), updatedAt: 1 })

/**
 * A promise's state once LMDB has really committed and flushed the write (the unwrapped database's
 * `flushed`, which the gate does not hold), and every microtask and immediate after it has run.
 */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let settled = false
  void p.then(
    () => (settled = true),
    () => (settled = true),
  )
  await hooks.real?.flushed
  await new Promise((r) => setImmediate(r))
  return settled
}

describe('LMDB name store durability', () => {
  it('a put and a delete answer only after LMDB reports them flushed to disk', async () => {
    let open!: () => void
    hooks.gate = new Promise<void>((r) => (open = r))
    const dir = await mkdtemp(join(tmpdir(), 'ron-index-sync-'))
    dirs.push(dir)
    const store = await openLmdbNameStore({ dir })
    try {
      const put = store.put('a.b', null, () => rec(1))
      expect(await isSettled(put)).toBe(false)
      // Committed (visible to readers) but not yet durable: the writer is still waiting.
      expect(store.get('a.b')?.manifestAddress).toBe(addr(1))
      open()
      await expect(put).resolves.toEqual({ previous: null })

      let open2!: () => void
      hooks.gate = new Promise<void>((r) => (open2 = r))
      // The gate is read when the database opens: reopen to arm the new one.
      await store.close()
      const again = await openLmdbNameStore({ dir })
      try {
        const del = again.delete('a.b', addr(1), () => tomb('a.b'))
        expect(await isSettled(del)).toBe(false)
        open2()
        await expect(del).resolves.toEqual({ previous: addr(1) })
      } finally {
        await again.close()
      }
    } finally {
      open()
      await store.close()
    }
  })

  it('16 concurrent writes (sharing commits and flushes) each answer only after LMDB reports the flush', async () => {
    let open!: () => void
    hooks.gate = new Promise<void>((r) => (open = r))
    const dir = await mkdtemp(join(tmpdir(), 'ron-index-sync-'))
    dirs.push(dir)
    const store = await openLmdbNameStore({ dir })
    try {
      // Eight new names and eight writes of one name (compare-and-set on the state each finds).
      const writes = [
        ...Array.from({ length: 8 }, (_, i) => store.put(`n${i}.c`, null, () => rec(i))),
        ...Array.from({ length: 8 }, (_, i) => store.put('one.c', undefined, () => rec(100 + i))),
      ]
      for (const w of writes) expect(await isSettled(w)).toBe(false)
      // Every transaction committed (visible to readers), none acknowledged: all wait for the flush.
      for (let i = 0; i < 8; i++) expect(store.get(`n${i}.c`)?.manifestAddress).toBe(addr(i))
      expect(store.get('one.c')?.manifestAddress).toBe(addr(107))
      open()
      const answers = await Promise.all(writes)
      expect(answers.slice(0, 8)).toEqual(Array.from({ length: 8 }, () => ({ previous: null })))
      expect(answers.slice(8).map((a) => a.previous)).toEqual([null, ...Array.from({ length: 7 }, (_, i) => addr(100 + i))])
    } finally {
      open()
      await store.close()
    }
  })

  it('lmdb loads its prebuilt addon from its npm platform package, not from an install-script build', async () => {
    const require = createRequire(import.meta.url)
    const lmdbDir = dirname(dirname(require.resolve('lmdb')))
    // The resolver lmdb itself uses (node-gyp-build-optional-packages), asked from lmdb's directory.
    const loader = createRequire(join(lmdbDir, 'package.json'))('node-gyp-build-optional-packages') as { path(dir: string): string }
    const addon = loader.path(lmdbDir)
    expect(addon.split(sep)).toContain(`lmdb-${process.platform}-${process.arch}`)
    expect(existsSync(join(lmdbDir, 'build'))).toBe(false)
    const dir = await mkdtemp(join(tmpdir(), 'ron-index-load-'))
    dirs.push(dir)
    const store = await openLmdbNameStore({ dir })
    await store.put('x.y', null, () => rec(2))
    expect(store.count()).toBe(1)
    await store.close()
  })
})
