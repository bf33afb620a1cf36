/**
 * Per-service Prometheus metrics, the kit's {@link MetricsSink} backed by them, and merging of
 * several services' registries into one exposition.
 *
 * @module
 */

export * from './service-metrics.js'
export * from './merge.js'
