/**
 * One metrics declaration per service: a typed table of the service's own metric families, plus
 * the label values of the SPEC/seed families (SPEC.md 4) that must show at zero from startup.
 * `host.metrics.register(declaration)` registers all of it when the service starts and returns
 * typed prom-client handles; the package README lists the same names (the conformance suite
 * checks both ways).
 *
 * Names: where SPEC.md names a metric or a label it wins (`rejected_total{reason}`,
 * `bus_lagged_total{topic}`, `busy_rejections_total{endpoint,queue}`, the `config_reload*`
 * family); the seed names the rest. SPEC/seed families are created by core: a service
 * declares only their label values (`seed`), never their type or help.
 *
 * @module
 */

import type { Counter, Gauge, Histogram } from 'prom-client'
import { RonUsageError } from '../errors.js'
import { CORE_METRIC_NAMES, SEED_METRICS } from './service-metrics.js'

/** Kind of a metric family. */
export type MetricType = 'counter' | 'gauge' | 'histogram'

/**
 * Label values whose series exist from startup, at zero: either value lists per label (their
 * cartesian product is registered) or an explicit list of label sets.
 */
export type ZeroSeries<L extends string = string> = { readonly [K in L]?: readonly string[] } | readonly Readonly<Record<L, string>>[]

/** One metric family of a service. */
export interface MetricSpec<L extends string = string> {
  type: MetricType
  /** One line for `# HELP`. */
  help: string
  /** Label names (besides the constant `service`). @default [] */
  labels?: readonly L[]
  /** Series registered at zero at startup. A family without labels always has its one series. @default none */
  zero?: ZeroSeries<L>
  /** Histogram buckets. @default the service's HTTP buckets */
  buckets?: readonly number[]
}

/** A table of metric families by name. */
export type MetricsTable = Readonly<Record<string, MetricSpec>>

type LabelOf<S> = S extends { labels: readonly (infer L)[] } ? (L extends string ? L : never) : never

/** The prom-client handle of a declared family. */
export type MetricHandle<S extends MetricSpec> = S['type'] extends 'counter' ? Counter<LabelOf<S>> : S['type'] extends 'gauge' ? Gauge<LabelOf<S>> : Histogram<LabelOf<S>>

/** Typed handles of a declared table, by name. */
export type MetricHandles<T extends MetricsTable> = { readonly [K in keyof T]: MetricHandle<T[K]> }

/** Zero series of the SPEC/seed families core creates (`queue_depth`, `busy_rejections_total`, `io_timeouts_total`…), by name. */
export type SeedSeries = Readonly<Record<string, ZeroSeries>>

/** What {@link defineMetrics} returns and `host.metrics.register()` takes. */
export interface MetricsDeclaration<T extends MetricsTable = MetricsTable> {
  /** The service's own families. */
  readonly table: T
  /** Zero series of core's SPEC/seed families. */
  readonly seed: SeedSeries
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/

/**
 * Declares a service's metrics. Checked at once: names and label names must be valid Prometheus
 * names, zero series may name only declared labels, and a service's own family may not reuse a
 * name core defines (`reserved`: the SPEC/seed families and the HTTP metrics).
 *
 * @throws {@link RonUsageError} `RON_INVALID_OPTION` for an invalid declaration.
 * @example
 * ```ts
 * export const STORAGE_METRICS = defineMetrics(
 *   {
 *     integrity_failures_total: { type: 'counter', help: 'Reads that hit a chunk failing verification.' },
 *     work_active: { type: 'gauge', help: 'Reader and writer slots in use.', labels: ['kind'], zero: { kind: ['read', 'write'] } },
 *   },
 *   { io_timeouts_total: { op: ['read', 'write', 'peer'] } },
 * )
 * // in the service: const m = host.metrics.register(STORAGE_METRICS); m.work_active.inc({ kind: 'read' })
 * ```
 */
export function defineMetrics<const T extends MetricsTable>(table: T, seed: SeedSeries = {}): MetricsDeclaration<T> {
  for (const [name, spec] of Object.entries(table)) {
    if (!NAME.test(name)) bad(`metric name '${name}' is not a valid Prometheus name`)
    if (CORE_METRIC_NAMES.has(name)) bad(`metric '${name}' is defined by core (SPEC.md 4): declare its label values under seed instead`)
    if (spec.type !== 'counter' && spec.type !== 'gauge' && spec.type !== 'histogram') bad(`metric '${name}': type must be counter, gauge or histogram`)
    if (typeof spec.help !== 'string' || spec.help === '') bad(`metric '${name}': help is required`)
    for (const l of spec.labels ?? []) if (!LABEL.test(l) || l === 'service' || l === 'le') bad(`metric '${name}': invalid label name '${l}'`)
    if (spec.zero !== undefined) checkZero(name, spec.labels ?? [], spec.zero)
  }
  for (const [name, zero] of Object.entries(seed)) {
    const core = SEED_METRICS[name]
    if (core === undefined) bad(`seed lists '${name}', which is not a SPEC/seed family core defines (declare it in the table)`)
    checkZero(name, core.labels ?? [], zero)
  }
  return Object.freeze({ table, seed })
}

function checkZero(name: string, labels: readonly string[], zero: ZeroSeries): void {
  const known = new Set(labels)
  const sets = Array.isArray(zero) ? (zero as readonly Record<string, string>[]) : [zero as Record<string, unknown>]
  for (const s of sets) for (const k of Object.keys(s)) if (!known.has(k)) bad(`metric '${name}': zero series names label '${k}' it does not declare`)
}

function bad(message: string): never {
  throw new RonUsageError('RON_INVALID_OPTION', `defineMetrics: ${message}`)
}
