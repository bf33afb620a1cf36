import { describe, expect, it } from 'vitest'
import { MemoryTransport, createServiceHost } from '@ron/core'
import { metricLabelNames, metricSamples, metricValue } from '@ron/core/testing'

const TEXT = [
  '# HELP queue_depth Items waiting.',
  '# TYPE queue_depth gauge',
  'queue_depth{queue="work",service="storage"} 3',
  'queue_depth{service="storage",queue="announce"} 2',
  '# TYPE up gauge',
  'up 1',
  '# TYPE odd counter',
  'odd_total{path="a \\"quoted\\" \\\\ back\\nslash",x="1"} 4 1700000000000',
  '# TYPE lat_seconds histogram',
  'lat_seconds_bucket{le="0.1",service="storage"} 1',
  'lat_seconds_bucket{le="+Inf",service="storage"} 5',
  'lat_seconds_sum{service="storage"} 0.75',
  'lat_seconds_count{service="storage"} 5',
  'big NaN',
  '',
].join('\n')

describe('metricSamples / metricValue', () => {
  it('reads samples by exact name, labels in any order, comments and blank lines skipped', () => {
    expect(metricSamples(TEXT, 'queue_depth')).toEqual([
      { name: 'queue_depth', labels: { queue: 'work', service: 'storage' }, value: 3 },
      { name: 'queue_depth', labels: { service: 'storage', queue: 'announce' }, value: 2 },
    ])
    expect(metricSamples(TEXT, 'queue')).toEqual([])
    expect(metricSamples(TEXT, 'up')).toEqual([{ name: 'up', labels: {}, value: 1 }])
  })

  it('sums the samples whose labels include the given ones; undefined when none matches', () => {
    expect(metricValue(TEXT, 'queue_depth')).toBe(5)
    expect(metricValue(TEXT, 'queue_depth', { queue: 'announce' })).toBe(2)
    expect(metricValue(TEXT, 'queue_depth', { queue: 'repair' })).toBeUndefined()
    expect(metricValue(TEXT, 'missing_total')).toBeUndefined()
  })

  it('unescapes label values and ignores a trailing timestamp', () => {
    expect(metricSamples(TEXT, 'odd_total')).toEqual([{ name: 'odd_total', labels: { path: 'a "quoted" \\ back\nslash', x: '1' }, value: 4 }])
  })

  it("reads a histogram's series by full name, +Inf and NaN included", () => {
    expect(metricValue(TEXT, 'lat_seconds_count')).toBe(5)
    expect(metricValue(TEXT, 'lat_seconds_sum')).toBe(0.75)
    expect(metricValue(TEXT, 'lat_seconds_bucket', { le: '+Inf' })).toBe(5)
    expect(metricValue(TEXT, 'lat_seconds')).toBeUndefined()
    expect(metricValue(TEXT, 'big')).toBeNaN()
  })

  it("reads a real service's exposition and its declared label names", async () => {
    const host = createServiceHost({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] } })
    host.routes([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, json: {} }) }])
    const svc = { ...host.service } // a service adding its own handles spreads the host's
    const t = new MemoryTransport()
    t.mount('svc', svc)
    try {
      await (await t.request('svc', { method: 'GET', path: '/hello' })).dump()
      const text = await svc.metricsText()
      expect(metricValue(text, 'http_requests_total', { route: '/hello', service: 'svc' })).toBe(1)
      expect(metricLabelNames(svc).get('busy_rejections_total')).toEqual(['endpoint', 'queue'])
      expect(metricLabelNames(svc).has('queue_depth')).toBe(true)
      expect(() => metricLabelNames({ metricsText: async () => '' })).toThrow(TypeError)
    } finally {
      await t.close()
      await svc.close()
    }
  })
})
