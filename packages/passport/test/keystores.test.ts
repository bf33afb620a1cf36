/**
 * The two keystores behind the `Kms` interface: the file keystore (one 0600 file per key,
 * written atomically, reloaded after a restart) and the memory keystore. Both sign verifiably,
 * list what they hold, refuse an unknown kid with NotFound, forget a destroyed key and honour an
 * aborted signal.
 */
import { verify } from 'node:crypto'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { generateIssuerKey, publicKeyFromJwk } from '@ron/core'
import { createFileKeystore, createMemoryKeystore, type Kms } from '../src/index.js'

const dirs: string[] = []
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})
const live = new AbortController().signal
const data = new TextEncoder().encode('header.payload')

async function exercise(kms: Kms): Promise<string> {
  const a = await kms.generate(1, live)
  const imported = generateIssuerKey({ epoch: 2 })
  const b = await kms.import(imported, live)
  expect(b.kid).toBe(imported.kid)
  // Importing the same key again keeps the one held.
  expect((await kms.import(imported, live)).kid).toBe(imported.kid)
  expect((await kms.list(live)).map((k) => k.kid).sort()).toEqual([a.kid, b.kid].sort())
  const sig = await kms.sign(a.kid, data, live)
  expect(verify(null, data, publicKeyFromJwk(a.publicJwk)!, sig)).toBe(true)
  await expect(kms.sign('nope#9', data, live)).rejects.toMatchObject({ code: 'NotFound' })
  await kms.destroy(b.kid, live)
  await kms.destroy('unknown#1', live) // ignored
  expect((await kms.list(live)).map((k) => k.kid)).toEqual([a.kid])
  const aborted = AbortSignal.abort()
  await expect(Promise.resolve().then(() => kms.generate(3, aborted))).rejects.toMatchObject({ code: 'Canceled' })
  return a.kid
}

describe('keystores', () => {
  it('memory keystore: generate, import, list, sign, destroy', async () => {
    await exercise(createMemoryKeystore())
  })

  it('file keystore: the same, with 0600 files that a new instance reloads', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-keystore-'))
    dirs.push(dir)
    const kid = await exercise(createFileKeystore({ dir }))
    const files = (await readdir(dir)).filter((f) => f.endsWith('.jwk.json'))
    expect(files).toHaveLength(1)
    expect((await stat(join(dir, files[0]!))).mode & 0o777).toBe(0o600)
    const again = createFileKeystore({ dir })
    expect((await again.list(live)).map((k) => k.kid)).toEqual([kid])
    await expect(again.sign(kid, data, live)).resolves.toHaveLength(64)
  })
})
