/**
 * prom-client's metric and registry classes, loaded from their own modules. prom-client's index
 * also loads the summary (t-digest), the push gateway, the cluster aggregator and the default
 * process metrics with `@opentelemetry/api` — about 90 files that every service start paid for
 * (~80 ms of CPU on a loaded 2-core box) while a service uses four classes. The classes are the
 * same objects the index exports (one module cache), so `instanceof` holds across both.
 *
 * @module
 */

import { createRequire } from 'node:module'
import type * as PromClient from 'prom-client'

const requireLib = createRequire(import.meta.url)

/** prom-client's `Registry`. @internal */
export const Registry = requireLib('prom-client/lib/registry') as typeof PromClient.Registry
/** prom-client's `Registry`. @internal */
export type Registry = PromClient.Registry
/** prom-client's `Counter`. @internal */
export const Counter = requireLib('prom-client/lib/counter') as typeof PromClient.Counter
/** prom-client's `Counter`. @internal */
export type Counter<T extends string = string> = PromClient.Counter<T>
/** prom-client's `Gauge`. @internal */
export const Gauge = requireLib('prom-client/lib/gauge') as typeof PromClient.Gauge
/** prom-client's `Gauge`. @internal */
export type Gauge<T extends string = string> = PromClient.Gauge<T>
/** prom-client's `Histogram`. @internal */
export const Histogram = requireLib('prom-client/lib/histogram') as typeof PromClient.Histogram
/** prom-client's `Histogram`. @internal */
export type Histogram<T extends string = string> = PromClient.Histogram<T>

/** prom-client's `collectDefaultMetrics`, loaded on first use (it pulls in `@opentelemetry/api`). @internal */
export function collectDefaultMetrics(config: PromClient.DefaultMetricsCollectorConfiguration<PromClient.RegistryContentType>): void {
  ;(requireLib('prom-client/lib/defaultMetrics') as typeof PromClient.collectDefaultMetrics)(config)
}
