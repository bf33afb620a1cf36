/**
 * What the index routes share.
 *
 * @module
 */

import type { Broadcast, Clock, NodeDirectory, NodeIdentity } from '@ron/core'
import type { ResolvedIndexConfig } from '../config.js'
import type { ManifestFetchEnv } from '../manifest-fetch.js'
import type { IndexMetrics } from '../metrics.js'
import type { ProviderTable } from '../providers.js'
import type { Resolver } from '../resolver.js'
import type { RemoteNames } from '../remote-names.js'
import type { NameRecord, NameStore } from '../store/types.js'
import type { RecordSigner, SignedNameRecord } from '../name-record.js'
import type { IdempotencyCache } from '../admin.js'
import type { TtlCache } from '../cache.js'
import type { CachedAnswer } from '../resolver.js'

/** An event on the `events` broadcast. */
export type IndexEvent =
  | { type: 'name:set'; name: string; manifestAddress: string; previous: string | null; seq: number }
  | { type: 'name:deleted'; name: string; previous: string | null; seq: number }
  | { type: 'provider:added'; address: string; node: string; endpoint: string; expiresAt: number }

/** Shared state of the routes. */
export interface IndexContext {
  config(): ResolvedIndexConfig
  resolver: Resolver
  store: NameStore
  providers: ProviderTable
  manifests: ManifestFetchEnv
  metrics: IndexMetrics
  clock: Clock
  events: Broadcast<IndexEvent>
  /** This node: the home of the names it stores, the signer of their records. */
  identity: NodeIdentity
  /** The nodes this index believes (pinned keys, advertised URLs); none: embedded mode. */
  nodes: NodeDirectory | undefined
  /** Names homed elsewhere, learnt from verified peer records. */
  remote: RemoteNames
  /**
   * The disk gate of name writes: throws the standing disk fault ({@link NotReadyError}) while the
   * store's volume refuses writes.
   */
  writable(): void
  /** The signed record of a binding homed here. */
  recordOf(name: string, binding: NameRecord): SignedNameRecord
  /** Signs the records of names homed here as they are served (a write forgets its name's). */
  signer: RecordSigner
  /** Reports a store failure: a disk fault turns writes unready until the probe succeeds. */
  storeFailed(e: unknown): void
  /**
   * Runs `job` on the resolver pool through the `work` queue.
   * @throws {@link BusyError} at once when the queue is full; {@link DrainingError} once closing.
   */
  work<T>(job: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T>
  /** The positive answer cache (its pins are the admin's). */
  cache: TtlCache<CachedAnswer>
  /** Answers of admin reindexes by principal and `Idempotency-Key`. */
  idempotency: IdempotencyCache
  /**
   * Rebuilds what the index derives from its store (see `admin.ts`).
   * @returns the names bound and the records signed anew.
   */
  reindex(signal: AbortSignal): Promise<{ names: number; resigned: number }>
}
