/**
 * `@ron/storage`: a content-addressed blob service. Objects are addressed by the BLAKE3 of their
 * bytes (`b3:<hex>`), streamed in and hashed as they arrive, stored durably (temp file, fsync,
 * rename), and streamed back verified chunk by chunk with ETag, conditional GET and Range. With
 * peers it keeps `rf` copies and a paced, explainable repair planner restores missing or corrupt
 * ones.
 *
 * @example
 * ```ts
 * import { MemoryTransport } from '@ron/core'
 * import { createStorageService, createStorageClient } from '@ron/storage'
 *
 * const transport = new MemoryTransport()
 * const storage = await createStorageService({ auth: { keys: jwks } }, transport)
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

export { createStorageService } from './service.js'
export type { StorageService } from './service.js'
export { resolveOptions, storageOptionsSchema } from './config.js'
export type { StorageServiceOptions, RepairOptions, AnnounceOptions, WriteReadinessOptions, ResolvedStorageOptions } from './config.js'
export { createStorageClient } from './client.js'
export type { StorageClient, StorageClientOptions, CallOptions, PutResponse, GetResponse, ObjectStatus } from './client.js'
export { storageTopology, CHANNELS, TASKS } from './topology.js'
export { placement, placementScore } from './replication.js'
export type { RepairPlan, RepairItem, RepairAction, RepairPriority, RepairStatus } from './repair-planner.js'
export type { ProviderAnnouncement } from './announcer.js'
export type { StorageEvent } from './routes/index.js'
export { parseRange } from './range.js'
export type { RangeResult } from './range.js'
export * from './store/index.js'
