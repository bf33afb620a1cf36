import * as promClient from 'prom-client'
import { describe, expect, it } from 'vitest'
import { Counter, Gauge, Histogram, Registry } from '../../src/metrics/prom.js'
import { createServiceMetrics, processMetrics } from '../../src/index.js'

describe('prom-client classes loaded from their own modules', () => {
  it('are the very classes prom-client exports, so instanceof and registries work across both', () => {
    expect(Counter).toBe(promClient.Counter)
    expect(Gauge).toBe(promClient.Gauge)
    expect(Histogram).toBe(promClient.Histogram)
    expect(Registry).toBe(promClient.Registry)
    const m = createServiceMetrics({ service: 'prom-test' })
    expect(m.counter('x_total', 'x')).toBeInstanceOf(promClient.Counter)
  })

  it('still give the process metrics (prom-client default metrics, loaded on first use)', async () => {
    const text = await processMetrics().text()
    expect(text).toMatch(/^process_cpu_user_seconds_total /m)
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m)
  })
})
