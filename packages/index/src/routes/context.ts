/**
 * What the index routes share.
 *
 * @module
 */

import type { Broadcast, Clock } from '@ron/core'
import type { ResolvedIndexConfig } from '../config.js'
import type { ManifestFetchEnv } from '../manifest-fetch.js'
import type { IndexMetrics } from '../metrics.js'
import type { ProviderTable } from '../providers.js'
import type { Resolver } from '../resolver.js'
import type { NameStore } from '../store/types.js'

/** An event on the `events` broadcast. */
export type IndexEvent =
  | { type: 'name:set'; name: string; manifestAddress: string; previous: string | null }
  | { type: 'name:deleted'; name: string; previous: string | null }
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
  /**
   * Runs `job` on the resolver pool through the `work` queue.
   * @throws {@link BusyError} at once when the queue is full; {@link DrainingError} once closing.
   */
  work<T>(job: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T>
}
