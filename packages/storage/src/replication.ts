/**
 * Replication: getting copies to the placement nodes (`placement.ts`) after a put.
 *
 * After a PUT the ingress node keeps its local copy (durable before anything else happens) and
 * pushes to the placement nodes other than itself: `writeQuorum - 1` of them synchronously before
 * acknowledging, the rest through the bounded `replicate` queue. When the ingress node is not
 * itself a placement node, it still keeps its copy (a surplus copy the planner leaves alone).
 *
 * @module
 */

import { BoundedQueue, IntegrityFailedError, UnavailableError, isRonError, throwIfError } from '@ron/core'
import type { Address, Logger, MetricsSink, Supervisor, Transport } from '@ron/core'
import type { BlobStore } from './store/types.js'
import { bearerHeaders, type TokenFor } from './peer-auth.js'
import { placement } from './placement.js'
import { TASKS, CHANNELS, REPLICATOR_TASKS } from './topology.js'

/**
 * Path of replica writes between storage nodes (scope `storage:replicate`): a replica is stored
 * like a PUT but never replicated again (that would cycle between placement nodes).
 */
export const REPLICA_PATH = '/replica'

/** `Retry-After` of a PUT whose write quorum was not met: long enough for a restarting peer. */
const WRITE_QUORUM_RETRY_AFTER_MS = 5000

/** What {@link pushObject} needs. */
export interface PushContext {
  store: BlobStore
  transport: Transport
  /** The bearer token of a replica call (scope `storage:replicate`). */
  token: TokenFor
  timeoutMs: number
  /** Wraps the byte stream (repair uses it for pacing). */
  pace?: (chunks: AsyncIterable<Uint8Array>, signal: AbortSignal) => AsyncIterable<Uint8Array>
  /**
   * Called when the LOCAL copy fails verification while being pushed (its chunk table is unusable
   * or a chunk does not verify): the service marks the address suspect so that repair replaces
   * the copy. Such a failure is not the peer's fault and is reported with
   * {@link isLocalCorruption}. @default no-op
   */
  markSuspect?(address: Address): void
}

const localCorruption = new WeakSet<object>()

/**
 * True when `e` was thrown by {@link pushObject} because the local copy failed verification (not
 * because of the peer). Identity-based: a peer's own 422 is never mistaken for it.
 */
export function isLocalCorruption(e: unknown): e is IntegrityFailedError {
  return typeof e === 'object' && e !== null && localCorruption.has(e)
}

/** Passes chunks through, recording an integrity failure of the local read in `seen`. */
async function* watchLocal(chunks: AsyncIterable<Uint8Array>, seen: { error: unknown }): AsyncGenerator<Uint8Array> {
  try {
    yield* chunks
  } catch (e) {
    if (isRonError(e, 'IntegrityFailed')) seen.error = e
    throw e
  }
}

/**
 * Streams the verified local copy of `address` to `peer` (`PUT /o` with `X-Expect-Address`, so
 * the peer verifies the whole object against the address before committing).
 * @returns false when there is no local copy to push.
 * @throws the peer's typed error (via `throwIfError`), `TimeoutError`; `IntegrityFailedError`
 *   (details `{ address, local: true, ... }`, recognised by {@link isLocalCorruption}) when the
 *   local copy turns out corrupt, after calling `ctx.markSuspect`.
 */
export async function pushObject(ctx: PushContext, peer: string, address: Address, signal: AbortSignal): Promise<boolean> {
  const seen: { error: unknown } = { error: undefined }
  const local = (cause: unknown): IntegrityFailedError => {
    ctx.markSuspect?.(address)
    const details = isRonError(cause) && cause.details !== undefined ? cause.details : {}
    const err = new IntegrityFailedError(`local copy of ${address} fails verification`, { details: { ...details, address, local: true }, cause })
    localCorruption.add(err)
    return err
  }
  let reader: Awaited<ReturnType<BlobStore['open']>>
  try {
    reader = await ctx.store.open(address)
  } catch (e) {
    if (isRonError(e, 'IntegrityFailed')) throw local(e)
    throw e
  }
  if (reader === undefined) return false
  try {
    const chunks = watchLocal(reader.read(undefined, signal), seen)
    const body = ctx.pace ? ctx.pace(chunks, signal) : chunks
    const headers: Record<string, string> = {
      'x-expect-address': address,
      'content-length': String(reader.size),
      'content-type': 'application/octet-stream',
    }
    Object.assign(headers, await bearerHeaders(ctx.token, signal))
    try {
      const res = await ctx.transport.request(peer, { method: 'PUT', path: REPLICA_PATH, headers, body, signal, timeoutMs: ctx.timeoutMs })
      await throwIfError(res)
      await res.dump()
    } catch (e) {
      // However the request ended (peer 422/400 on the cut-off body, or a transport error),
      // a local read that failed verification is what went wrong.
      if (seen.error !== undefined) throw local(seen.error)
      throw e
    }
    if (seen.error !== undefined) throw local(seen.error)
    return true
  } finally {
    await reader.close()
  }
}

/** Options of {@link Replicator}. */
export interface ReplicatorOptions extends PushContext {
  nodeId: string
  peers: string[]
  rf: number
  writeQuorum: number
  queueCapacity: number
  supervisor: Supervisor
  metrics: MetricsSink
  logger: Logger
}

interface ReplicationJob {
  address: Address
  targets: string[]
}

/** Pushes copies to placement peers after a put: quorum synchronously, the rest in the background. */
export class Replicator {
  readonly #o: ReplicatorOptions
  readonly #queue: BoundedQueue<ReplicationJob>

  constructor(o: ReplicatorOptions) {
    this.#o = o
    this.#queue = new BoundedQueue<ReplicationJob>({ name: CHANNELS.replicate, capacity: o.queueCapacity, metrics: o.metrics })
  }

  /** The nodes that should hold `address`. */
  placement(address: Address): string[] {
    return placement(address, [this.#o.nodeId, ...this.#o.peers], this.#o.rf)
  }

  /** Starts the replicator tasks (no-op without peers). */
  start(): void {
    if (this.#o.peers.length === 0) return
    for (let i = 0; i < REPLICATOR_TASKS; i++) this.#o.supervisor.spawn(TASKS.replicator, (signal) => this.#run(signal))
  }

  /** Stops intake; queued jobs are dropped at shutdown (the planner restores them later). */
  close(): void {
    this.#queue.close()
  }

  /** Items waiting in the replication queue. */
  get depth(): number {
    return this.#queue.depth
  }

  /**
   * Replicates a freshly put object: pushes synchronously until `writeQuorum` copies (the local
   * one included) are durable, and queues the remaining placement peers.
   * @returns the number of durable copies at acknowledgement time.
   * @throws {@link UnavailableError} (503, `Retry-After`, details `{ reason: 'write_quorum',
   *   copies, required }`) when the quorum cannot be reached: peers this write needs are
   *   unreachable (SPEC §4), so the client should retry; the local copy is kept and a retried PUT
   *   is safe (content-addressed, idempotent).
   */
  async replicate(address: Address, signal: AbortSignal): Promise<number> {
    const targets = this.placement(address).filter((n) => n !== this.#o.nodeId)
    if (targets.length === 0) return 1
    let copies = 1
    const rest: string[] = []
    let i = 0
    for (; i < targets.length && copies < this.#o.writeQuorum; i++) {
      const peer = targets[i]!
      try {
        await pushObject(this.#o, peer, address, signal)
        copies++
      } catch (e) {
        if (isLocalCorruption(e)) {
          // Not the peer's fault: our copy is marked suspect and repair replaces it; pushing it
          // to the remaining peers would fail the same way.
          this.#o.logger.warn({ err: e, address }, 'local copy fails verification while replicating')
          rest.length = 0
          i = targets.length
          break
        }
        this.#o.metrics.inc('replication_failures_total', { peer })
        this.#o.logger.warn({ err: e, peer, address }, 'synchronous replica write failed')
        rest.push(peer)
      }
    }
    if (copies < this.#o.writeQuorum) {
      throw new UnavailableError(`only ${copies} of ${this.#o.writeQuorum} copies are durable: the write quorum of peers is unreachable`, {
        details: { reason: 'write_quorum', copies, required: this.#o.writeQuorum },
        retryAfterMs: WRITE_QUORUM_RETRY_AFTER_MS,
      })
    }
    rest.push(...targets.slice(i))
    const background = rest
    if (background.length > 0) {
      try {
        this.#queue.trySend({ address, targets: background })
      } catch (e) {
        if (!isRonError(e)) throw e
        // Full or closed: the repair planner will find the missing replicas on its next tick.
        this.#o.metrics.inc('replication_skipped_total', { reason: e.code === 'Busy' ? 'full' : 'closed' })
      }
    }
    return copies
  }

  async #run(signal: AbortSignal): Promise<void> {
    for (;;) {
      let job: ReplicationJob
      try {
        job = await this.#queue.recv(signal)
      } catch (e) {
        if (isRonError(e, 'Closed') || signal.aborted) return
        throw e
      }
      for (const peer of job.targets) {
        if (signal.aborted) return
        try {
          await pushObject(this.#o, peer, job.address, signal)
          this.#o.metrics.inc('replicas_written_total', { peer })
        } catch (e) {
          if (signal.aborted) return
          if (isLocalCorruption(e)) {
            this.#o.logger.warn({ err: e, address: job.address }, 'local copy fails verification while replicating')
            break
          }
          this.#o.metrics.inc('replication_failures_total', { peer })
          this.#o.logger.warn({ err: e, peer, address: job.address }, 'background replica write failed')
        }
      }
    }
  }
}
