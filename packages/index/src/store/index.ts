/**
 * Name stores: LMDB (durable) and memory.
 *
 * @module
 */

export type { NameRecord, NameState, NameStore, Expected, WriteResult } from './types.js'
export { createMemoryNameStore } from './memory.js'
export { openLmdbNameStore, type LmdbNameStoreOptions } from './lmdb.js'
