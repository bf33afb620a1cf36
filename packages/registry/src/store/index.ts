/**
 * Log stores: the {@link LogStore} interface, the durable segment store and the memory store.
 *
 * @module
 */

export type { LogStore, OpenOptions, RecoveredLog, SegmentInfo, StoredCheckpoint } from './types.js'
export { createSegmentStore, type SegmentStoreOptions } from './segment.js'
export { createMemoryStore, type MemoryStoreOptions } from './memory.js'
