/**
 * Retention: the one task that prunes. It removes whole segments, oldest first, only when a
 * signed checkpoint strictly covers them (every version ≤ the checkpoint's tree size), never the
 * segment holding HEAD, never anything before the first checkpoint, and only while the log is over
 * a limit (age, entry count or bytes). A pruned version answers 410 `Gone` naming the checkpoint
 * that covers it; its leaf hash stays, so proofs still work.
 *
 * @module
 */

import type { BoundedQueue, Clock, Logger, MetricsSink } from '@ron/core'
import type { RetentionCommand } from './checkpointor.js'
import type { RegistryLog } from './log.js'
import { isRonError } from '@ron/core'
import type { SegmentInfo } from './store/types.js'
import { faultReason, writeFault } from './write-fault.js'

/** Retention limits (reloadable). */
export interface RetentionLimits {
  maxAgeMs: number
  maxEntries: number
  maxBytes: number
}

/** Dependencies of {@link Retention}. */
export interface RetentionOptions {
  log: RegistryLog
  queue: BoundedQueue<RetentionCommand>
  limits: () => RetentionLimits
  clock: Clock
  metrics: MetricsSink
  logger: Logger
  /** Told when pruning fails on the disk (drives write readiness). */
  onFault?: (reason: string, error: unknown) => void
}

/** Prunes segments covered by checkpoints. */
export class Retention {
  readonly #o: RetentionOptions

  constructor(o: RetentionOptions) {
    this.#o = o
  }

  /** Updates `registry_log_segments` and `registry_storage_bytes`. */
  gauge(): void {
    this.#o.metrics.set('registry_log_segments', undefined, this.#o.log.store.segments().length)
    this.#o.metrics.set('registry_storage_bytes', undefined, this.#o.log.store.sizeBytes())
  }

  /** The segments that may and should go now (see the module comment). */
  plan(): SegmentInfo[] {
    const { log, clock } = this.#o
    const cp = log.store.checkpoints().at(-1)
    if (cp === undefined) return []
    const limits = this.#o.limits()
    const segs = log.store.segments()
    const head = log.head().version
    let entries = segs.reduce((n, s) => n + (s.last - s.first + 1), 0)
    let bytes = log.store.sizeBytes()
    const out: SegmentInfo[] = []
    for (const s of segs.slice(0, -1)) {
      if (s.last > cp.treeSize || s.last >= head) break
      const old = s.lastCommittedAt < clock.now() - limits.maxAgeMs
      if (!old && entries <= limits.maxEntries && bytes <= limits.maxBytes) break
      out.push(s)
      entries -= s.last - s.first + 1
      bytes -= s.bytes
    }
    return out
  }

  /**
   * Prunes what {@link Retention.plan} allows. Returns the segments removed.
   * @throws {@link NotReadyError} when the disk refuses the change (`details.reason` as for commits)
   */
  async pruneNow(): Promise<SegmentInfo[]> {
    const plan = this.plan()
    if (plan.length === 0) {
      this.gauge()
      return []
    }
    let removed: SegmentInfo[]
    try {
      removed = await this.#o.log.store.prune(plan.at(-1)!.last)
    } catch (e) {
      const reason = faultReason(e)
      if (reason !== undefined) this.#o.onFault?.(reason, e)
      throw writeFault(e)
    }
    this.#o.metrics.inc('registry_pruned_segments_total', undefined, removed.length)
    this.#o.logger.info({ segments: removed.length, through: removed.at(-1)?.last }, 'pruned segments covered by a checkpoint')
    this.gauge()
    return removed
  }

  /** The Retention loop: one prune per command. */
  async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      await this.#o.queue.recv(signal)
      try {
        await this.pruneNow()
      } catch (e) {
        // The disk refused: the next checkpoint asks again.
        if (!isRonError(e, 'NotReady')) throw e
        this.#o.logger.warn({ err: e }, 'pruning skipped: the disk refused it')
      }
    }
  }
}
