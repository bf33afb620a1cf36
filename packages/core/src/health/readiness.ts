/**
 * Readiness and liveness of a service (SPEC.md sections 3.3 and 4): named dependencies gate reads,
 * writes or both; shutdown turns writes unready first, then reads; `/healthz` and `/readyz` replies
 * are built here so every service answers them the same way.
 *
 * @module
 */

import type { Reply } from '../http/types.js'
import type { HealthReport } from './report.js'

/** What a dependency gates when it is not ready. */
export type Gate = 'read' | 'write' | 'both'

/**
 * What a dependency's `check` returns: `true` when it is ready, else the reason it is not
 * (shown in the report's `reason`, e.g. `'closed'`, `'no_keys'`, `'stale'`).
 */
export type DependencyCheck = () => true | string

/** A named dependency of a service (a disk, a peer set, a key set...). */
export interface DependencySpec {
  name: string
  /** What the dependency gates when it is down. @default 'both' */
  gates?: Gate
  /** Initial state, for a dependency reported with `set()`. @default false (a dependency must report ready once before the service is) */
  ok?: boolean
  /**
   * Computes the dependency's state whenever readiness is reported (`health()`, `/readyz`)
   * instead of waiting for `set()`: the store is open, the key set is loaded, the feed is fresh.
   * Must be cheap and must not throw (a throw counts as not ready, reason `check_failed`).
   */
  check?: DependencyCheck
}

/**
 * A named path of a service (SPEC.md 3.3a): the dependencies it needs, and when a drain sheds
 * it. Its readiness is derived: ready while every dependency in `needs` is ready and the drain has
 * not reached its stage.
 */
export interface PathSpec {
  /**
   * Dependencies (by name) the path needs. An undeclared name counts as not ready. Paths shed
   * with the writes also need the host's `revocations` dependency while it is declared.
   * @default []
   */
  needs?: readonly string[]
  /**
   * When a drain sheds the path: `'writes'` at the start of the drain, `'reads'` when the read
   * window ends. Routes serving a `'writes'` path are refused with 503 `Draining` during the window.
   */
  shed: 'writes' | 'reads'
}

/** Liveness as the supervisor reports it. */
export interface Liveness {
  live: boolean
  reason?: string
}

/** Options of {@link Readiness}. */
export interface ReadinessOptions {
  /** Dependencies known from the start. @default [] */
  dependencies?: DependencySpec[]
  /** Where liveness comes from when `report()` is called without it. @default always live */
  liveness?: () => Liveness
  /** `Retry-After` hint on 503 replies, in ms. @default 1000 */
  retryAfterMs?: number
}

interface PathState {
  ready: boolean
  reason: string | undefined
}

interface DepState {
  gates: Gate
  ok: boolean
  reason: string | undefined
  check: DependencyCheck | undefined
}

/** The name of the host's revocation-feed dependency (write-gating; SPEC.md 5). */
export const REVOCATIONS_DEPENDENCY = 'revocations'

/**
 * Tracks named dependencies and the shutdown phase, and turns them into a {@link HealthReport}.
 * `ready` (reads) requires liveness, every read-gating dependency, and not draining everything;
 * `writeReady` additionally requires every write-gating dependency and not draining writes.
 *
 * @example
 * ```ts
 * const r = new Readiness({ dependencies: [{ name: 'disk', gates: 'write' }] })
 * r.set('disk', true)
 * r.report({ live: true }) // { live: true, ready: true, writeReady: true, paths: {}, missing: [] }
 * r.draining('writes')     // writeReady false, reads still served
 * ```
 */
export class Readiness {
  readonly #deps = new Map<string, DepState>()
  readonly #paths = new Map<string, PathState>()
  readonly #declaredPaths = new Map<string, PathSpec>()
  readonly #liveness: () => Liveness
  readonly #retryAfterMs: number
  #phase: 'running' | 'writes' | 'all' = 'running'

  constructor(options: ReadinessOptions = {}) {
    this.#liveness = options.liveness ?? (() => ({ live: true }))
    this.#retryAfterMs = options.retryAfterMs ?? 1000
    for (const d of options.dependencies ?? []) this.dependency(d)
  }

  /** Declares (or re-declares) a dependency. */
  declare(name: string, gates: Gate = 'both', ok = false): void {
    this.#deps.set(name, { gates, ok, reason: undefined, check: undefined })
  }

  /**
   * Declares (or re-declares) a dependency from its spec; with `check` its state is computed at
   * every report rather than pushed with `set()`.
   *
   * @example
   * ```ts
   * readiness.dependency({ name: 'store', gates: 'both', check: () => (store.closed ? 'closed' : true) })
   * ```
   */
  dependency(spec: DependencySpec): void {
    this.#deps.set(spec.name, { gates: spec.gates ?? 'both', ok: spec.ok ?? false, reason: undefined, check: spec.check })
  }

  /**
   * Declares a path whose readiness is derived from the dependencies it `needs` and the drain
   * phase (SPEC.md 3.3a). `setPath(name, false, reason)` can still turn it off on top (a
   * brownout); `setPath(name, true)` clears that.
   *
   * @example
   * ```ts
   * readiness.declarePath('put', { needs: ['store', 'disk'], shed: 'writes' })
   * readiness.declarePath('get', { needs: ['store'], shed: 'reads' })
   * ```
   */
  declarePath(name: string, spec: PathSpec): void {
    this.#declaredPaths.set(name, { needs: [...(spec.needs ?? [])], shed: spec.shed })
    if (!this.#paths.has(name)) this.#paths.set(name, { ready: true, reason: undefined })
  }

  /** The drain stage of a declared path; `undefined` for a path not declared with {@link Readiness.declarePath}. */
  shedStage(path: string): 'writes' | 'reads' | undefined {
    return this.#declaredPaths.get(path)?.shed
  }

  /**
   * Reports a dependency's state. An undeclared name is declared gating `both`.
   * @param reason why it is not ready (shown in the report's `reason`)
   */
  set(name: string, ok: boolean, reason?: string): void {
    const d = this.#deps.get(name)
    if (d === undefined) {
      this.#deps.set(name, { gates: 'both', ok, reason: ok ? undefined : reason, check: undefined })
      return
    }
    d.ok = ok
    d.reason = ok ? undefined : reason
  }

  /**
   * Reports whether the named path (`issue`, `verify`, `webhooks`…) accepts work (SPEC.md 3.3a).
   * Paths are reported in `health().paths` and `/readyz`; an unready path adds its `reason` (or
   * its name) to `missing`. Paths do not change `ready`/`writeReady`: those stay the service's
   * overall read and write readiness. Once reads drain (`draining('all')`) every path reports false.
   *
   * @example
   * ```ts
   * readiness.setPath('issue', false, 'kms_slow') // shed issuance, keep verification
   * readiness.setPath('verify', true)
   * ```
   */
  setPath(name: string, ready: boolean, reason?: string): void {
    this.#paths.set(name, { ready, reason: ready ? undefined : reason })
  }

  /**
   * Enters a shutdown phase: `'writes'` turns writes unready, `'all'` turns reads unready too.
   * Phases only move forward.
   */
  draining(phase: 'writes' | 'all'): void {
    if (this.#phase === 'all') return
    this.#phase = phase
  }

  /** The current shutdown phase. */
  get phase(): 'running' | 'writes' | 'all' {
    return this.#phase
  }

  /** Builds the health report; `live` defaults to the liveness source given at construction. */
  report(live: Liveness = this.#liveness()): HealthReport {
    const missing: string[] = []
    const reasons: string[] = []
    let readOk = live.live && this.#phase !== 'all'
    let writeOk = readOk && this.#phase === 'running'
    for (const [name, d] of this.#deps) {
      if (d.check !== undefined) evaluate(d)
      if (d.ok) continue
      missing.push(name)
      if (d.reason !== undefined) reasons.push(`${name}: ${d.reason}`)
      if (d.gates !== 'write') readOk = false
      if (d.gates !== 'read') writeOk = false
    }
    const paths: Record<string, boolean> = {}
    for (const [name, p] of this.#paths) {
      const spec = this.#declaredPaths.get(name)
      let needsOk = true
      if (spec !== undefined) {
        for (const dep of spec.needs ?? []) {
          const d = this.#deps.get(dep)
          if (d !== undefined && d.ok) continue
          needsOk = false
          if (!missing.includes(dep)) missing.push(dep)
        }
        const rev = this.#deps.get(REVOCATIONS_DEPENDENCY)
        if (spec.shed === 'writes' && rev !== undefined && !rev.ok) needsOk = false
      }
      const shed = this.#phase === 'all' || (this.#phase === 'writes' && spec?.shed === 'writes')
      paths[name] = p.ready && needsOk && !shed
      if (p.ready) continue
      const why = p.reason ?? name
      if (!missing.includes(why)) missing.push(why)
      reasons.push(`${name}: ${why}`)
    }
    if (this.#phase !== 'running') missing.push('draining')
    if (!readOk) writeOk = false
    const reason = live.live ? (reasons.length > 0 ? reasons.join('; ') : undefined) : live.reason
    const report: HealthReport = { live: live.live, ready: readOk, writeReady: writeOk, paths, missing }
    if (reason !== undefined) report.reason = reason
    return report
  }

  /** The `/readyz` reply: 200 `{"ready":true,...}` or 503 `{"ready":false,"writeReady":false,"missing":[...]}` with `Retry-After`. */
  readyzReply(live?: Liveness): Reply {
    const r = this.report(live)
    if (r.ready) return { status: 200, json: r }
    return { status: 503, headers: { 'retry-after': retryAfterSeconds(this.#retryAfterMs) }, json: r }
  }

  /** The `/healthz` reply: 200 `{"live":true}` or 503 `{"live":false,"reason":...}` with `Retry-After`. */
  healthzReply(live: Liveness = this.#liveness()): Reply {
    if (live.live) return { status: 200, json: { live: true } }
    return {
      status: 503,
      headers: { 'retry-after': retryAfterSeconds(this.#retryAfterMs) },
      json: { live: false, reason: live.reason ?? 'not live' },
    }
  }
}

function evaluate(d: DepState): void {
  let r: true | string
  try {
    r = d.check!()
  } catch {
    r = 'check_failed'
  }
  d.ok = r === true
  d.reason = r === true ? undefined : r
}

function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)))
}
