/**
 * The public surface of `@ron/storage` and `@ron/storage/testing` as a reviewed artefact: a
 * change to the exported (runtime) names is a visible diff here. Types are listed in
 * `src/index.ts`, explicitly.
 */
import { describe, expect, it } from 'vitest'
import * as storage from '@ron/storage'
import * as testing from '@ron/storage/testing'

describe('exported names', () => {
  it('@ron/storage', () => {
    expect(Object.keys(storage).sort()).toEqual([
      'DEFAULT_CHUNK_SIZE',
      'MAX_CHUNK_SIZE',
      'MIN_CHUNK_SIZE',
      'REPLICATE_SCOPE',
      'STORAGE_IMMUTABLE_KEYS',
      'createFsStore',
      'createMemoryStore',
      'createStorageClient',
      'createStorageService',
      'placement',
      'storageConfigSchema',
    ])
  })

  it('@ron/storage/testing', () => {
    expect(Object.keys(testing).sort()).toEqual(['blobStoreCompliance', 'corruptStoredBytes', 'corruptStoredTable', 'flipByte', 'fsRecovery', 'objectPath', 'smallObjectCache'])
  })
})
