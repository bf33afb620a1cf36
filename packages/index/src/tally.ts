/**
 * Metrics of the resolve hot path kept as plain numbers and turned into samples only when the
 * registry is scraped, as core does for `http_requests_total`: a prom-client child re-validates
 * and hashes its label object on every `inc`/`observe`, about 5 000 instructions per cache hit
 * for `index_cache_hits_total` and `resolve_latency_seconds` together — as much as the rest of the
 * index's part of a hit. Each object is registered in the service's prom-client registry as a
 * collector (`name`, `help`, `get()`), so the exposition is unchanged.
 *
 * @module
 */

/** A sample as prom-client's registry reads it. */
interface Sample {
  labels: Record<string, string | number>
  value: number
  metricName?: string
}

/** What prom-client's registry reads from a collector. */
interface Collected {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  values: Sample[]
}

/** The registry side: what `Registry.registerMetric` and the exposition need. */
interface Collector {
  readonly name: string
  readonly help: string
  get(): Promise<Collected>
  reset(): void
}

/** The part of prom-client's `Registry` the tallies use. */
export interface MetricRegistry {
  registerMetric(metric: never): void
}

/** One series of a {@link TallyCounter}. */
export interface CounterSeries {
  inc(by?: number): void
}

/** One series of a {@link TallyHistogram}. */
export interface HistogramSeries {
  observe(value: number): void
}

/** A counter with one label, series created on first use and shown from then on (at zero too). */
export class TallyCounter implements Collector {
  readonly #series = new Map<string, { labels: Record<string, string>; n: number; inc(by?: number): void }>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
  ) {
    this.labelNames = [label]
  }

  /** Its label names, as a prom-client metric has them (read by the conformance suite). */
  readonly labelNames: readonly string[]

  /** The series of `labels` (its one label's value); keep it, the lookup is the only cost. */
  labels(labels: Record<string, string>): CounterSeries {
    const v = labels[this.label] ?? ''
    let s = this.#series.get(v)
    if (s === undefined) {
      const series = {
        labels: { [this.label]: v },
        n: 0,
        inc(by = 1): void {
          if (by > 0 && Number.isFinite(by)) series.n += by
        },
      }
      this.#series.set(v, series)
      s = series
    }
    return s
  }

  get(): Promise<Collected> {
    const values: Sample[] = []
    for (const s of this.#series.values()) values.push({ labels: s.labels, value: s.n })
    return Promise.resolve({ name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values })
  }

  reset(): void {
    for (const s of this.#series.values()) s.n = 0
  }
}

/** A histogram with one label, series created on first use and shown from then on (at zero too). */
export class TallyHistogram implements Collector {
  readonly #series = new Map<string, { labels: Record<string, string>; counts: number[]; sum: number; count: number; observe(v: number): void }>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly bounds: readonly number[],
  ) {
    this.labelNames = [label]
  }

  /** Its label names, as a prom-client metric has them (read by the conformance suite). */
  readonly labelNames: readonly string[]

  /** The series of `labels` (its one label's value); keep it, the lookup is the only cost. */
  labels(labels: Record<string, string>): HistogramSeries {
    const v = labels[this.label] ?? ''
    let s = this.#series.get(v)
    if (s === undefined) {
      const bounds = this.bounds
      const series = {
        labels: { [this.label]: v },
        // Per-bucket (not cumulative) counts; the last slot is +Inf.
        counts: new Array<number>(bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
        observe(value: number): void {
          if (!Number.isFinite(value)) return
          let i = 0
          while (i < bounds.length && value > bounds[i]!) i++
          series.counts[i]!++
          series.sum += value
          series.count++
        },
      }
      this.#series.set(v, series)
      s = series
    }
    return s
  }

  get(): Promise<Collected> {
    const values: Sample[] = []
    const name = this.name
    for (const s of this.#series.values()) {
      let cumulative = 0
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += s.counts[i]!
        values.push({ labels: { ...s.labels, le: i < this.bounds.length ? this.bounds[i]! : '+Inf' }, value: cumulative, metricName: `${name}_bucket` })
      }
      values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` })
      values.push({ labels: s.labels, value: s.count, metricName: `${name}_count` })
    }
    return Promise.resolve({ name, help: this.help, type: 'histogram', aggregator: 'sum', values })
  }

  reset(): void {
    for (const s of this.#series.values()) {
      s.counts.fill(0)
      s.sum = 0
      s.count = 0
    }
  }
}

/** Registers `collector` in `registry` and returns it. */
export function registered<T extends Collector>(registry: MetricRegistry, collector: T): T {
  registry.registerMetric(collector as never)
  return collector
}
