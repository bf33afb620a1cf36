import { describe, expect, it } from 'vitest'
import { Admission, BoundedQueue, createServiceMetrics } from '@ron/core'

describe('busy_rejections_total', () => {
  it('keeps the queue label of a bounded queue and the endpoint label of admission in one family', async () => {
    const m = createServiceMetrics({ service: 'svc' })
    const q = new BoundedQueue<number>({ name: 'work', capacity: 1, metrics: m.sink })
    q.trySend(1)
    expect(() => q.trySend(2)).toThrow(expect.objectContaining({ code: 'Busy' }))
    const adm = new Admission({ name: 'ingress', maxConcurrentPerKey: 1, metrics: m.sink })
    adm.acquire('1.2.3.4')
    expect(() => adm.acquire('1.2.3.4')).toThrow(expect.objectContaining({ code: 'Busy' }))

    const text = await m.registry.metrics()
    const samples = text.split('\n').filter((l) => l.startsWith('busy_rejections_total{'))
    expect(samples).toHaveLength(2)
    expect(samples.some((l) => l.includes('queue="work"'))).toBe(true)
    expect(samples.some((l) => l.includes('endpoint="ingress"'))).toBe(true)
  })
})
