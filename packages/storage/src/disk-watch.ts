/**
 * Write readiness from the disk (SPEC.md 3.3a: uploads shed first, reads stay up): the disk-probe
 * task's verdict (writable, free space, recent slow commits) and the put path's own reports (a
 * failed write, a slow fsync) drive the `disk` dependency the `put` path needs. The probe also
 * samples usage (objects, bytes, free space) so `/status` never walks the store.
 *
 * @module
 */

import type { Clock, Logger, MetricsSink, Readiness } from '@ron/core'
import type { ResolvedStorageConfig } from './config.js'
import type { BlobStore } from './store/types.js'

/** What a node stores, as last sampled by the disk-probe task. */
export interface StorageUsage {
  /** Objects stored on this node. */
  objects: number
  /** Bytes of those objects. */
  bytes: number
  /** Free bytes of the backend; `undefined` when the backend cannot tell (memory). */
  freeBytes: number | undefined
  /** When objects and bytes were counted (clock ms); `undefined` before the first count. */
  sampledAt: number | undefined
}

/** Objects and bytes are counted at most this often (the walk reads every object's metadata). */
const USAGE_EVERY_MS = 60_000

/** The readiness dependency the `put` path needs. */
export const DISK_DEPENDENCY = 'disk'

/** Options of {@link DiskWatch}. */
export interface DiskWatchOptions {
  store: BlobStore
  readiness: Readiness
  config: () => ResolvedStorageConfig
  clock: Clock
  metrics: MetricsSink
  logger: Logger
}

/** The disk's write readiness and the usage sample. */
export class DiskWatch {
  /** Whether the disk currently accepts writes, and why not (read by the put route). */
  readonly state: { ok: boolean; reason?: string } = { ok: true }
  #usage: StorageUsage = { objects: 0, bytes: 0, freeBytes: undefined, sampledAt: undefined }
  #usageAt = -Infinity
  #slowUntil = 0
  readonly #o: DiskWatchOptions

  constructor(o: DiskWatchOptions) {
    this.#o = o
  }

  /** The last usage sample. */
  get usage(): StorageUsage {
    return this.#usage
  }

  /** Sets the disk's verdict (and the `disk` dependency with it). */
  set(ok: boolean, reason?: string): void {
    this.state.ok = ok
    if (ok) delete this.state.reason
    else this.state.reason = reason ?? 'not_writable'
    this.#o.readiness.set(DISK_DEPENDENCY, ok, this.state.reason)
  }

  /** A put's commit time (end of body → durable): slower than `writeReadiness.slowPutMs` marks the disk slow for two probe periods. */
  commitTime(ms: number): void {
    this.#o.metrics.observe('put_commit_seconds', undefined, ms / 1000)
    const w = this.#o.config().writeReadiness
    if (ms > w.slowPutMs) {
      this.#slowUntil = this.#o.clock.now() + 2 * w.probeIntervalMs
      this.set(false, 'slow')
    }
  }

  /**
   * One probe: writability, free space, the slow mark; samples usage (objects and bytes at most
   * once a minute) unless `count` is false. Never throws.
   */
  async probe(signal: AbortSignal, count = true): Promise<void> {
    const { store, clock, logger } = this.#o
    try {
      const r = await store.probe()
      if (count) await this.#sample(r.freeBytes, signal).catch((e: unknown) => logger.debug({ err: e }, 'usage sample failed'))
      else this.#free(r.freeBytes)
      if (!r.writable) this.set(false, r.reason ?? 'not_writable')
      else if (r.freeBytes !== undefined && r.freeBytes < this.#o.config().writeReadiness.minFreeBytes) this.set(false, 'low_space')
      else if (clock.now() < this.#slowUntil) this.set(false, 'slow')
      else this.set(true)
    } catch (e) {
      logger.warn({ err: e }, 'disk probe failed')
      this.set(false, 'probe_failed')
    }
  }

  /**
   * The probe task: the first usage count at once (the creation's probe skips it: counting walks
   * every object, and a start need not wait for it), then a probe every
   * `writeReadiness.probeIntervalMs` until `signal` aborts.
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.#sample(this.#usage.freeBytes, signal).catch((e: unknown) => this.#o.logger.debug({ err: e }, 'usage sample failed'))
    for (;;) {
      await this.#o.clock.sleep(this.#o.config().writeReadiness.probeIntervalMs, signal)
      await this.probe(signal)
    }
  }

  async #sample(freeBytes: number | undefined, signal: AbortSignal): Promise<void> {
    const { store, clock, metrics } = this.#o
    if (clock.now() - this.#usageAt < USAGE_EVERY_MS) return this.#free(freeBytes)
    this.#usageAt = clock.now()
    let objects = 0
    let bytes = 0
    for await (const a of store.list(signal)) {
      const st = await store.stat(a)
      if (st === undefined) continue
      objects++
      bytes += st.size
    }
    this.#usage = { objects, bytes, freeBytes, sampledAt: clock.now() }
    metrics.set('storage_objects', undefined, objects)
    metrics.set('storage_bytes', undefined, bytes)
    if (freeBytes !== undefined) metrics.set('storage_free_bytes', undefined, freeBytes)
  }

  /** Records free space alone (objects and bytes keep their last count). */
  #free(freeBytes: number | undefined): void {
    this.#usage = { ...this.#usage, freeBytes }
    if (freeBytes !== undefined) this.#o.metrics.set('storage_free_bytes', undefined, freeBytes)
  }
}
