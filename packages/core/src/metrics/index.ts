/**
 * Per-service Prometheus metrics, the kit's {@link MetricsSink} backed by them, and merging of
 * several services' expositions into one.
 *
 * @module
 */

export { createServiceMetrics, SEED_METRICS, DEFAULT_HTTP_BUCKETS } from './service-metrics.js'
export type { ServiceMetrics, ServiceMetricsOptions } from './service-metrics.js'
export { METRICS_CONTENT_TYPE, mergeExpositions } from './merge.js'
export { metricSamples, metricValue } from './exposition.js'
export type { MetricSample } from './exposition.js'
