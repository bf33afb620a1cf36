/**
 * The Checkpointor: every commit is checkpointed by the {@link Notary} before it is answered; this
 * task, every `checkpointIntervalMs` (the longest the log stays without a fresh signature when it
 * is idle) and on demand, asks the witnesses for fresh cosignatures of the latest checkpoint and
 * stores it durably (leaf hashes first) when the tree grew since the last stored one, then
 * try-sends a command to Retention (`retention_cmd`, 8): when that queue is full the cycle is
 * skipped and logged — the next checkpoint sends again.
 *
 * @module
 */

import { isRonError } from '@ron/core'
import type { BoundedQueue, Clock, Logger, MetricsSink } from '@ron/core'
import type { RegistryLog } from './log.js'
import type { Notary } from './notary.js'
import type { StoredCheckpoint } from './store/types.js'
import { faultReason, writeFault } from './write-fault.js'

/** What Retention is asked to do. */
export interface RetentionCommand {
  reason: 'checkpoint' | 'manual'
}

/** Dependencies of the {@link Checkpointor}. */
export interface CheckpointorOptions {
  log: RegistryLog
  notary: Notary
  retention: BoundedQueue<RetentionCommand>
  intervalMs: () => number
  clock: Clock
  metrics: MetricsSink
  logger: Logger
  /** Told when storing a checkpoint fails on the disk (drives write readiness). */
  onFault?: (reason: string, error: unknown) => void
}

/** Signs and stores checkpoints. Checkpoint writes are serialised here. */
export class Checkpointor {
  readonly #o: CheckpointorOptions
  #tail: Promise<unknown> = Promise.resolve()
  #wake: (() => void) | undefined

  constructor(o: CheckpointorOptions) {
    this.#o = o
  }

  /** The latest stored checkpoint. */
  latest(): StoredCheckpoint | undefined {
    return this.#o.log.store.checkpoints().at(-1)
  }

  /** Updates `registry_checkpoint_age_seconds` (age of the latest checkpoint). */
  gauge(): void {
    const cp = this.latest()
    this.#o.metrics.set('registry_checkpoint_age_seconds', undefined, cp === undefined ? 0 : Math.max(0, (this.#o.clock.now() - cp.createdAt) / 1000))
  }

  /**
   * Signs and stores a checkpoint of the current tree now (unless the latest one already has this
   * size), then asks Retention to run. Calls are serialised.
   * @throws {@link NotReadyError} when the disk refuses the write (`details.reason` `disk_full`,
   *   `io_error`, `read_only`); the checkpoint is then not stored
   */
  checkpointNow(): Promise<StoredCheckpoint> {
    const run = this.#tail.then(() => this.#checkpoint())
    this.#tail = run.catch(() => undefined)
    return run
  }

  async #checkpoint(): Promise<StoredCheckpoint> {
    const { log, notary, clock, metrics } = this.#o
    // A shared log stores what the lease holder signed (the served checkpoint), never signs here.
    const shared = log.store.shared !== undefined
    const size = shared ? notary.latest().treeSize : log.tree.size
    const last = this.latest()
    if (last !== undefined && last.treeSize >= size) {
      this.#askRetention()
      return last
    }
    const signed = notary.latest().treeSize === size ? notary.latest() : notary.sign(size)
    const cp: StoredCheckpoint = {
      treeSize: size,
      root: Buffer.from(signed.rootHash).toString('hex'),
      note: signed.note,
      createdAt: clock.now(),
      signerSets: log.signerSetHistory().filter((s) => s.version > 0 && s.version <= size),
    }
    try {
      await log.store.appendCheckpoint(cp)
    } catch (e) {
      const reason = faultReason(e)
      if (reason !== undefined) this.#o.onFault?.(reason, e)
      throw writeFault(e)
    }
    metrics.inc('registry_checkpoints_total')
    this.gauge()
    this.#askRetention()
    return cp
  }

  #askRetention(): void {
    try {
      this.#o.retention.trySend({ reason: 'checkpoint' })
    } catch (e) {
      if (!isRonError(e, 'Busy') && !isRonError(e, 'Closed')) throw e
      this.#o.logger.warn({ queue: 'retention_cmd' }, 'retention queue full: skipping this cycle')
    }
  }

  /** Wakes the loop at once (an on-demand checkpoint from the loop's task). */
  wake(): void {
    const w = this.#wake
    this.#wake = undefined
    w?.()
  }

  /**
   * The Checkpointor's loop: every interval (re-read each time) fresh cosignatures of the latest
   * checkpoint are requested and it is stored durably.
   */
  async run(signal: AbortSignal): Promise<void> {
    const clock = this.#o.clock
    while (!signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = clock.setTimeout(done, this.#o.intervalMs())
        timer.unref?.()
        function done(): void {
          clock.clearTimeout(timer)
          signal.removeEventListener('abort', done)
          resolve()
        }
        this.#wake = done
        signal.addEventListener('abort', done, { once: true })
      })
      if (signal.aborted) return
      this.#o.notary.refresh()
      try {
        await this.checkpointNow()
      } catch (e) {
        // A disk fault is not the task's failure: writes turn unready, and the next interval
        // tries again (a restart loop would turn the whole service not-live for a full disk).
        if (isRonError(e, 'NotReady')) {
          this.#o.logger.warn({ err: e }, 'checkpoint not stored: the disk refused it')
          continue
        }
        this.#o.logger.error({ err: e }, 'checkpoint failed')
        throw e
      }
    }
  }
}
