/**
 * What the storage service publishes on its `events` broadcast (drop-oldest, 1024 per
 * subscriber; `svc.subscribe()`).
 *
 * @module
 */

import type { Address } from '@ron/core'

/** Events published on the service's `events` broadcast, named `noun:verb`. */
export type StorageEvent =
  | { type: 'object:stored'; address: Address; size: number; created: boolean }
  | { type: 'object:deleted'; address: Address }
  | { type: 'object:pinned' | 'object:unpinned'; address: Address }
  | { type: 'integrity:failed'; address: Address }
  | { type: 'repair:done' | 'repair:failed'; address: Address; action: string }
