/**
 * Live config reload (SPEC.md 3.3b): validate → swap an immutable snapshot (a {@link Watch}) →
 * run the service's reload hooks → roll back whole on failure. What cannot change live is
 * refused. Counted in `config_reloads_total`, `config_reload_errors_total` and
 * `config_reload_duration_seconds`.
 *
 * @module
 */

import { isDeepStrictEqual } from 'node:util'
import type { z } from 'zod'
import type { Clock } from '../clock.js'
import { Watch } from '../concurrency/watch.js'
import { ConfigError } from '../config/config-error.js'
import { isPlainObject, merge, validateConfig } from '../config/load.js'
import { BusyError, ClosedError, toRonError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import type { Logger } from './logger.js'

/** The host option that makes a service's config reloadable. */
export interface ReloadableConfig<C> {
  /** Schema of the whole config; every reload is validated with it (through `validateConfig`). */
  schema: z.ZodType<C>
  /**
   * The config as given to the service factory (before defaults). Reloads merge their partial
   * into it (objects merge, arrays replace) and validate the result. @default {}
   */
  input?: unknown
  /**
   * Dotted key paths that cannot change live (ports, data directory…). A reload that changes the
   * validated value at one of them is refused with a {@link ConfigError} (`details.reason: 'immutable'`).
   * @default []
   */
  immutable?: readonly string[]
  /**
   * The schema spreads `serviceBaseShape()` (the base keys `http`, `cors`, `drainDeadlineMs`,
   * `drainReadWindowMs` at the top level): the host applies them itself — HTTP limits, per-IP and
   * service-wide admission, CORS, the drain — at start and on every reload. @default false
   */
  extendsBase?: boolean
  /**
   * Coalesce reloads: a reload called while another one is still waiting its turn merges its
   * partial into the waiting one (objects merge, arrays replace) and shares its outcome, so a
   * burst of SIGHUPs validates and applies once. @default false (each reload runs on its own)
   */
  coalesce?: boolean
}

/** A reload hook: applies the new snapshot (read it from `host.config`); throw to roll back. */
export type ReloadHook = (partial: unknown) => void | Promise<void>

/** Pending reloads beyond this are refused with Busy (SPEC.md 3.2: cfg reload queue 16). */
const RELOAD_QUEUE = 16

/** Metric names of the reload path. */
export const RELOAD_METRICS = {
  reloads: 'config_reloads_total',
  errors: 'config_reload_errors_total',
  duration: 'config_reload_duration_seconds',
} as const

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v)
    for (const x of Object.values(v)) deepFreeze(x)
  }
  return v
}

function valueAt(v: unknown, path: readonly string[]): unknown {
  let cur = v
  for (const k of path) {
    if (!isPlainObject(cur)) return undefined
    cur = cur[k]
  }
  return cur
}

/** The previous values at every leaf path `partial` touches: re-applying it undoes `partial`. */
function inverseOf(partial: unknown, previous: unknown, path: string[] = []): unknown {
  if (!isPlainObject(partial)) return valueAt(previous, path)
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(partial)) out[k] = inverseOf(partial[k], previous, [...path, k])
  return out
}

/** Serialised config reloads of one service. @internal */
export class ConfigReloader<C> {
  readonly config: Watch<C>
  readonly #hooks: ReloadHook[] = []
  readonly #schema: z.ZodType<C> | undefined
  readonly #immutable: readonly string[][]
  readonly #coalesce: boolean
  /** The reload waiting its turn that later calls merge into (with `coalesce`). */
  #waiting: { partial: unknown; promise: Promise<void> } | undefined
  #input: unknown
  #tail: Promise<void> = Promise.resolve()
  #pending = 0
  #closed = false

  constructor(
    options: ReloadableConfig<C> | undefined,
    private readonly env: { clock: Clock; metrics: MetricsSink; logger: Logger; service: string },
  ) {
    this.#schema = options?.schema
    this.#input = options?.input ?? {}
    this.#immutable = (options?.immutable ?? []).map((p) => p.split('.'))
    this.#coalesce = options?.coalesce === true
    const initial = this.#schema === undefined ? (this.#input as C) : validateConfig(this.#schema, this.#input)
    this.config = new Watch<C>(deepFreeze(initial))
    // Registered at startup: a fresh /metrics shows them at zero.
    env.metrics.inc(RELOAD_METRICS.reloads, undefined, 0)
    env.metrics.inc(RELOAD_METRICS.errors, undefined, 0)
  }

  onReload(fn: ReloadHook): void {
    this.#hooks.push(fn)
  }

  /** Queues a reload behind the ones in progress (or merges it into the waiting one, with `coalesce`). */
  reload(partial: unknown): Promise<void> {
    if (this.#closed) return Promise.reject(new ClosedError(`service ${this.env.service} is closed`))
    const waiting = this.#waiting
    if (waiting !== undefined && isPlainObject(partial) && isPlainObject(waiting.partial)) {
      waiting.partial = merge(waiting.partial, partial)
      return waiting.promise
    }
    if (this.#pending >= RELOAD_QUEUE) {
      this.env.metrics.inc(RELOAD_METRICS.errors)
      return Promise.reject(new BusyError('too many config reloads pending', { details: { queue: 'cfg_reload' }, retryAfterMs: 1000 }))
    }
    this.#pending++
    const entry: { partial: unknown; promise: Promise<void> } = { partial, promise: Promise.resolve() }
    const run = this.#tail.then(() => {
      if (this.#waiting === entry) this.#waiting = undefined
      return this.#reload(entry.partial)
    })
    this.#tail = run.then(
      () => undefined,
      () => undefined,
    )
    entry.promise = run.finally(() => {
      this.#pending--
    })
    if (this.#coalesce) this.#waiting = entry
    return entry.promise
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.config.close()
  }

  async #reload(partial: unknown): Promise<void> {
    const started = this.env.clock.now()
    try {
      await this.#apply(partial)
      this.env.metrics.inc(RELOAD_METRICS.reloads)
      this.env.logger.info({ keys: isPlainObject(partial) ? Object.keys(partial) : [] }, 'config reloaded')
    } catch (e) {
      this.env.metrics.inc(RELOAD_METRICS.errors)
      this.env.logger.warn({ err: e }, 'config reload refused or rolled back')
      throw e
    } finally {
      this.env.metrics.observe(RELOAD_METRICS.duration, undefined, Math.max(0, this.env.clock.now() - started) / 1000)
    }
  }

  async #apply(partial: unknown): Promise<void> {
    if (this.#closed) throw new ClosedError(`service ${this.env.service} is closed`)
    if (!isPlainObject(partial)) {
      throw new ConfigError('a reload takes an object of the config keys to change', { details: { path: '', reason: 'not_object' } })
    }
    const previous = this.config.get()
    const input = merge(this.#input, partial)
    const next = this.#schema === undefined ? (input as C) : validateConfig(this.#schema, input)
    for (const path of this.#immutable) {
      if (!isDeepStrictEqual(valueAt(next, path), valueAt(previous, path))) {
        const dotted = path.join('.')
        throw new ConfigError(`${dotted} cannot change while the service runs; restart to change it`, {
          details: { path: dotted, reason: 'immutable' },
        })
      }
    }
    this.config.set(deepFreeze(next))
    const applied: ReloadHook[] = []
    try {
      for (const fn of this.#hooks) {
        applied.push(fn)
        await fn(partial)
      }
    } catch (e) {
      // Roll back whole: the previous snapshot, then every hook that ran (the failed one too, it
      // may have applied part of the change) gets the previous values of the keys it was given.
      this.config.set(previous)
      const undo = inverseOf(partial, previous)
      for (const fn of applied.reverse()) {
        try {
          await fn(undo)
        } catch (rollbackError) {
          this.env.logger.error({ err: rollbackError }, 'config reload rollback hook failed')
        }
      }
      throw toRonError(e)
    }
    this.#input = input
  }
}
