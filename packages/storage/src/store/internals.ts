/**
 * A side table from each built-in store to what tests may reach into (corruption, paths, recovery
 * report, cache figures), so production store objects carry no test hooks. Filled by the
 * factories; read only by `testing.ts`.
 *
 * @internal
 * @module
 */

import type { Address } from '@ron/core'
import type { RecoveryReport } from './fs-layout.js'
import type { MigrationReport } from './fs-format.js'
import type { BlobStore } from './types.js'

/** What a built-in store exposes to `@ron/storage/testing`. @internal */
export interface StoreInternals {
  /** Flips bits `mask` of byte `offset` of an object's stored bytes; false when there is no such byte. */
  corruptBytes(address: Address, offset: number, mask: number): Promise<boolean>
  /** Flips bits `mask` of byte `offset` of an object's stored chunk table; false when there is no such byte. */
  corruptTable(address: Address, offset: number, mask: number): Promise<boolean>
  /** fs backend: the object's file. */
  objectPath?(address: Address): string
  /** fs backend: what opening the store recovered or migrated. */
  recovery?: RecoveryReport & { migrated?: MigrationReport }
  /** fs backend: the small-object cache. */
  cache?: { readonly bytes: number; readonly size: number }
  /** fs backend: the open-handle cache. */
  handles?: { readonly size: number }
  /** fs backend: the verified-block cache. */
  blocks?: { readonly bytes: number }
  /** fs backend: idle write buffers kept for the next puts. */
  writeBuffers?: { readonly idle: number }
}

const table = new WeakMap<BlobStore, StoreInternals>()

/** @internal */
export function registerInternals(store: BlobStore, internals: StoreInternals): void {
  table.set(store, internals)
}

/** @internal */
export function internalsOf(store: BlobStore): StoreInternals | undefined {
  return table.get(store)
}
