import type { Labels, MetricsSink } from '@ron/core'

/** A MetricsSink that remembers everything, for assertions. */
export class RecordingMetrics implements MetricsSink {
  readonly counters = new Map<string, number>()
  readonly gauges = new Map<string, number>()
  readonly gaugeHistory: { key: string; value: number }[] = []

  static key(name: string, labels?: Labels): string {
    const l = labels ? Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(',') : ''
    return `${name}{${l}}`
  }

  inc(name: string, labels?: Labels, by = 1): void {
    const k = RecordingMetrics.key(name, labels)
    this.counters.set(k, (this.counters.get(k) ?? 0) + by)
  }

  set(name: string, labels: Labels | undefined, value: number): void {
    const k = RecordingMetrics.key(name, labels)
    this.gauges.set(k, value)
    this.gaugeHistory.push({ key: k, value })
  }

  observe(): void {}

  counter(name: string, labels?: Labels): number {
    return this.counters.get(RecordingMetrics.key(name, labels)) ?? 0
  }

  gauge(name: string, labels?: Labels): number | undefined {
    return this.gauges.get(RecordingMetrics.key(name, labels))
  }
}
