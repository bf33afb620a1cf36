/**
 * Write readiness of the registry from its real dependencies: the disk (a failed or slow commit
 * turns writes unready until a probe passes) and the log's integrity (a deep-verifier mismatch or
 * a shared log's foreign entry turns writes unready until a restart). Each is a write-gating
 * dependency of the host's readiness; the `write` path needs both, the `read` path neither.
 *
 * @module
 * @internal
 */

import { NotReadyError } from '@ron/core'
import type { Clock, Logger, Readiness } from '@ron/core'

/** Readiness dependency names. */
export const DEPS = { log: 'log', disk: 'disk', integrity: 'integrity' } as const

/** Tracks the disk and integrity dependencies and refuses writes while either is down. */
export class WriteHealth {
  /** Slow, or a disk fault (disk_full, io_error, read_only): what `missing` and a shed write's `details.reason` say. */
  #disk: string | undefined = undefined
  #slowUntil = 0
  #integrity = true

  constructor(
    private readonly readiness: Readiness,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** True while the disk is accepting writes. */
  get diskOk(): boolean {
    return this.#disk === undefined
  }

  /** True while a slow commit's grace period runs (the probe waits it out). */
  get slow(): boolean {
    return this.clock.now() < this.#slowUntil
  }

  setDisk(ok: boolean, reason?: string): void {
    this.#disk = ok ? undefined : (reason ?? 'io_error')
    this.readiness.set(DEPS.disk, ok, this.#disk)
  }

  /** A write failed with `reason` (a disk fault). */
  fault(reason: string, error: unknown): void {
    if (this.#disk !== reason) this.logger.error({ err: error, reason }, 'registry log write failed: writes are unready until the disk probe passes')
    this.setDisk(false, reason)
  }

  /** A commit took longer than `slowCommitMs`: writes are unready for `graceMs`, then until a probe passes. */
  slowCommit(graceMs: number): void {
    this.#slowUntil = this.clock.now() + graceMs
    this.setDisk(false, 'slow')
  }

  /** The disk's current reason when it is down. */
  get diskReason(): string | undefined {
    return this.#disk
  }

  setIntegrity(ok: boolean): void {
    this.#integrity = ok
    this.readiness.set(DEPS.integrity, ok, ok ? undefined : 'log_mismatch')
  }

  /** @throws {@link NotReadyError} (503, `details.reason`) while writes are shed by the disk or the log's integrity. */
  gate(): void {
    if (this.#disk === undefined && this.#integrity) return
    const reason = this.#disk ?? 'integrity'
    throw new NotReadyError(`registry writes are unavailable: ${reason}`, { details: { reason }, retryAfterMs: 1000 })
  }
}
