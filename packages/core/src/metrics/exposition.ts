/**
 * Reading sample values back out of a Prometheus text exposition (what `GET /metrics` and
 * `RonService.metricsText()` return), so hosts and tests need no prom-client object.
 *
 * @module
 */

/** One sample line of an exposition: `name{a="b",…} value`. */
export interface MetricSample {
  /** The full sample name (a histogram's `_bucket`, `_sum` and `_count` lines keep their suffix). */
  readonly name: string
  /** The sample's labels, values unescaped. */
  readonly labels: Readonly<Record<string, string>>
  /** The sample value (`NaN`, `+Inf` and `-Inf` parse to their numbers). */
  readonly value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
}

function parseValue(v: string): number {
  if (v === '+Inf' || v === 'Inf') return Number.POSITIVE_INFINITY
  if (v === '-Inf') return Number.NEGATIVE_INFINITY
  return Number(v)
}

/**
 * The samples named exactly `name` in a Prometheus text exposition, in order. Comment lines
 * (`# HELP`, `# TYPE`) and blank lines are skipped; a histogram's series are read by full name
 * (`latency_seconds_bucket`, `latency_seconds_sum`, `latency_seconds_count`).
 *
 * @example
 * ```ts
 * metricSamples('queue_depth{queue="work"} 3\n', 'queue_depth') // [{ name: 'queue_depth', labels: { queue: 'work' }, value: 3 }]
 * ```
 */
export function metricSamples(text: string, name: string): MetricSample[] {
  const out: MetricSample[] = []
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const m = SAMPLE.exec(line)
    if (!m || m[1] !== name) continue
    const labels: Record<string, string> = {}
    if (m[2]) for (const l of m[2].matchAll(LABEL)) labels[l[1]!] = unescape(l[2]!)
    out.push({ name, labels, value: parseValue(m[3]!) })
  }
  return out
}

/**
 * The sum of the samples of `name` whose labels include every one of `labels` (other labels
 * ignored), or `undefined` when no sample matches. With no `labels`, the total over all samples.
 *
 * @example
 * ```ts
 * const text = await service.metricsText()
 * metricValue(text, 'busy_rejections_total', { queue: 'work' }) // e.g. 2
 * metricValue(text, 'http_request_duration_seconds_count')       // requests observed
 * ```
 */
export function metricValue(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  let sum: number | undefined
  for (const s of metricSamples(text, name)) {
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum = (sum ?? 0) + s.value
  }
  return sum
}
