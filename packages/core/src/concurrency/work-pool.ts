/**
 * Listener → bounded work queue → pool of N workers, in one object.
 *
 * @module
 */

import { abortReason } from '../clock.js'
import { linkSignals, signalOf, type SignalOption } from './abort.js'
import type { Clock } from '../clock.js'
import { CanceledError, DrainingError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import { BoundedQueue } from './bounded-queue.js'
import type { Supervisor, TaskHandle } from './supervisor.js'

/** Options of {@link WorkPool}. */
export interface WorkPoolOptions {
  /** Queue name (metric label `queue`); workers are spawned as kind `${name}-worker`. */
  name: string
  /** Queue capacity; a full queue rejects with {@link BusyError}. */
  capacity: number
  /** Number of workers. */
  concurrency: number
  /** The supervisor that runs (and on shutdown aborts) the workers. */
  supervisor: Supervisor
  /** Where the queue's metrics go. @defaultValue noopMetrics */
  metrics?: MetricsSink
  /** Reserved for timing metrics (currently unused). @defaultValue systemClock */
  clock?: Clock
  /** `retryAfterMs` of the Busy rejection. @defaultValue 1000 */
  retryAfterMs?: number
}

interface Job {
  run: (signal: AbortSignal) => Promise<unknown>
  resolve: (v: unknown) => void
  reject: (e: unknown) => void
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
  settled: boolean
}

/**
 * A bounded work queue drained by `concurrency` supervised workers: what every service route that
 * declares a queue uses. {@link WorkPool.submit} never waits for space: a full queue rejects at once
 * with {@link BusyError}.
 *
 * @example
 * ```ts
 * const pool = new WorkPool({ name: 'put', capacity: 512, concurrency: 4, supervisor })
 * const result = await pool.submit((signal) => store.put(body, signal), req.signal)
 * pool.stop()          // intake stops, queued jobs still run
 * await pool.drained()
 * ```
 */
export class WorkPool {
  readonly #name: string
  readonly #queue: BoundedQueue<Job>
  readonly #concurrency: number
  #inFlight = 0
  #stopped = false
  #drainWaiters: (() => void)[] = []

  /** @throws {@link ClosedError} when the supervisor is already shut down. */
  constructor(options: WorkPoolOptions) {
    this.#name = options.name
    this.#concurrency = options.concurrency
    const qopts: ConstructorParameters<typeof BoundedQueue<Job>>[0] = { name: options.name, capacity: options.capacity, overflow: 'reject-new' }
    if (options.metrics) qopts.metrics = options.metrics
    if (options.retryAfterMs !== undefined) qopts.retryAfterMs = options.retryAfterMs
    this.#queue = new BoundedQueue<Job>(qopts)
    for (let i = 0; i < options.concurrency; i++) {
      options.supervisor.spawn(`${options.name}-worker`, (signal, self) => this.#worker(signal, self), { restart: 'on-failure' })
    }
  }

  /** Queue name. */
  get name(): string {
    return this.#name
  }

  /** Jobs waiting in the queue (including ones whose caller already gave up and will be skipped). */
  get depth(): number {
    return this.#queue.depth
  }

  /** Queue capacity. */
  get capacity(): number {
    return this.#queue.capacity
  }

  /** Number of workers. */
  get concurrency(): number {
    return this.#concurrency
  }

  /** Jobs running right now. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** True after {@link WorkPool.stop}. */
  get stopped(): boolean {
    return this.#stopped
  }

  /**
   * Queues `job` and settles with its result once a worker ran it. The job's signal aborts when the
   * caller's signal (given directly or as `{ signal }`) aborts or the supervisor shuts down.
   *
   * @throws {@link BusyError} (as an immediate rejection) when the queue is full.
   * @throws {@link DrainingError} after {@link WorkPool.stop}.
   * @throws {@link CanceledError} when `signal` aborts while the job is queued (it never runs).
   */
  submit<T>(job: (signal: AbortSignal) => Promise<T>, options?: SignalOption): Promise<T> {
    const signal = signalOf(options)
    if (this.#stopped) return Promise.reject(new DrainingError(`pool ${this.#name} is draining`, { details: { queue: this.#name } }))
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    return new Promise<T>((resolve, reject) => {
      const j: Job = {
        run: job,
        resolve: resolve as (v: unknown) => void,
        reject,
        signal,
        onAbort: undefined,
        settled: false,
      }
      try {
        this.#queue.trySend(j)
      } catch (e) {
        // trySend throws BusyError or ClosedError.
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(e)
        return
      }
      if (signal) {
        j.onAbort = () => {
          if (j.settled) return
          j.settled = true
          reject(abortReason(signal))
        }
        signal.addEventListener('abort', j.onAbort, { once: true })
      }
    })
  }

  /** Stops intake (later `submit` rejects {@link DrainingError}); queued jobs still run. Idempotent. */
  stop(): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#queue.close()
    this.#checkDrained()
  }

  /**
   * Stops intake and resolves once every queued and running job has finished: `stop()` then
   * `drained()`. Idempotent. (To abort running jobs, shut down the supervisor.)
   */
  close(): Promise<void> {
    this.stop()
    return this.drained()
  }

  /** Same as {@link WorkPool.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  /** Resolves when the queue is empty and no job is running. */
  drained(): Promise<void> {
    if (this.#isDrained()) return Promise.resolve()
    return new Promise<void>((r) => this.#drainWaiters.push(r))
  }

  async #worker(signal: AbortSignal, self: TaskHandle): Promise<void> {
    // One abort listener per worker lifetime instead of one per recv: the supervisor's abort
    // closes the queue, which wakes every idle worker.
    const onAbort = (): void => {
      this.#stopped = true
      this.#queue.close()
    }
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    try {
      for (;;) {
        if (signal.aborted) {
          this.#rejectQueued(abortReason(signal))
          return
        }
        let job: Job
        try {
          job = await this.#queue.recv()
        } catch {
          // Closed and empty: drained after stop(), or shut down (then queued jobs never run).
          if (signal.aborted) this.#rejectQueued(abortReason(signal))
          return
        }
        if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort)
        if (signal.aborted) {
          this.#cancel(job, abortReason(signal))
          continue
        }
        if (job.settled) {
          this.#checkDrained()
          continue
        }
        this.#inFlight++
        self.setBusy(true)
        // The job's signal follows both the caller's and the worker's; linked by hand (not
        // AbortSignal.any, several times dearer on Node 20) and detached when the job ends.
        const link = linkSignals(signal, job.signal)
        try {
          job.resolve(await job.run(link.signal))
        } catch (e) {
          job.reject(e)
        } finally {
          link.dispose()
          job.settled = true
          self.setBusy(false)
          this.#inFlight--
          this.#checkDrained()
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  #cancel(j: Job, reason: Error): void {
    if (j.onAbort) j.signal?.removeEventListener('abort', j.onAbort)
    if (j.settled) return
    j.settled = true
    j.reject(reason instanceof CanceledError ? reason : new CanceledError(`pool ${this.#name} shut down`, { cause: reason }))
  }

  #rejectQueued(reason: Error): void {
    for (let j = this.#queue.tryRecv(); j !== undefined; j = this.#queue.tryRecv()) this.#cancel(j, reason)
    this.#checkDrained()
  }

  #isDrained(): boolean {
    return this.#queue.depth === 0 && this.#inFlight === 0
  }

  #checkDrained(): void {
    if (!this.#isDrained() || this.#drainWaiters.length === 0) return
    const ws = this.#drainWaiters
    this.#drainWaiters = []
    for (const w of ws) w()
  }
}
