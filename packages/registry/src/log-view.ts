/**
 * A read-only view of a service's log, for this package's tests and tools: reachable only
 * through this module (not exported by `@ron/registry`), keyed by the service object in a
 * WeakMap, and made of closures, so no property of the service or of the view leads to the log's
 * `append` (only the Committer appends, after a quorum).
 *
 * @module
 * @internal
 */

import type { Address } from '@ron/core'
import type { Genesis, Head } from './entry.js'
import type { RegistryLog } from './log.js'
import type { SegmentInfo, StoredCheckpoint } from './store/types.js'

/** What a test may read of a service's log. */
export interface LogView {
  readonly genesis: Genesis
  readonly genesisHash: Address
  oldest(): number
  head(): Head
  currentHead(): Readonly<Head>
  rootHex(size?: number): string
  readonly tree: { readonly size: number; root(size?: number): Uint8Array; leafHash(index: number): Uint8Array }
  readonly store: { checkpoints(): readonly StoredCheckpoint[]; segments(): readonly SegmentInfo[] }
}

const views = new WeakMap<object, LogView>()

/** Registers the view of `log` for `service`. */
export function registerLogView(service: object, log: RegistryLog): void {
  const tree = log.tree
  views.set(
    service,
    Object.freeze({
      genesis: log.genesis,
      genesisHash: log.genesisHash,
      oldest: () => log.oldest(),
      head: () => log.head(),
      currentHead: () => log.currentHead(),
      rootHex: (size?: number) => (size === undefined ? log.rootHex() : log.rootHex(size)),
      tree: Object.freeze({
        get size() {
          return tree.size
        },
        root: (size?: number) => tree.root(size),
        leafHash: (index: number) => tree.leafHash(index),
      }),
      store: Object.freeze({ checkpoints: () => log.store.checkpoints(), segments: () => log.store.segments() }),
    }),
  )
}

/**
 * The read-only view of `service`'s log.
 * @throws Error when `service` is not a registry service
 */
export function logView(service: object): LogView {
  const v = views.get(service)
  if (v === undefined) throw new Error('not a registry service')
  return v
}
