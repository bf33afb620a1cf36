/**
 * The narrow interface through which core primitives report metrics. Primitives never import
 * prom-client: they take an optional {@link MetricsSink}, and the service layer supplies one
 * backed by the service's own registry. Metric names are the seeds' names (SPEC.md section 4),
 * e.g. `queue_depth`, `queue_dropped_total`, `busy_rejections_total`, `tasks_spawned_total`,
 * `tasks_aborted_total`, `tasks_panicked_total`, `tasks_canceled_total`, `bus_lagged_total`,
 * `io_timeouts_total`, `backoff_retries_total`, `breaker_state`.
 *
 * @module
 */

/** Label set of a metric sample. */
export type Labels = Readonly<Record<string, string>>

/** Where primitives report counters, gauges and observations. */
export interface MetricsSink {
  /** Adds `by` (default 1) to the counter `name`. */
  inc(name: string, labels?: Labels, by?: number): void
  /** Sets the gauge `name`. */
  set(name: string, labels: Labels | undefined, value: number): void
  /** Records one observation (seconds for durations) in the histogram `name`. */
  observe(name: string, labels: Labels | undefined, value: number): void
}

/** A sink that discards everything; the default for primitives used standalone. */
export const noopMetrics: MetricsSink = {
  inc() {},
  set() {},
  observe() {},
}
