/**
 * The process metrics Prometheus users expect from a Node service — prom-client's default set:
 * event-loop lag, heap spaces and size, GC durations, open and max file descriptors, RSS, CPU,
 * handles — once per process. A host that serves several services (ron-node) merges this into its
 * `/metrics` once; services never register them (they would repeat per service).
 *
 * @module
 */

import { Registry, collectDefaultMetrics } from './prom.js'

/** The process metrics of this process. */
export interface ProcessMetrics {
  /** The registry holding them (no `service` label). */
  readonly registry: Registry
  /** Their Prometheus text exposition. */
  text(): Promise<string>
}

let instance: ProcessMetrics | undefined

/**
 * The process metrics, created on the first call and shared by every later one in this copy of
 * `@ron/core` (calling it again is free). Event-loop lag is sampled by prom-client's monitor,
 * whose timer does not keep the process alive.
 *
 * @example
 * ```ts
 * const texts = await Promise.all([processMetrics().text(), ...services.map((s) => s.metricsText())])
 * const body = mergeExpositions(texts)
 * ```
 */
export function processMetrics(): ProcessMetrics {
  if (instance !== undefined) return instance
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  instance = { registry, text: () => registry.metrics() }
  return instance
}
