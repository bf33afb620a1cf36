/**
 * A per-instance Prometheus registry for one service (never prom-client's global registry), the
 * {@link MetricsSink} the core primitives report through, and the HTTP request metrics.
 *
 * @module
 */

import { Counter, Gauge, Histogram, Registry } from './prom.js'
import type { Labels, MetricsSink } from '../metrics-sink.js'
import { RonUsageError } from '../errors.js'
import type { MetricHandles, MetricsDeclaration, MetricsTable, ZeroSeries } from './define.js'

/** Help text of the seed metrics (SPEC.md section 4). They are created on first use. */
export const SEED_METRICS: Readonly<
  Record<string, { type: 'counter' | 'gauge' | 'histogram'; help: string; labels?: readonly string[] }>
> = {
  queue_depth: { type: 'gauge', help: 'Items waiting in a bounded queue.', labels: ['queue'] },
  queue_dropped_total: { type: 'counter', help: 'Items evicted from drop-oldest queues.', labels: ['queue'] },
  // The seeds label Busy by `endpoint` (admission, routes) and by `queue` (bounded queues): both
  // labels are fixed up front so neither reporter's samples lose theirs.
  busy_rejections_total: {
    type: 'counter',
    help: 'Requests answered 429 Busy (a full queue, a rate or concurrency limit).',
    labels: ['endpoint', 'queue'],
  },
  tasks_spawned_total: { type: 'counter', help: 'Supervised tasks started (including restarts).', labels: ['kind'] },
  tasks_aborted_total: { type: 'counter', help: 'Tasks still running at the shutdown deadline and aborted.', labels: ['kind'] },
  tasks_panicked_total: { type: 'counter', help: 'Supervised tasks that failed with an error.', labels: ['kind'] },
  tasks_canceled_total: { type: 'counter', help: 'Supervised tasks that ended because their signal aborted.', labels: ['kind'] },
  io_timeouts_total: { type: 'counter', help: 'Operations that exceeded their deadline.', labels: ['op'] },
  bus_lagged_total: { type: 'counter', help: 'Broadcast events a slow subscriber missed.', labels: ['topic'] },
  backoff_retries_total: { type: 'counter', help: 'Retries of idempotent operations, by operation.', labels: ['op'] },
  config_reloads_total: { type: 'counter', help: 'Config reloads applied.' },
  config_reload_errors_total: { type: 'counter', help: 'Config reloads refused (invalid, immutable key, busy) or rolled back.' },
  sse_clients: { type: 'gauge', help: 'Connected server-sent-events clients per stream.', labels: ['stream'] },
  breaker_state: { type: 'gauge', help: 'Circuit breaker state by target: 0 closed, 1 open, 2 half-open.', labels: ['target'] },
}

/** Every family core itself defines in a service's registry (the SPEC/seed ones, the reload and HTTP metrics). */
export const CORE_METRIC_NAMES: ReadonlySet<string> = new Set([
  ...Object.keys(SEED_METRICS),
  'config_reload_duration_seconds',
  'http_requests_total',
  'http_request_duration_seconds',
])

/**
 * The label sets of a {@link ZeroSeries}: the cartesian product of the value lists, or the
 * explicit list. @internal
 */
export function expandZero(zero: ZeroSeries): Record<string, string>[] {
  if (Array.isArray(zero)) return (zero as readonly Record<string, string>[]).map((s) => ({ ...s }))
  let out: Record<string, string>[] = [{}]
  for (const [label, values] of Object.entries(zero as Record<string, readonly string[] | undefined>)) {
    if (values === undefined) continue
    out = out.flatMap((base) => values.map((v) => ({ ...base, [label]: v })))
  }
  return out
}

/** Default buckets of `http_request_duration_seconds`, in seconds. */
export const DEFAULT_HTTP_BUCKETS: readonly number[] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** Options of {@link createServiceMetrics}. */
export interface ServiceMetricsOptions {
  /** The constant `service` label on every sample. */
  service: string
  /** Buckets of histograms (HTTP latency and sink-created ones). @default {@link DEFAULT_HTTP_BUCKETS} */
  buckets?: readonly number[]
  /** A second sink that also receives everything reported through `sink` (a runtime's metrics sink). @default none */
  also?: MetricsSink
}

/** One service's metrics. */
export interface ServiceMetrics {
  /** This instance's own registry, with the default label `{service}`. */
  readonly registry: Registry
  /** Sink for the core primitives: creates metrics by name on first use. Never throws. */
  readonly sink: MetricsSink
  /** A service-specific counter (returns the existing one if already registered under `name`). */
  counter<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>
  /** A service-specific gauge (returns the existing one if already registered under `name`). */
  gauge<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Gauge<L>
  /** A service-specific histogram (returns the existing one if already registered under `name`). */
  histogram<L extends string = string>(name: string, help: string, labelNames?: readonly L[], buckets?: readonly number[]): Histogram<L>
  /**
   * Registers a {@link MetricsDeclaration} (from `defineMetrics`): the service's own families and
   * every zero series, own and SPEC/seed. Call it once at startup; returns typed handles.
   * @throws {@link RonUsageError} `RON_INVALID_OPTION` when a family is already registered with another type or labels
   */
  register<T extends MetricsTable>(declaration: MetricsDeclaration<T>): MetricHandles<T>
  /**
   * Makes the series `labels` of a registered family exist at zero (a fresh `/metrics` shows
   * it). Missing labels are empty. Unknown families are ignored.
   */
  zero(name: string, labels?: Record<string, string>): void
  /** Counts one HTTP request and records its duration; hot path, label children are cached. */
  observeHttp(route: string, method: string, status: number, seconds: number): void
  /**
   * {@link ServiceMetrics.observeHttp} bound to one route, for a caller that resolves it once per
   * route: it skips the route's lookups and remembers the method and status it saw last.
   */
  httpObserver(route: string): HttpObserver
  /** The Prometheus text exposition of this registry. */
  text(): Promise<string>
}

/** Counts one request of a bound route and records its duration (see {@link ServiceMetrics.httpObserver}). */
export type HttpObserver = (method: string, status: number, seconds: number) => void

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>

interface SinkEntry {
  metric: AnyMetric
  labelNames: readonly string[]
  /**
   * Counters and gauges the sink created itself keep their values here, by label values, and
   * hand them to prom-client when the registry is scraped (their `collect`): prom-client
   * validates and hashes the label object on every inc/set, and a bounded queue sets its depth
   * gauge on every send and receive.
   */
  tally?: Map<string, { labels: Record<string, string>; value: number }>
}

/**
 * Creates a service's metrics: a fresh prom-client {@link Registry} with the default label
 * `{service}`, a {@link MetricsSink} for the kit, and the HTTP metrics
 * `http_requests_total{route,method,status}` and `http_request_duration_seconds{route}`.
 *
 * @example
 * ```ts
 * const m = createServiceMetrics({ service: 'storage' })
 * const queue = new BoundedQueue({ name: 'work', capacity: 512, metrics: m.sink })
 * m.observeHttp('/o/:addr', 'GET', 200, 0.004)
 * const text = await m.text()
 * ```
 */
export function createServiceMetrics(options: ServiceMetricsOptions): ServiceMetrics {
  const registry = new Registry()
  registry.setDefaultLabels({ service: options.service })
  const buckets = [...(options.buckets ?? DEFAULT_HTTP_BUCKETS)]
  const sinkEntries = new Map<string, SinkEntry>()

  const existing = <M>(name: string): M | undefined => registry.getSingleMetric(name) as M | undefined

  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
    existing<Counter<L>>(name) ?? new Counter<L>({ name, help, labelNames: [...labelNames], registers: [registry] })
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> =>
    existing<Gauge<L>>(name) ?? new Gauge<L>({ name, help, labelNames: [...labelNames], registers: [registry] })
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[] = [], b?: readonly number[]): Histogram<L> =>
    existing<Histogram<L>>(name) ??
    new Histogram<L>({ name, help, labelNames: [...labelNames], buckets: [...(b ?? buckets)], registers: [registry] })

  // Every seed metric exists from the start, so a fresh /metrics lists each family (SPEC.md 4).
  for (const name of Object.keys(SEED_METRICS)) entry(name, SEED_METRICS[name]!.type, undefined)

  // The two per-request metrics are plain tallies read at scrape time (HttpTallies): a labelled
  // prom-client child re-validates and hashes its label object on every inc/observe, 2–3% of a
  // small route's CPU.
  const http = new HttpTallies(buckets)
  registry.registerMetric(http.requestsMetric() as unknown as Counter<string>)
  registry.registerMetric(http.durationMetric() as unknown as Histogram<string>)

  function entry(name: string, type: 'counter' | 'gauge' | 'histogram', labels: Labels | undefined): SinkEntry | undefined {
    let e = sinkEntries.get(name)
    if (e !== undefined) return e
    const labelNames = SEED_METRICS[name]?.labels ?? (labels === undefined ? [] : Object.keys(labels).sort())
    const help = SEED_METRICS[name]?.help ?? `${name} (reported by a core primitive)`
    try {
      if (type !== 'histogram' && registry.getSingleMetric(name) === undefined) {
        const tally: NonNullable<SinkEntry['tally']> = new Map()
        const metric =
          type === 'counter'
            ? new Counter({
                name,
                help,
                labelNames: [...labelNames],
                registers: [registry],
                collect() {
                  // inc by 0 too: a series registered at zero shows in the exposition.
                  for (const t of tally.values()) {
                    this.inc(t.labels, t.value)
                    t.value = 0
                  }
                },
              })
            : new Gauge({
                name,
                help,
                labelNames: [...labelNames],
                registers: [registry],
                collect() {
                  for (const t of tally.values()) this.set(t.labels, t.value)
                },
              })
        e = { metric, labelNames, tally }
      } else {
        const metric =
          type === 'counter' ? counter(name, help, labelNames) : type === 'gauge' ? gauge(name, help, labelNames) : histogram(name, help, labelNames)
        e = { metric, labelNames: (metric as unknown as { labelNames?: string[] }).labelNames ?? labelNames }
      }
    } catch {
      // Invalid name or a clash with a metric of another type: report nothing rather than break the caller.
      return undefined
    }
    sinkEntries.set(name, e)
    return e
  }

  // Conform labels to the metric's label names: extra labels are dropped, missing ones are empty,
  // so a primitive reporting a slightly different label set never throws on a hot path.
  function conform(e: SinkEntry, labels: Labels | undefined): Record<string, string> {
    const out: Record<string, string> = {}
    for (const n of e.labelNames) out[n] = labels?.[n] ?? ''
    return out
  }

  // The tally slot of `labels` (conformed to the metric's label names) in a sink-created metric.
  function slot(e: SinkEntry, tally: NonNullable<SinkEntry['tally']>, labels: Labels | undefined): { labels: Record<string, string>; value: number } {
    let key = ''
    for (const n of e.labelNames) key += `${labels?.[n] ?? ''}\u0001`
    let t = tally.get(key)
    if (t === undefined) {
      t = { labels: conform(e, labels), value: 0 }
      tally.set(key, t)
    }
    return t
  }

  const own: MetricsSink = {
    inc(name, labels, by = 1) {
      const e = entry(name, 'counter', labels)
      if (e === undefined || !(e.metric instanceof Counter) || !(by > 0) || !Number.isFinite(by)) return
      if (e.tally !== undefined) slot(e, e.tally, labels).value += by
      else e.metric.inc(conform(e, labels), by)
    },
    set(name, labels, value) {
      const e = entry(name, 'gauge', labels)
      if (e === undefined || !(e.metric instanceof Gauge)) return
      if (e.tally !== undefined) slot(e, e.tally, labels).value = value
      else e.metric.set(conform(e, labels), value)
    },
    observe(name, labels, value) {
      const e = entry(name, 'histogram', labels)
      if (e === undefined || !(e.metric instanceof Histogram)) return
      e.metric.observe(conform(e, labels), value)
    },
  }
  const also = options.also
  const sink: MetricsSink =
    also === undefined
      ? own
      : {
          inc(name, labels, by) {
            own.inc(name, labels, by)
            also.inc(name, labels, by)
          },
          set(name, labels, value) {
            own.set(name, labels, value)
            also.set(name, labels, value)
          },
          observe(name, labels, value) {
            own.observe(name, labels, value)
            also.observe(name, labels, value)
          },
        }

  function zero(name: string, labels: Record<string, string> = {}): void {
    const e = sinkEntries.get(name)
    if (e?.tally !== undefined) {
      slot(e, e.tally, labels)
      return
    }
    const m = registry.getSingleMetric(name)
    if (m === undefined) return
    const full: Record<string, string> = {}
    for (const n of (m as unknown as { labelNames?: readonly string[] }).labelNames ?? []) full[n] = labels[n] ?? ''
    if (m instanceof Counter || m instanceof Gauge) m.inc(full, 0)
    else if (m instanceof Histogram) m.zero(full)
  }

  function register<T extends MetricsTable>(declaration: MetricsDeclaration<T>): MetricHandles<T> {
    const handles: Record<string, AnyMetric> = {}
    for (const [name, spec] of Object.entries(declaration.table)) {
      const labels = spec.labels ?? []
      const prior = registry.getSingleMetric(name)
      if (prior !== undefined) {
        const priorLabels = (prior as unknown as { labelNames?: readonly string[] }).labelNames ?? []
        const sameType = spec.type === 'counter' ? prior instanceof Counter : spec.type === 'gauge' ? prior instanceof Gauge : prior instanceof Histogram
        if (!sameType || priorLabels.join(',') !== labels.join(',')) {
          throw new RonUsageError('RON_INVALID_OPTION', `metric '${name}' is already registered with another type or labels`)
        }
      }
      handles[name] =
        spec.type === 'counter' ? counter(name, spec.help, labels) : spec.type === 'gauge' ? gauge(name, spec.help, labels) : histogram(name, spec.help, labels, spec.buckets)
      if (labels.length === 0) zero(name)
      else if (spec.zero !== undefined) for (const l of expandZero(spec.zero)) zero(name, l)
    }
    for (const [name, z] of Object.entries(declaration.seed)) for (const l of expandZero(z)) zero(name, l)
    return handles as unknown as MetricHandles<T>
  }

  return {
    registry,
    sink,
    counter,
    gauge,
    histogram,
    register,
    zero,
    observeHttp(route, method, status, seconds) {
      http.observe(route, method, status, seconds)
    },
    httpObserver: (route) => http.observer(route),
    text: () => registry.metrics(),
  }
}

interface RequestTally {
  readonly labels: { route: string; method: string; status: string }
  n: number
}

interface DurationTally {
  readonly labels: { route: string }
  /** Per-bucket (not cumulative) counts; the last slot is +Inf. */
  readonly counts: number[]
  sum: number
  count: number
}

/** A metric as prom-client's registry reads it (`get()` → name, help, type, values). */
interface CollectedMetric {
  readonly name: string
  readonly help: string
  readonly type: 'counter' | 'histogram'
  readonly aggregator: 'sum'
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Array<{ labels: Record<string, string | number>; value: number; metricName?: string }> }>
  reset(): void
}

/**
 * `http_requests_total{route,method,status}` and `http_request_duration_seconds{route}` as plain
 * tallies keyed by label strings, turned into samples only when the registry is scraped.
 */
class HttpTallies {
  /**
   * route → method → status → tally. Three lookups of strings V8 has already hashed (route labels
   * and methods are the same string objects on every request) and a small integer, instead of
   * building, flattening and hashing a fresh `${route}\0${method}\0${status}` key per request.
   */
  readonly #requests = new Map<string, Map<string, Map<number, RequestTally>>>()
  readonly #durations = new Map<string, DurationTally>()

  constructor(private readonly bounds: readonly number[]) {}

  /** Bumped by every reset: a bound observer re-resolves the tallies it holds. */
  #generation = 0

  observe(route: string, method: string, status: number, seconds: number): void {
    this.#tally(route, method, status).n++
    this.#time(this.#duration(route), seconds)
  }

  /**
   * {@link observe} for one route: the route's maps are looked up once, and the tally of the
   * method and status seen last is kept, so a route answered the same way each time costs no
   * lookup at all (the method strings of `node:http` are the same objects on every request).
   */
  observer(route: string): (method: string, status: number, seconds: number) => void {
    let generation = -1
    let lastMethod = ''
    let lastStatus = -1
    let last: RequestTally | undefined
    let d: DurationTally | undefined
    return (method, status, seconds) => {
      if (generation !== this.#generation) {
        generation = this.#generation
        last = undefined
        d = undefined
      }
      if (last === undefined || status !== lastStatus || method !== lastMethod) {
        last = this.#tally(route, method, status)
        lastMethod = method
        lastStatus = status
      }
      last.n++
      this.#time((d ??= this.#duration(route)), seconds)
    }
  }

  #tally(route: string, method: string, status: number): RequestTally {
    let byMethod = this.#requests.get(route)
    if (byMethod === undefined) this.#requests.set(route, (byMethod = new Map<string, Map<number, RequestTally>>()))
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map<number, RequestTally>()))
    let r = byStatus.get(status)
    if (r === undefined) {
      r = { labels: { route, method, status: String(status) }, n: 0 }
      byStatus.set(status, r)
    }
    return r
  }

  #duration(route: string): DurationTally {
    let d = this.#durations.get(route)
    if (d === undefined) {
      d = { labels: { route }, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 }
      this.#durations.set(route, d)
    }
    return d
  }

  #time(d: DurationTally, seconds: number): void {
    if (!Number.isFinite(seconds)) return
    let i = 0
    while (i < this.bounds.length && seconds > this.bounds[i]!) i++
    d.counts[i]!++
    d.sum += seconds
    d.count++
  }

  #requestValues(): Array<{ labels: Record<string, string>; value: number }> {
    const out: Array<{ labels: Record<string, string>; value: number }> = []
    for (const byMethod of this.#requests.values()) for (const byStatus of byMethod.values()) for (const r of byStatus.values()) out.push({ labels: r.labels, value: r.n })
    return out
  }

  requestsMetric(): CollectedMetric {
    const name = 'http_requests_total'
    const help = 'HTTP requests by route, method and status.'
    return {
      name,
      help,
      type: 'counter',
      aggregator: 'sum',
      get: () => Promise.resolve({ name, help, type: 'counter', aggregator: 'sum', values: this.#requestValues() }),
      reset: () => {
        this.#requests.clear()
        this.#generation++
      },
    }
  }

  durationMetric(): CollectedMetric {
    const name = 'http_request_duration_seconds'
    const help = 'HTTP request duration in seconds by route.'
    return {
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      get: () => {
        const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = []
        for (const d of this.#durations.values()) {
          let cumulative = 0
          for (let i = 0; i <= this.bounds.length; i++) {
            cumulative += d.counts[i]!
            values.push({ labels: { ...d.labels, le: i < this.bounds.length ? this.bounds[i]! : '+Inf' }, value: cumulative, metricName: `${name}_bucket` })
          }
          values.push({ labels: d.labels, value: d.sum, metricName: `${name}_sum` })
          values.push({ labels: d.labels, value: d.count, metricName: `${name}_count` })
        }
        return Promise.resolve({ name, help, type: 'histogram', aggregator: 'sum', values })
      },
      reset: () => {
        this.#durations.clear()
        this.#generation++
      },
    }
  }
}
