/**
 * Repair workers (seed svc-storage: "K tasks execute repairs under global pacing"). Each worker
 * takes items from the `repair` queue and copies bytes between this node and a peer. Every chunk
 * takes tokens from ONE token bucket shared by all workers before it moves, so the whole node never
 * exceeds the repair byte budget; the wait is recorded in `repair_wait_seconds`. Fetched bytes are
 * committed with `store.put({ expect: address })`, so nothing that does not hash to the address is
 * ever kept.
 *
 * @module
 */

import { isRonError, throwIfError } from '@ron/core'
import type { Address, BoundedQueue, Logger, MetricsSink, TokenBucket, Transport } from '@ron/core'
import type { ObjectGuard } from './object-guard.js'
import { isLocalCorruption, pushObject } from './replication.js'
import type { RepairItem, RepairState } from './repair-state.js'
import type { BlobStore } from './store/types.js'
import { bearerHeaders, type TokenFor } from './peer-auth.js'

/** Options of {@link RepairWorkers}. */
export interface RepairWorkerOptions {
  nodeId: string
  store: BlobStore
  transport: Transport
  /** The bearer token of a call to a peer (scope `storage:replicate`). */
  token: TokenFor
  timeoutMs: number
  /** The global byte budget. */
  bucket: TokenBucket
  /** Largest single take from the bucket (its capacity). */
  burst: number
  queue: BoundedQueue<RepairItem>
  state: RepairState
  guard: ObjectGuard
  metrics: MetricsSink
  logger: Logger
  now(): number
  /** Called after each item with its outcome. */
  onDone?(item: RepairItem, ok: boolean, error?: unknown): void
}

/**
 * Wraps `chunks` so that bytes take their size in tokens from `bucket` before they are yielded.
 * A piece larger than `burst` (reads yield blocks of many chunks) is cut and yielded in steps of
 * at most `burst` bytes, so the budget holds whatever the piece size.
 */
export async function* paced(
  chunks: AsyncIterable<Uint8Array>,
  bucket: TokenBucket,
  burst: number,
  signal: AbortSignal,
  metrics: MetricsSink,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    let waited = 0
    for (let off = 0; off < chunk.byteLength; off += burst) {
      const piece = chunk.subarray(off, Math.min(off + burst, chunk.byteLength))
      waited += await bucket.take(piece.byteLength, signal)
      metrics.inc('repair_bytes_total', undefined, piece.byteLength)
      yield piece
    }
    metrics.observe('repair_wait_seconds', undefined, waited / 1000)
  }
}

/** The pool of repair workers; {@link RepairWorkers.run} is one worker's loop. */
export class RepairWorkers {
  readonly #o: RepairWorkerOptions

  constructor(o: RepairWorkerOptions) {
    this.#o = o
  }

  /** One worker: takes items until the queue closes or `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const o = this.#o
    for (;;) {
      let item: RepairItem
      try {
        item = await o.queue.recv(signal)
      } catch (e) {
        if (signal.aborted || isRonError(e, 'Closed')) return
        throw e
      }
      o.state.set(item.address, { state: 'running', action: item.action, at: o.now() })
      try {
        const outcome = await this.execute(item, signal)
        if (outcome === 'obsolete') {
          // The object was deleted meanwhile: nothing to repair, and nothing to remember.
          o.state.clearSuspect(item.address)
          o.metrics.inc('repairs_total', { action: item.action, outcome: 'obsolete' })
        } else {
          o.state.set(item.address, { state: 'done', action: item.action, at: o.now() })
          o.metrics.inc('repairs_total', { action: item.action, outcome: 'ok' })
          o.onDone?.(item, true)
        }
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e)
        // A push that found our own copy corrupt leaves it marked suspect (replaced next tick).
        if (isLocalCorruption(e)) o.state.set(item.address, { state: 'suspect', at: o.now(), error: message })
        else if (item.action !== 'fetch' && !(await this.#present(item.address))) o.state.clearSuspect(item.address) // deleted meanwhile
        else o.state.set(item.address, { state: 'failed', action: item.action, at: o.now(), error: message })
        o.metrics.inc('repairs_total', { action: item.action, outcome: 'failed' })
        o.logger.warn({ err: e, item }, 'repair failed')
        o.onDone?.(item, false, e)
        if (signal.aborted) return
      } finally {
        o.state.end(item)
      }
    }
  }

  /** Whether the local copy exists (true when the store cannot tell, e.g. closed). */
  async #present(address: Address): Promise<boolean> {
    try {
      return (await this.#o.store.stat(address)) !== undefined
    } catch {
      return true
    }
  }

  /**
   * Executes one item.
   * @returns `'done'`, or `'obsolete'` when the local copy a `replace-corrupt` (or a push) was
   *   about was deleted before the item ran (nothing is fetched back).
   * @throws whatever the copy failed with; a push whose local copy fails verification marks the
   *   address suspect first.
   */
  async execute(item: RepairItem, signal: AbortSignal): Promise<'done' | 'obsolete'> {
    const o = this.#o
    const pace = (chunks: AsyncIterable<Uint8Array>, s: AbortSignal): AsyncIterable<Uint8Array> =>
      paced(chunks, o.bucket, o.burst, s, o.metrics)
    if (item.action === 'push') {
      const markSuspect = (address: Address): void => o.state.markSuspect(address, o.now())
      const ok = await pushObject({ store: o.store, transport: o.transport, token: o.token, timeoutMs: o.timeoutMs, pace, markSuspect }, item.to, item.address, signal)
      // Gone before or while it was pushed (a DELETE keeps no repair state behind).
      if (!ok || (await o.store.stat(item.address)) === undefined) return 'obsolete'
      return 'done'
    }
    let lastError: unknown = new Error('no source')
    for (const source of item.from) {
      try {
        if ((await this.#fetchFrom(source, item, signal, pace)) === 'obsolete') return 'obsolete'
        o.state.clearSuspect(item.address)
        return 'done'
      } catch (e) {
        signal.throwIfAborted()
        lastError = e
        o.logger.warn({ err: e, source, address: item.address }, 'repair fetch from peer failed')
      }
    }
    throw lastError
  }

  async #fetchFrom(
    source: string,
    item: RepairItem,
    signal: AbortSignal,
    pace: (c: AsyncIterable<Uint8Array>, s: AbortSignal) => AsyncIterable<Uint8Array>,
  ): Promise<'done' | 'obsolete'> {
    const o = this.#o
    const address: Address = item.address
    const headers = await bearerHeaders(o.token, signal)
    const res = await o.transport.request(source, { method: 'GET', path: `/o/${address}`, headers, signal, timeoutMs: o.timeoutMs })
    try {
      await throwIfError(res)
    } catch (e) {
      await res.dump().catch(() => undefined)
      throw e
    }
    const commit = async (replace: boolean): Promise<void> => {
      await o.store.put(pace(res.body, signal), { expect: address, signal, replace })
    }
    try {
      return await o.guard.exclusive(address, async () => {
        if (item.action === 'replace-corrupt') {
          // Deleted since it was planned (DELETE holds the same lock): do not bring it back.
          if ((await o.store.stat(address)) === undefined) return 'obsolete'
          // The verified copy is renamed over the corrupt one, so the object never goes missing
          // (readers of the corrupt copy never get a wrong byte: chunks are verified). PUTs of the
          // same bytes wait in beginKeep() until the fresh copy is in place.
          await o.guard.replace(address, () => commit(true))
        } else {
          await commit(false)
        }
        return 'done'
      })
    } finally {
      // Releases the connection when the put stopped early (no-op once the body was consumed).
      await res.dump().catch(() => undefined)
    }
  }
}
