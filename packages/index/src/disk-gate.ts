/**
 * The disk gate of name writes: a write or commit the disk refuses (full, failing, read-only
 * volume) turns name writes unready — 503 `NotReady` with the fault's reason, `/readyz`
 * `writeReady: false` with `disk` missing — while reads go on; the store janitor probes every
 * `storeProbeMs` until the disk takes a write again.
 *
 * @module
 */

import { NotReadyError, Watch, isRonError } from '@ron/core'
import type { Clock, Logger, Readiness } from '@ron/core'
import type { ResolvedIndexConfig } from './config.js'
import type { IndexMetrics } from './metrics.js'

/** The disk-fault reasons of SPEC §4 that turn name writes unready. */
const DISK_FAULTS = new Set(['disk_full', 'io_error', 'read_only'])

/** The readiness dependency of name writes on the disk. */
export const DISK_DEPENDENCY = 'disk'

/** The disk fault in `e`, if it is one (a {@link NotReadyError} with a disk `details.reason`). */
export function diskFault(e: unknown): NotReadyError | undefined {
  if (!isRonError(e, 'NotReady')) return undefined
  const reason = (e.details as { reason?: unknown } | undefined)?.reason
  return typeof reason === 'string' && DISK_FAULTS.has(reason) ? (e as NotReadyError) : undefined
}

/** What the gate works with. */
export interface DiskGateDeps {
  readiness: Readiness
  metrics: IndexMetrics
  clock: Clock
  logger: Logger
  config(): ResolvedIndexConfig
}

/** The standing disk fault of the name store, if any; the store janitor is its only healer. */
export class DiskGate {
  /** The standing fault, `undefined` while the disk takes writes. */
  fault: NotReadyError | undefined
  /** When the janitor probes next. */
  probeAt = 0
  /** Bumped on every change: wakes the store janitor. */
  readonly changed = new Watch<number>(0)
  readonly #d: DiskGateDeps

  constructor(deps: DiskGateDeps) {
    this.#d = deps
  }

  /** Sets (or clears, with `undefined`) the standing fault and the `disk` dependency. */
  set(e: NotReadyError | undefined): void {
    const d = this.#d
    this.fault = e
    this.probeAt = d.clock.now() + d.config().storeProbeMs
    d.readiness.set(DISK_DEPENDENCY, e === undefined, (e?.details as { reason?: string } | undefined)?.reason)
    if (!this.changed.closed) this.changed.set(this.changed.get() + 1)
  }

  /** Reports a store failure: a disk fault (counted unless `count` is false) turns writes unready. */
  failed(e: unknown, count = true): void {
    const f = diskFault(e)
    if (f === undefined) return
    if (count) this.#d.metrics.storeFaults.inc({ reason: (f.details as { reason: string }).reason })
    if (this.fault === undefined) this.#d.logger.warn({ err: e }, 'index: the disk refused a name write; name writes are unready until it takes one')
    this.set(f)
  }

  /** @throws the standing fault ({@link NotReadyError}, retryable after the probe period). */
  writable(): void {
    const f = this.fault
    if (f === undefined) return
    throw new NotReadyError(f.message, { details: { ...(f.details as object) }, retryAfterMs: Math.max(1000, this.#d.config().storeProbeMs) })
  }

  /** Stops waking the janitor (close). */
  close(): void {
    this.changed.close()
  }
}
