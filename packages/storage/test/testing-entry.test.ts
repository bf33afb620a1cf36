/**
 * `@ron/storage/testing`: the corruption helpers work on both built-in backends, and a corrupt
 * chunk is refused with IntegrityFailed.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { collectBytes } from '@ron/core'
import { createFsStore, createMemoryStore } from '@ron/storage'
import type { BlobStore } from '@ron/storage'
import { corruptStoredBytes } from '@ron/storage/testing'
import { bytes, once } from './helpers.js'

async function readAll(store: BlobStore, address: Parameters<BlobStore['open']>[0]): Promise<Uint8Array> {
  const r = await store.open(address)
  if (r === undefined) throw new Error('missing')
  try {
    return await collectBytes(r.read())
  } finally {
    await r.close()
  }
}

describe('@ron/storage/testing', () => {
  it('corruptStoredBytes makes the chunk fail verification in the memory and the fs backend', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-testing-'))
    const stores: BlobStore[] = [createMemoryStore({ chunkSize: 1024 }), await createFsStore({ dir, chunkSize: 1024 })]
    try {
      for (const store of stores) {
        const { address } = await store.put(once(bytes(3000, 5)))
        expect(await corruptStoredBytes(store, address, 1500)).toBe(true)
        await expect(readAll(store, address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
        expect(await store.verify(address)).toMatchObject({ ok: false, badChunks: [1] })
      }
    } finally {
      for (const s of stores) await s.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
