import { describe, expect, it } from 'vitest'
import { createServiceMetrics, defineMetrics, isRonUsageError, metricValue, processMetrics } from '@ron/core'

describe('defineMetrics', () => {
  it('registers families with typed handles and their zero series; handles move the series', async () => {
    const decl = defineMetrics(
      {
        jobs_total: { type: 'counter', help: 'Jobs.', labels: ['kind', 'outcome'], zero: { kind: ['a', 'b'], outcome: ['ok'] } },
        depth: { type: 'gauge', help: 'Depth.' },
        wait_seconds: { type: 'histogram', help: 'Wait.', labels: ['kind'], zero: [{ kind: 'a' }], buckets: [0.1, 1] },
      },
      { io_timeouts_total: { op: ['read', 'peer'] }, busy_rejections_total: [{ endpoint: 'PUT /x', queue: 'work' }] },
    )
    const m = createServiceMetrics({ service: 't' })
    const h = m.register(decl)
    let text = await m.text()
    for (const line of [
      'jobs_total{kind="a",outcome="ok",service="t"} 0',
      'jobs_total{kind="b",outcome="ok",service="t"} 0',
      'depth{service="t"} 0',
      'io_timeouts_total{op="read",service="t"} 0',
      'io_timeouts_total{op="peer",service="t"} 0',
      'busy_rejections_total{endpoint="PUT /x",queue="work",service="t"} 0',
    ]) {
      expect(text, line).toContain(line)
    }
    expect(metricValue(text, 'wait_seconds_count', { kind: 'a' })).toBe(0)
    expect(metricValue(text, 'wait_seconds_bucket', { kind: 'a', le: '0.1' })).toBe(0)
    h.jobs_total.inc({ kind: 'a', outcome: 'ok' })
    h.depth.set(3)
    h.wait_seconds.observe({ kind: 'a' }, 0.5)
    m.sink.inc('io_timeouts_total', { op: 'peer' })
    text = await m.text()
    expect(metricValue(text, 'jobs_total', { kind: 'a' })).toBe(1)
    expect(metricValue(text, 'depth')).toBe(3)
    expect(metricValue(text, 'wait_seconds_count', { kind: 'a' })).toBe(1)
    expect(metricValue(text, 'io_timeouts_total', { op: 'peer' })).toBe(1)
    expect(metricValue(text, 'io_timeouts_total', { op: 'read' })).toBe(0)
  })

  it('refuses invalid declarations with RON_INVALID_OPTION', () => {
    const bad = (f: () => unknown): void => {
      expect(f).toThrow()
      try {
        f()
      } catch (e) {
        expect(isRonUsageError(e, 'RON_INVALID_OPTION')).toBe(true)
      }
    }
    bad(() => defineMetrics({ 'bad-name': { type: 'counter', help: 'x' } }))
    bad(() => defineMetrics({ queue_depth: { type: 'gauge', help: 'mine' } }))
    bad(() => defineMetrics({ http_requests_total: { type: 'counter', help: 'mine' } }))
    bad(() => defineMetrics({ x_total: { type: 'counter', help: '' } }))
    bad(() => defineMetrics({ x_total: { type: 'counter', help: 'x', labels: ['service'] } }))
    bad(() => defineMetrics({ x_total: { type: 'counter', help: 'x', labels: ['a'], zero: { b: ['1'] } } }))
    bad(() => defineMetrics({}, { not_a_seed_total: { a: ['1'] } }))
    bad(() => defineMetrics({}, { io_timeouts_total: { peer: ['x'] } }))
  })

  it('refuses a family registered before with another type or labels', () => {
    const m = createServiceMetrics({ service: 't' })
    m.counter('x_total', 'x', ['a'])
    expect(() => m.register(defineMetrics({ x_total: { type: 'counter', help: 'x', labels: ['b'] } }))).toThrow(/another type or labels/)
    expect(() => m.register(defineMetrics({ x_total: { type: 'gauge', help: 'x', labels: ['a'] } }))).toThrow(/another type or labels/)
  })
})

describe('processMetrics', () => {
  it("is one registry per process with prom-client's default set (event-loop lag, heap, GC, fds, RSS)", async () => {
    const a = processMetrics()
    expect(processMetrics()).toBe(a)
    const text = await a.text()
    for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds', 'process_resident_memory_bytes', 'process_cpu_seconds_total']) {
      expect(text, name).toContain(`# TYPE ${name}`)
    }
    if (process.platform === 'linux') expect(text).toContain('# TYPE process_open_fds gauge')
    // Not per service: a service's own registry has none of them.
    const svc = await createServiceMetrics({ service: 's' }).text()
    expect(svc).not.toContain('nodejs_eventloop_lag_seconds')
  })
})
