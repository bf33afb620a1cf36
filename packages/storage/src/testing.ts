/**
 * `@ron/storage/testing`: utilities for tests of storage and of custom backends. Not for
 * production code; test hooks live here, never on the production objects.
 *
 * - {@link blobStoreCompliance}: the BlobStore compliance suite (vitest) every backend runs, and a
 *   custom backend can run too (as js-libp2p ships its interface-compliance tests);
 * - {@link corruptStoredBytes}, {@link corruptStoredTable}: bit rot in a built-in backend's copy;
 * - {@link objectPath}, {@link flipByte}: the file of an object in the fs backend, and a bit flip
 *   in any file; {@link fsRecovery}, {@link smallObjectCache}: what the fs backend did at open and
 *   holds in its cache.
 *
 * @example
 * ```ts
 * import { createMemoryStore } from '@ron/storage'
 * import { corruptStoredBytes } from '@ron/storage/testing'
 *
 * const store = createMemoryStore()
 * const { address } = await store.put(body)
 * await corruptStoredBytes(store, address, 10) // the next read of chunk 0 fails with IntegrityFailed
 * ```
 *
 * @packageDocumentation
 * @module @ron/storage/testing
 */

export { blobStoreCompliance } from './store/compliance.js'
export type { StoreHarness, MakeStore } from './store/compliance.js'
export { corruptStoredBytes, corruptStoredTable, objectPath, fsRecovery, smallObjectCache, flipByte } from './store/testing.js'
