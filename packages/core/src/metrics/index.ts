/**
 * Per-service Prometheus metrics, the kit's {@link MetricsSink} backed by them, and merging of
 * several services' expositions into one.
 *
 * @module @ron/core/metrics
 */

export { createServiceMetrics, SEED_METRICS, CORE_METRIC_NAMES, DEFAULT_HTTP_BUCKETS } from './service-metrics.js'
export type { HttpObserver, ServiceMetrics, ServiceMetricsOptions } from './service-metrics.js'
export { METRICS_CONTENT_TYPE, mergeExpositions } from './merge.js'
export { metricSamples, metricValue } from './exposition.js'
export type { MetricSample } from './exposition.js'
export { defineMetrics } from './define.js'
export type { MetricType, MetricSpec, MetricsTable, MetricHandle, MetricHandles, MetricsDeclaration, SeedSeries, ZeroSeries } from './define.js'
export { processMetrics } from './process.js'
export type { ProcessMetrics } from './process.js'
