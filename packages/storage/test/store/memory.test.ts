import { addressOf } from '@ron/core'
import { describe, expect, it } from 'vitest'
import { blobStoreCompliance } from '../../src/store/compliance.js'
import { corruptStoredBytes, corruptStoredTable, fsRecovery, objectPath, smallObjectCache } from '../../src/store/testing.js'
import { createMemoryStore } from '../../src/store/index.js'
import type { BlobStore } from '../../src/store/index.js'
import { bytes, once } from './helpers.js'

blobStoreCompliance('memory', ({ chunkSize }) => {
  const store = createMemoryStore(chunkSize === undefined ? {} : { chunkSize })
  return Promise.resolve({
    store,
    corruptData: async (address, offset) => {
      if (!(await corruptStoredBytes(store, address, offset))) throw new Error('no such object')
    },
    corruptTable: async (address, offset) => {
      if (!(await corruptStoredTable(store, address, offset))) throw new Error('no such object')
    },
    cleanup: () => Promise.resolve(),
  })
})

describe('@ron/storage/testing reach-ins', () => {
  it('report false for a missing object or byte, and refuse stores that are not built in', async () => {
    const store = createMemoryStore()
    const { address } = await store.put(once(bytes(10)))
    expect(await corruptStoredBytes(store, address, 10)).toBe(false)
    expect(await corruptStoredBytes(store, addressOf(bytes(3)), 0)).toBe(false)
    expect(await corruptStoredBytes(store, address, 9)).toBe(true)
    expect(Object.keys(store)).not.toContain('corrupt') // no hooks on the production object
    expect(() => objectPath(store, address)).toThrow(TypeError) // fs only
    expect(() => fsRecovery(store)).toThrow(TypeError)
    expect(() => smallObjectCache(store)).toThrow(TypeError)
    const foreign = { ...store } as BlobStore
    expect(() => corruptStoredBytes(foreign, address, 0)).toThrow(TypeError)
    await store.close()
  })
})
