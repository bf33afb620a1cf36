import type { RonService } from '../service/types.js'
import { registeredMetricLabels } from '../service/host.js'

export { metricSamples, metricValue } from '../metrics/exposition.js'
export type { MetricSample } from '../metrics/exposition.js'

/**
 * The declared label names (the default `service` label excluded) of every metric a service built
 * on the core host registered, by metric name — including metrics with no sample yet, whose labels
 * its exposition text cannot show. Throws for a service not built on the core host.
 *
 * @example
 * ```ts
 * expect(metricLabelNames(svc).get('queue_depth')).toEqual(['queue'])
 * ```
 */
export function metricLabelNames(service: Pick<RonService, 'metricsText'>): Map<string, string[]> {
  const all = registeredMetricLabels(service)
  if (all === undefined) throw new TypeError('metricLabelNames: not a service built on createServiceHost')
  return new Map([...all].map(([name, labels]) => [name, labels.filter((l) => l !== 'service')]))
}
