/**
 * Log stores: the {@link LogStore} interface, the durable segment store and the memory store.
 *
 * @module
 */

export type { CheckpointLease, ProposalStore, PublishedCheckpoint, SharedLog, SharedProposal } from './shared.js'
export type { LogStore, OpenOptions, RecoveredLog, SegmentInfo, StoredCheckpoint } from './types.js'
export { createSegmentStore, type SegmentStoreOptions } from './segment.js'
export { createMemoryStore, type MemoryStoreOptions } from './memory.js'
