/**
 * Readiness and liveness of a service (SPEC.md sections 3.3 and 4): named dependencies gate reads,
 * writes or both; shutdown turns writes unready first, then reads; `/healthz` and `/readyz` replies
 * are built here so every service answers them the same way.
 *
 * @module
 */

import type { Reply } from '../http/types.js'
import type { HealthReport } from '../service/types.js'

/** What a dependency gates when it is not ready. */
export type Gate = 'read' | 'write' | 'both'

/** A named dependency of a service (a disk, a peer set, a key set...). */
export interface DependencySpec {
  name: string
  /** What the dependency gates when it is down. @default 'both' */
  gates?: Gate
  /** Initial state. @default false (a dependency must report ready once before the service is) */
  ok?: boolean
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
}

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
  readonly #liveness: () => Liveness
  readonly #retryAfterMs: number
  #phase: 'running' | 'writes' | 'all' = 'running'

  constructor(options: ReadinessOptions = {}) {
    this.#liveness = options.liveness ?? (() => ({ live: true }))
    this.#retryAfterMs = options.retryAfterMs ?? 1000
    for (const d of options.dependencies ?? []) this.declare(d.name, d.gates ?? 'both', d.ok ?? false)
  }

  /** Declares (or re-declares) a dependency. */
  declare(name: string, gates: Gate = 'both', ok = false): void {
    this.#deps.set(name, { gates, ok, reason: undefined })
  }

  /**
   * Reports a dependency's state. An undeclared name is declared gating `both`.
   * @param reason why it is not ready (shown in the report's `reason`)
   */
  set(name: string, ok: boolean, reason?: string): void {
    const d = this.#deps.get(name)
    if (d === undefined) {
      this.#deps.set(name, { gates: 'both', ok, reason })
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
      if (d.ok) continue
      missing.push(name)
      if (d.reason !== undefined) reasons.push(`${name}: ${d.reason}`)
      if (d.gates !== 'write') readOk = false
      if (d.gates !== 'read') writeOk = false
    }
    const paths: Record<string, boolean> = {}
    for (const [name, p] of this.#paths) {
      const ready = p.ready && this.#phase !== 'all'
      paths[name] = ready
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

function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)))
}
