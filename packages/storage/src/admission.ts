/**
 * The `work` queue of the seed (listener → bounded `work` queue → GET/PUT pools), as one admission
 * scheduler: a request takes a *reader* slot (GET/HEAD, status) or a *writer* slot (PUT) when one
 * is free, otherwise it waits in the bounded queue; only a full queue answers `429 Busy`.
 *
 * Writers are sized for the disk, not the CPU, and a principal (token `sub`) may hold at most
 * `writersPerPrincipal` of them: its further uploads wait in the queue like everyone's while
 * other principals' uploads pass them. Waiting here happens before the body is read, so it never
 * counts against the upload's rate, its deadline or the slow-disk rule.
 *
 * @module
 */

import { BusyError, CanceledError, abortReason } from '@ron/core'
import type { Clock, MetricsSink } from '@ron/core'

/** What a request needs: a reader (GET/HEAD/status) or a writer (PUT). */
export type WorkKind = 'read' | 'write'

/** The limits of a {@link WorkScheduler}; swapped whole by {@link WorkScheduler.configure}. */
export interface WorkLimits {
  /** Requests that may wait for a slot; beyond it → 429 Busy. */
  capacity: number
  /** Concurrent GET/HEAD/status requests. */
  readers: number
  /** Concurrent uploads being written. */
  writers: number
  /** Concurrent uploads being written per principal. */
  writersPerPrincipal: number
}

/** Options of {@link WorkScheduler}. */
export interface WorkSchedulerOptions extends WorkLimits {
  /** Queue name (the `queue` label). */
  name: string
  metrics: MetricsSink
  clock: Clock
  /** `Retry-After` of a Busy answer. @default 1000 */
  retryAfterMs?: number
  /** Aborts every waiting request (the host's force-close signal). */
  signal: AbortSignal
}

interface Waiter {
  kind: WorkKind
  principal: string
  since: number
  resolve(release: () => void): void
  reject(e: Error): void
  signal: AbortSignal
  onAbort: () => void
}

/**
 * A bounded FIFO of requests waiting for a reader or writer slot. The first waiter that can run
 * runs: a write held back by its principal's cap does not block others behind it.
 *
 * @example
 * ```ts
 * const release = await work.acquire('write', claims.sub, 'PUT /o', signal) // may wait; BusyError when full
 * try { await ingest() } finally { release() }
 * ```
 */
export class WorkScheduler {
  readonly #o: WorkSchedulerOptions
  #limits: WorkLimits
  readonly #waiting: Waiter[] = []
  #readers = 0
  #writers = 0
  readonly #perPrincipal = new Map<string, number>()
  readonly #labels: { queue: string }

  constructor(o: WorkSchedulerOptions) {
    this.#o = o
    this.#limits = { capacity: o.capacity, readers: o.readers, writers: o.writers, writersPerPrincipal: o.writersPerPrincipal }
    this.#labels = { queue: o.name }
    o.metrics.set('queue_depth', this.#labels, 0)
    o.metrics.set('work_active', { kind: 'read' }, 0)
    o.metrics.set('work_active', { kind: 'write' }, 0)
    if (o.signal.aborted) this.#abortAll()
    else o.signal.addEventListener('abort', () => this.#abortAll(), { once: true })
  }

  /** Requests waiting for a slot. */
  get depth(): number {
    return this.#waiting.length
  }

  /** Slots in use, by kind. */
  get active(): { read: number; write: number } {
    return { read: this.#readers, write: this.#writers }
  }

  /** Uploads being written by `principal` right now. */
  writing(principal: string): number {
    return this.#perPrincipal.get(principal) ?? 0
  }

  /** The current limits. */
  get limits(): WorkLimits {
    return { ...this.#limits }
  }

  /** Swaps the limits (live reload). Slots already granted stay granted; waiters are re-checked. */
  configure(limits: WorkLimits): void {
    this.#limits = { ...limits }
    this.#pump()
  }

  /**
   * Takes a slot of `kind`, waiting in the queue when none is free.
   * @returns an idempotent release function.
   * @throws {@link BusyError} at once when the queue is full (`details.endpoint`/`queue` become the
   *   labels of `busy_rejections_total` when the host answers it).
   * @param signal the request's signal, or a function returning it: called only when the request
   *   has to wait (a request's signal may cost an `AbortController` and a listener to create, which
   *   a request granted at once never needs).
   * @throws the abort reason when `signal` aborts while waiting ({@link CanceledError} at a forced shutdown).
   */
  acquire(kind: WorkKind, principal: string, endpoint: string, signal: AbortSignal | (() => AbortSignal)): Promise<() => void> {
    if (typeof signal !== 'function' && signal.aborted) return Promise.reject(abortReason(signal))
    if (this.#o.signal.aborted) return Promise.reject(new CanceledError('storage is shutting down'))
    if (this.#eligible(kind, principal)) {
      this.#o.metrics.observe('work_wait_seconds', { kind }, 0)
      return Promise.resolve(this.#grant(kind, principal))
    }
    if (this.#waiting.length >= this.#limits.capacity) {
      // Counted by the service host, like every 429: busy_rejections_total{endpoint,queue}.
      return Promise.reject(
        new BusyError(`the ${this.#o.name} queue is full`, {
          details: { queue: this.#o.name, endpoint, capacity: this.#limits.capacity },
          retryAfterMs: this.#o.retryAfterMs ?? 1000,
        }),
      )
    }
    const sig = typeof signal === 'function' ? signal() : signal
    if (sig.aborted) return Promise.reject(abortReason(sig))
    return new Promise<() => void>((resolve, reject) => {
      const w: Waiter = {
        kind,
        principal,
        since: this.#o.clock.now(),
        resolve,
        reject,
        signal: sig,
        onAbort: () => {
          const i = this.#waiting.indexOf(w)
          if (i === -1) return
          this.#waiting.splice(i, 1)
          this.#depthChanged()
          reject(abortReason(sig))
        },
      }
      sig.addEventListener('abort', w.onAbort, { once: true })
      this.#waiting.push(w)
      this.#depthChanged()
    })
  }

  #eligible(kind: WorkKind, principal: string): boolean {
    const l = this.#limits
    if (kind === 'read') return this.#readers < l.readers
    return this.#writers < l.writers && this.writing(principal) < l.writersPerPrincipal
  }

  #grant(kind: WorkKind, principal: string): () => void {
    if (kind === 'read') this.#readers++
    else {
      this.#writers++
      this.#perPrincipal.set(principal, this.writing(principal) + 1)
    }
    this.#activeChanged(kind)
    let released = false
    return () => {
      if (released) return
      released = true
      if (kind === 'read') this.#readers--
      else {
        this.#writers--
        const n = this.writing(principal) - 1
        if (n <= 0) this.#perPrincipal.delete(principal)
        else this.#perPrincipal.set(principal, n)
      }
      this.#activeChanged(kind)
      this.#pump()
    }
  }

  /** Grants every waiter that can run now, oldest first. */
  #pump(): void {
    let changed = false
    for (let i = 0; i < this.#waiting.length; ) {
      const l = this.#limits
      if (this.#readers >= l.readers && this.#writers >= l.writers) break
      const w = this.#waiting[i]!
      if (!this.#eligible(w.kind, w.principal)) {
        i++
        continue
      }
      this.#waiting.splice(i, 1)
      changed = true
      w.signal.removeEventListener('abort', w.onAbort)
      this.#o.metrics.observe('work_wait_seconds', { kind: w.kind }, (this.#o.clock.now() - w.since) / 1000)
      w.resolve(this.#grant(w.kind, w.principal))
    }
    if (changed) this.#depthChanged()
  }

  #abortAll(): void {
    const all = this.#waiting.splice(0)
    for (const w of all) {
      w.signal.removeEventListener('abort', w.onAbort)
      w.reject(new CanceledError('storage shut down while the request waited for a slot', { details: { queue: this.#o.name } }))
    }
    // Not counted here: the host counts every request still in flight at the drain deadline.
    if (all.length > 0) this.#depthChanged()
  }

  #depthChanged(): void {
    this.#o.metrics.set('queue_depth', this.#labels, this.#waiting.length)
  }

  #activeChanged(kind: WorkKind): void {
    this.#o.metrics.set('work_active', { kind }, kind === 'read' ? this.#readers : this.#writers)
  }
}
