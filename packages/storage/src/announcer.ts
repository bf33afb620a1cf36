/**
 * Announces local objects to the index service ("this node provides address X for ttlSec").
 * After every PUT the address is try-sent into the `announce` queue (drop-oldest: a burst of puts
 * loses the oldest announcements, which the periodic refresh re-sends), and every `intervalMs`
 * the announcer re-announces every local object so entries never outlive their TTL while the
 * object is here. Calls go through a circuit breaker; a failing or missing index never fails a
 * PUT, it only counts `announce_failures_total`.
 *
 * Wire DTO (SPEC.md 6a, core's `providerAnnouncementSchema`): `POST /providers` with
 * `{"address":"b3:…","node":"<node id>","endpoint":"<storage URL as peers reach it>","ttlSec":3600}`,
 * scope `index:announce`; any 2xx is success.
 *
 * @module
 */

import { BoundedQueue, CircuitBreaker, isRonError, providerAnnouncementSchema, retry, throwIfError } from '@ron/core'
import type { Address, Clock, Logger, MetricsSink, ProviderAnnouncement, Transport } from '@ron/core'
import { bearerHeaders, type TokenFor } from './peer-auth.js'
import type { BlobStore } from './store/types.js'
import { CHANNELS } from './topology.js'

/** Path of the index's provider announcements (SPEC.md 6a). */
export const PROVIDERS_PATH = '/providers'

/** Delay before failed announcements are sent again, doubled while the index keeps failing. */
const FIRST_RETRY_DELAY_MS = 1000

/** Options of {@link Announcer}. */
export interface AnnouncerOptions {
  target: string
  nodeId: string
  /** The storage URL (or transport name) announced as `endpoint`. */
  endpoint: string
  ttlSec: number
  intervalMs: number
  timeoutMs: number
  queueCapacity: number
  /** The bearer token of an announcement (scope `index:announce`). */
  token: TokenFor
  transport: Transport
  store: BlobStore
  clock: Clock
  metrics: MetricsSink
  logger: Logger
}

/** Sends provider announcements to the index. */
export class Announcer {
  readonly #o: AnnouncerOptions
  readonly #queue: BoundedQueue<Address>
  readonly #breaker: CircuitBreaker
  #nextRefresh: number
  /**
   * Announcements that failed after their retries, sent again at `#retryAt` (bounded by the queue
   * capacity; what does not fit waits for the periodic refresh). The delay doubles while the
   * index keeps failing, up to `intervalMs`, and starts again at 1 s after a success.
   */
  readonly #failed = new Set<Address>()
  #retryAt = Number.POSITIVE_INFINITY
  #retryDelayMs = FIRST_RETRY_DELAY_MS

  constructor(o: AnnouncerOptions) {
    this.#o = o
    this.#queue = new BoundedQueue<Address>({ name: CHANNELS.announce, capacity: o.queueCapacity, overflow: 'drop-oldest', metrics: o.metrics })
    this.#breaker = new CircuitBreaker({ name: `announce:${o.target}`, clock: o.clock, metrics: o.metrics })
    this.#nextRefresh = o.clock.now() + o.intervalMs
  }

  /** Queues an announcement of `address`; never throws, never waits. */
  notify(address: Address): void {
    if (this.#queue.closed) return
    this.#queue.trySend(address)
  }

  /** Announcements waiting. */
  get depth(): number {
    return this.#queue.depth
  }

  /** Stops intake. */
  close(): void {
    this.#queue.close()
  }

  /** The announcer task: drains the queue and refreshes everything every `intervalMs`. */
  async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) return
      const now = this.#o.clock.now()
      if (this.#nextRefresh - now <= 0) {
        this.#nextRefresh = now + this.#o.intervalMs
        this.#failed.clear()
        this.#retryAt = Number.POSITIVE_INFINITY
        await this.refreshAll(signal)
        continue
      }
      if (this.#retryAt - now <= 0) {
        const again = [...this.#failed]
        this.#failed.clear()
        this.#retryAt = Number.POSITIVE_INFINITY
        for (const address of again) await this.announce(address, signal)
        continue
      }
      const wait = Math.min(this.#nextRefresh, this.#retryAt) - now
      let address: Address | undefined
      try {
        address = await this.#recvFor(wait, signal)
      } catch (e) {
        if (signal.aborted || isRonError(e, 'Closed')) return
        throw e
      }
      if (address !== undefined) await this.announce(address, signal)
    }
  }

  /** Announces every local object once. */
  async refreshAll(signal: AbortSignal): Promise<void> {
    for await (const address of this.#o.store.list(signal)) await this.announce(address, signal)
  }

  /** Sends one announcement; failures are counted and logged, never thrown. */
  async announce(address: Address, signal: AbortSignal): Promise<boolean> {
    const o = this.#o
    // Checked against the shared contract, so a drift is our bug here rather than a 400 there.
    const dto: ProviderAnnouncement = providerAnnouncementSchema.parse({ address, node: o.nodeId, endpoint: o.endpoint, ttlSec: o.ttlSec })
    try {
      // An announcement is idempotent: a retryable failure (timeout, busy or not-ready index) is
      // retried with jittered backoff instead of waiting for the next full refresh (ttlSec / 2).
      await retry(() => this.#breaker.execute(async () => {
        const headers = { 'content-type': 'application/json', ...(await bearerHeaders(o.token, signal)) }
        const res = await o.transport.request(o.target, {
          method: 'POST',
          path: PROVIDERS_PATH,
          headers,
          body: JSON.stringify(dto),
          signal,
          timeoutMs: o.timeoutMs,
        })
        await throwIfError(res)
        await res.dump()
      }), { clock: o.clock, signal, metrics: o.metrics, op: 'announce' })
      o.metrics.inc('announcements_total', undefined)
      this.#retryDelayMs = FIRST_RETRY_DELAY_MS
      return true
    } catch (e) {
      if (signal.aborted) return false
      if (this.#failed.size < o.queueCapacity) this.#failed.add(address)
      if (this.#retryAt === Number.POSITIVE_INFINITY) {
        this.#retryAt = o.clock.now() + this.#retryDelayMs
        this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, o.intervalMs)
      }
      o.metrics.inc('announce_failures_total', { reason: isRonError(e) ? e.code : 'Internal' })
      o.logger.debug({ err: e, address }, 'announcement failed')
      return false
    }
  }

  /** recv() that gives up after `ms` (returns undefined) without leaving a timer or listener. */
  async #recvFor(ms: number, signal: AbortSignal): Promise<Address | undefined> {
    const ac = new AbortController()
    const onAbort = (): void => ac.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    const timer = this.#o.clock.setTimeout(() => ac.abort(), ms)
    timer.unref?.()
    try {
      return await this.#queue.recv(ac.signal)
    } catch (e) {
      if (ac.signal.aborted && !signal.aborted) return undefined
      throw e
    } finally {
      this.#o.clock.clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
    }
  }
}
