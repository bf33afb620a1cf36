/**
 * The Bus Publisher: consumes the `committed` broadcast and publishes each `RegistryUpdated` on
 * `/registry/stream` (SSE, `id:` = version). It never blocks the Committer: the broadcast gives it
 * its own ring, and when it lags (counted in `bus_lagged_total{topic="committed"}`) it publishes
 * the current HEAD instead of what it missed, which is what clients reconcile to.
 *
 * @module
 */

import type { Broadcast, Logger, MetricsSink, SseHub, Subscription } from '@ron/core'
import type { RegistryUpdated } from './committer.js'
import type { RegistryLog } from './log.js'

/** SSE event name of a commit. */
export const UPDATED_EVENT = 'registry:updated'

/** Dependencies of the {@link Publisher}. */
export interface PublisherOptions {
  committed: Broadcast<RegistryUpdated>
  hub: SseHub<RegistryUpdated>
  log: RegistryLog
  metrics: MetricsSink
  logger: Logger
}

/** Forwards commits to SSE clients. */
export class Publisher {
  readonly #o: PublisherOptions
  readonly #sub: Subscription<RegistryUpdated>
  #lastSent = 0

  constructor(o: PublisherOptions) {
    this.#o = o
    // Subscribed at construction so no commit made before the loop starts is missed.
    this.#sub = o.committed.subscribe()
  }

  /** Events currently waiting for the publisher. */
  get backlog(): number {
    return this.#sub.depth
  }

  #send(u: RegistryUpdated): void {
    if (u.version <= this.#lastSent || this.#o.hub.closed) return
    this.#lastSent = u.version
    this.#o.hub.publish({ id: String(u.version), event: UPDATED_EVENT, data: u })
    this.#o.metrics.inc('registry_events_published_total')
  }

  /** The loop; ends when the signal aborts or the broadcast closes. */
  async run(signal: AbortSignal): Promise<void> {
    // One abort listener for the whole loop, which closes the subscription: a `recv(signal)` per
    // commit added and removed a listener on the signal each time (~20k instructions).
    const onAbort = (): void => this.#sub.close()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      while (!signal.aborted) {
        const r = await this.#sub.recv()
        if ('value' in r) {
          this.#send(r.value)
          continue
        }
        // Lagged: what was missed is in the log; subscribers get the current HEAD.
        const head = this.#o.log.head()
        const read = await this.#o.log.read(head.version)
        if (read !== undefined && 'entry' in read) {
          this.#send({ type: 'RegistryUpdated', version: head.version, b3: read.entry.payloadB3, hash: head.hash, committedAt: read.entry.committedAt })
        }
      }
    } catch (e) {
      if (signal.aborted || (e instanceof Error && 'code' in e && e.code === 'Closed')) return
      throw e
    } finally {
      signal.removeEventListener('abort', onAbort)
      if (signal.aborted) this.#sub.close()
    }
  }

  /** Stops listening. */
  close(): void {
    this.#sub.close()
  }
}
