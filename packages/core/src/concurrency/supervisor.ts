/**
 * The supervisor: spawns, restarts, escalates and joins background tasks (the seeds' `tokio::spawn`
 * plus an Erlang-style restart intensity).
 *
 * @module
 */

import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { CanceledError, ClosedError } from '../errors.js'
import { noopMetrics } from '../metrics-sink.js'
import type { MetricsSink } from '../metrics-sink.js'
import { systemRandom } from '../random.js'
import type { Random } from '../random.js'
import { backoffDelay } from './backoff.js'
import type { Jitter } from './backoff.js'

/** Restart policy of a supervised task. */
export type RestartPolicy = 'on-failure' | 'always' | 'never'

/**
 * Life cycle of a task: `running`, `backoff` (waiting to restart), then one of `completed`
 * (returned), `canceled` (ended after its signal aborted), `failed` (threw, policy `never`),
 * `escalated` (crash loop) or `aborted` (still running at the shutdown deadline).
 */
export type TaskState = 'running' | 'backoff' | 'completed' | 'canceled' | 'failed' | 'escalated' | 'aborted'

/** Options of {@link Supervisor.spawn}. */
export interface SpawnOptions {
  /** When to restart. @defaultValue 'on-failure' */
  restart?: RestartPolicy
  /** Whether a crash loop of this task makes the supervisor not-live. @defaultValue true */
  critical?: boolean
}

/** What {@link Supervisor.spawn} returns. */
export interface TaskHandle {
  /** The task kind (metric label). */
  readonly kind: string
  /** Current state. */
  readonly state: TaskState
  /** Restarts so far. */
  readonly restarts: number
  /** The last error the task threw, if any. */
  readonly lastError: unknown
  /** Resolves (never rejects) when the task has ended for good; `state` says how. */
  readonly done: Promise<void>
  /** Aborts this task's signal (no restart) and waits for it to end. */
  stop(): Promise<void>
  /**
   * Marks the task as busy with a unit of work (a request's job) or idle again. A task busy when
   * `shutdown(0)` begins (the drain deadline already passed) is a straggler cut off at the
   * deadline: counted in `tasks_aborted_total{kind}` and reported as aborted, even if it then ends
   * promptly; an idle task ending on shutdown is an ordinary cancellation (`tasks_canceled_total`).
   */
  setBusy(busy: boolean): void
}

/** Events reported to `onEvent`, named `noun:verb`. */
export type SupervisorEvent =
  | { type: 'task:spawned'; kind: string }
  | { type: 'task:panicked'; kind: string; error: unknown }
  | { type: 'task:restarting'; kind: string; attempt: number; delayMs: number }
  | { type: 'task:exited'; kind: string; state: TaskState }
  | { type: 'task:escalated'; kind: string; reason: string; critical: boolean }
  | { type: 'task:aborted'; kind: string }

/** Options of {@link Supervisor}. */
export interface SupervisorOptions {
  /** Name for descriptions. @defaultValue 'supervisor' */
  name?: string
  /** Time source for backoff and deadlines. @defaultValue systemClock */
  clock?: Clock
  /** Jitter source. @defaultValue systemRandom */
  random?: Random
  /** Where task counters go. @defaultValue noopMetrics */
  metrics?: MetricsSink
  /** Restart backoff. @defaultValue `{ baseMs: 100, capMs: 5000, jitter: 'equal' }` */
  backoff?: { baseMs?: number; capMs?: number; jitter?: Jitter }
  /** Crash-loop detection: more than `maxRestarts` crashes within `windowMs` escalates. @defaultValue `{ maxRestarts: 5, windowMs: 60000 }` */
  intensity?: { maxRestarts?: number; windowMs?: number }
  /** Observer of task life-cycle events; exceptions it throws are ignored. */
  onEvent?: (e: SupervisorEvent) => void
}

/** One row of {@link Supervisor.describe}. */
export interface TaskDescription {
  kind: string
  state: TaskState
  restarts: number
  restart: RestartPolicy
  critical: boolean
}

/** Result of {@link Supervisor.shutdown}: kinds of the tasks that ended in time and of those that did not. */
export interface ShutdownReport {
  drained: string[]
  aborted: string[]
}

class Task implements TaskHandle {
  state: TaskState = 'running'
  restarts = 0
  lastError: unknown = undefined
  readonly controller = new AbortController()
  readonly done: Promise<void>
  settled = false
  busy = false
  /** Cut off busy at a zero-deadline shutdown: already counted as aborted. */
  abortedAtDeadline = false
  #resolveDone!: () => void

  constructor(
    readonly kind: string,
    readonly restart: RestartPolicy,
    readonly critical: boolean,
  ) {
    this.done = new Promise<void>((r) => {
      this.#resolveDone = r
    })
  }

  settle(state: TaskState): void {
    if (this.settled) return
    this.settled = true
    if (this.state !== 'aborted') this.state = state
    this.#resolveDone()
  }

  stop(): Promise<void> {
    if (!this.controller.signal.aborted) this.controller.abort(new CanceledError(`task ${this.kind} stopped`))
    return this.done
  }

  setBusy(busy: boolean): void {
    this.busy = busy
  }
}

/**
 * Runs background tasks, restarts them on failure with exponential backoff and jitter, detects
 * crash loops and joins everything on shutdown.
 *
 * A task is `async (signal) => { ... }` and must honour its signal: JavaScript cannot kill a
 * promise, so at the shutdown deadline a task that ignores its signal is only *reported* as
 * aborted (`tasks_aborted_total{kind}`); its promise keeps running, but it is never restarted.
 *
 * @example
 * ```ts
 * const sup = new Supervisor({ name: 'storage' })
 * sup.spawn('repair', async (signal) => {
 *   while (!signal.aborted) await repairOnce(signal)
 * })
 * // ...
 * const { aborted } = await sup.shutdown(3000)
 * ```
 */
export class Supervisor {
  readonly #name: string
  readonly #clock: Clock
  readonly #random: Random
  readonly #metrics: MetricsSink
  readonly #baseMs: number
  readonly #capMs: number
  readonly #jitter: Jitter
  readonly #maxRestarts: number
  readonly #windowMs: number
  readonly #onEvent: ((e: SupervisorEvent) => void) | undefined
  readonly #tasks = new Set<Task>()
  readonly #escalations: { kind: string; reason: string; critical: boolean }[] = []
  #shutdown: Promise<ShutdownReport> | undefined

  constructor(options: SupervisorOptions = {}) {
    this.#name = options.name ?? 'supervisor'
    this.#clock = options.clock ?? systemClock
    this.#random = options.random ?? systemRandom
    this.#metrics = options.metrics ?? noopMetrics
    this.#baseMs = options.backoff?.baseMs ?? 100
    this.#capMs = options.backoff?.capMs ?? 5000
    this.#jitter = options.backoff?.jitter ?? 'equal'
    this.#maxRestarts = options.intensity?.maxRestarts ?? 5
    this.#windowMs = options.intensity?.windowMs ?? 60_000
    this.#onEvent = options.onEvent
  }

  /** The supervisor's name. */
  get name(): string {
    return this.#name
  }

  /** True once {@link Supervisor.shutdown} was called. */
  get closed(): boolean {
    return this.#shutdown !== undefined
  }

  /**
   * Starts `task` under supervision. It restarts after a crash (policy `on-failure`, the default)
   * or after any end (`always`) unless its signal was aborted.
   *
   * @throws {@link ClosedError} after {@link Supervisor.shutdown}.
   */
  spawn(kind: string, task: (signal: AbortSignal, self: TaskHandle) => Promise<void>, options: SpawnOptions = {}): TaskHandle {
    if (this.#shutdown) throw new ClosedError(`supervisor ${this.#name} is shut down`, { details: { kind } })
    const t = new Task(kind, options.restart ?? 'on-failure', options.critical ?? true)
    this.#tasks.add(t)
    this.#metrics.inc('tasks_spawned_total', { kind })
    this.#emit({ type: 'task:spawned', kind })
    void this.#run(t, task)
    return t
  }

  /**
   * Liveness: `live` is false once a critical task escalated, with the reason, e.g.
   * `crash loop: repair restarted 6 times in 60s`.
   */
  health(): { live: boolean; reason?: string } {
    const fatal = this.#escalations.find((e) => e.critical)
    if (fatal) return { live: false, reason: fatal.reason }
    const soft = this.#escalations[0]
    return soft ? { live: true, reason: soft.reason } : { live: true }
  }

  /** The tasks not yet ended, with their state (plus escalated ones, which stay listed). */
  describe(): TaskDescription[] {
    return [...this.#tasks].map((t) => ({ kind: t.kind, state: t.state, restarts: t.restarts, restart: t.restart, critical: t.critical }))
  }

  /**
   * Cooperative stop of everything: aborts every task's signal, waits until all have ended or
   * `deadlineMs` has passed, and reports which ended in time (`drained`) and which were still
   * running (`aborted`, counted in `tasks_aborted_total{kind}`). Always resolves. A second call
   * joins the first. Leaves no timer behind.
   */
  shutdown(deadlineMs: number): Promise<ShutdownReport> {
    this.#shutdown ??= this.#doShutdown(deadlineMs)
    return this.#shutdown
  }

  /**
   * The close verb: {@link Supervisor.shutdown} with `deadlineMs` (default 0: abort everything at
   * once and wait for the tasks to end). Idempotent; joins an earlier shutdown.
   */
  async close(deadlineMs = 0): Promise<void> {
    await this.shutdown(deadlineMs)
  }

  /** Same as {@link Supervisor.close}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.shutdown(0)
  }

  async #doShutdown(deadlineMs: number): Promise<ShutdownReport> {
    // Escalated tasks stay listed for describe() but have already ended: not part of the report.
    const tasks = [...this.#tasks].filter((t) => !t.settled)
    // With no time left, a task in the middle of a unit of work is a straggler of the drain
    // deadline (SPEC.md 3.3), however promptly it honours the abort that follows.
    if (deadlineMs <= 0) {
      for (const t of tasks) {
        if (!t.busy) continue
        t.abortedAtDeadline = true
        this.#metrics.inc('tasks_aborted_total', { kind: t.kind })
        this.#emit({ type: 'task:aborted', kind: t.kind })
      }
    }
    for (const t of tasks) {
      if (!t.controller.signal.aborted) t.controller.abort(new CanceledError(`supervisor ${this.#name} shutting down`))
    }
    const deadline = new AbortController()
    const timer = this.#clock.setTimeout(() => deadline.abort(), Math.max(0, deadlineMs))
    timer.unref?.()
    try {
      await Promise.race([
        Promise.all(tasks.map((t) => t.done)),
        new Promise<void>((resolve) => deadline.signal.addEventListener('abort', () => resolve(), { once: true })),
      ])
    } finally {
      this.#clock.clearTimeout(timer)
    }
    const report: ShutdownReport = { drained: [], aborted: [] }
    for (const t of tasks) {
      if (t.abortedAtDeadline) {
        t.state = 'aborted'
        report.aborted.push(t.kind)
        if (!t.settled) this.#tasks.delete(t)
      } else if (t.settled) {
        report.drained.push(t.kind)
      } else {
        t.state = 'aborted'
        this.#metrics.inc('tasks_aborted_total', { kind: t.kind })
        this.#emit({ type: 'task:aborted', kind: t.kind })
        report.aborted.push(t.kind)
        this.#tasks.delete(t)
      }
    }
    return report
  }

  async #run(t: Task, task: (signal: AbortSignal, self: TaskHandle) => Promise<void>): Promise<void> {
    const signal = t.controller.signal
    const crashes: number[] = []
    let final: TaskState = 'completed'
    try {
      for (;;) {
        t.state = 'running'
        let threw = false
        try {
          await task(signal, t)
        } catch (e) {
          threw = true
          t.lastError = e
        }
        if (signal.aborted) {
          if (!t.abortedAtDeadline) this.#metrics.inc('tasks_canceled_total', { kind: t.kind })
          final = 'canceled'
          return
        }
        let delay: number
        if (threw) {
          this.#metrics.inc('tasks_panicked_total', { kind: t.kind })
          this.#emit({ type: 'task:panicked', kind: t.kind, error: t.lastError })
          if (t.restart === 'never') {
            final = 'failed'
            return
          }
          const now = this.#clock.now()
          crashes.push(now)
          while (crashes.length > 0 && crashes[0]! <= now - this.#windowMs) crashes.shift()
          if (crashes.length > this.#maxRestarts) {
            const reason = `crash loop: ${t.kind} restarted ${crashes.length} times in ${formatWindow(this.#windowMs)}`
            this.#escalations.push({ kind: t.kind, reason, critical: t.critical })
            this.#emit({ type: 'task:escalated', kind: t.kind, reason, critical: t.critical })
            final = 'escalated'
            return
          }
          // Backoff grows with the crashes still inside the intensity window, so a task that ran
          // healthy for a whole window starts again from the base delay.
          delay = backoffDelay(crashes.length - 1, { baseMs: this.#baseMs, capMs: this.#capMs, jitter: this.#jitter }, this.#random)
        } else {
          if (t.restart !== 'always') {
            final = 'completed'
            return
          }
          delay = backoffDelay(0, { baseMs: this.#baseMs, capMs: this.#capMs, jitter: this.#jitter }, this.#random)
        }
        t.state = 'backoff'
        this.#emit({ type: 'task:restarting', kind: t.kind, attempt: t.restarts + 1, delayMs: delay })
        try {
          await this.#clock.sleep(delay, signal)
        } catch {
          this.#metrics.inc('tasks_canceled_total', { kind: t.kind })
          final = 'canceled'
          return
        }
        t.restarts++
      }
    } finally {
      if (final !== 'escalated') this.#tasks.delete(t)
      t.settle(final)
      this.#emit({ type: 'task:exited', kind: t.kind, state: t.state })
    }
  }

  #emit(e: SupervisorEvent): void {
    if (!this.#onEvent) return
    try {
      this.#onEvent(e)
    } catch {
      // An observer must not break supervision.
    }
  }
}

function formatWindow(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}
