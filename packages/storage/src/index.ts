/**
 * `@ron/storage`: a content-addressed blob service. Objects are addressed by the BLAKE3 of their
 * bytes (`b3:<hex>`), streamed in and hashed as they arrive, stored durably (temp file, fsync,
 * rename), and streamed back verified chunk by chunk with ETag, conditional GET and Range. With
 * peers it keeps `rf` copies and a paced, explainable repair planner restores missing or corrupt
 * ones.
 *
 * Test utilities (the BlobStore compliance suite, corruption helpers) live in
 * `@ron/storage/testing`.
 *
 * @example
 * ```ts
 * import { MemoryTransport } from '@ron/core'
 * import { createStorageService, createStorageClient } from '@ron/storage'
 *
 * const transport = new MemoryTransport()
 * const storage = await createStorageService({}, transport, { auth: { keys: jwks } })
 * transport.mount('storage', storage)
 * const client = createStorageClient(transport, { target: 'storage', token })
 * const { address } = await client.put('hello world')
 * const bytes = await client.getBytes(address)
 * await storage.close()
 * ```
 *
 * @packageDocumentation
 * @module @ron/storage
 */

// The service and its options.
export { createStorageService } from './service.js'
export type { StorageService } from './service.js'
export { storageConfigSchema, STORAGE_IMMUTABLE_KEYS } from './config.js'
export type { StorageServiceOptions, StorageConfig, StorageRuntime, DeprecatedRuntimeInConfig, OutgoingTokens } from './config.js'
export type { StorageUsage } from './service.js'
export { REPLICATE_SCOPE } from './peer-auth.js'
export type { StorageEvent } from './events.js'

// The typed client.
export { createStorageClient } from './client.js'
export type { StorageClient, StorageClientOptions, CallOptions, PutResponse, GetResponse, ObjectStatus } from './client.js'

// Placement and repair, as the service reports them.
export { placement } from './placement.js'
export type { RepairPlan, RepairItem, RepairAction, RepairPriority, RepairStatus } from './repair-state.js'

// Backends: the contract and the two built-in implementations.
export { createMemoryStore, createFsStore, DEFAULT_CHUNK_SIZE, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE } from './store/index.js'
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
} from './store/index.js'
