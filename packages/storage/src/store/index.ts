/**
 * Storage backends: the {@link BlobStore} contract, the memory and filesystem backends, and the
 * chunk-table integrity data they share.
 *
 * @module
 */

export type {
  BlobReader,
  BlobStat,
  BlobStore,
  ByteRange,
  FsStoreOptions,
  MemoryStoreOptions,
  ProbeResult,
  PutOptions,
  PutResult,
  VerifyResult,
} from './types.js'
export { createMemoryStore } from './memory.js'
export { createFsStore } from './fs.js'
export { DEFAULT_CHUNK_SIZE, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE } from './integrity.js'
