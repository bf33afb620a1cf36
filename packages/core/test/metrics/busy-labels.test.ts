import { afterEach, describe, expect, it } from 'vitest'
import { BusyError, createServiceHost, type ServiceHost } from '@ron/core'
import { deferred } from '@ron/core/testing'
import { mkReq } from '../http/helpers.js'
import { sampleValue } from './prom-text.js'

describe('busy_rejections_total', () => {
  const hosts: ServiceHost[] = []
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.service.close()
  })

  it('is listed at startup and counts every 429 the host answers, labelled by endpoint and queue', async () => {
    const host = createServiceHost({
      id: 'svc',
      version: '1',
      topology: { service: 'svc', tasks: [], channels: [] },
      admission: { maxConcurrentPerIp: 1 },
    })
    hosts.push(host)
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let entered!: () => void
    const inside = new Promise<void>((r) => (entered = r))
    host.routes([
      {
        method: 'GET',
        path: '/slow',
        handler: async () => {
          entered()
          await gate
          return { status: 204 }
        },
      },
      { method: 'GET', path: '/limited', handler: () => Promise.reject(new BusyError('rate limited', { details: { endpoint: 'limited', queue: 'own' } })) },
    ])
    expect(await host.service.metricsText()).toContain('# TYPE busy_rejections_total counter')

    const slow = host.service.dispatch(mkReq('GET', '/slow', { remoteAddress: '10.0.0.1' }))
    await inside
    expect((await host.service.dispatch(mkReq('GET', '/slow', { remoteAddress: '10.0.0.1' }))).status).toBe(429)
    expect((await host.service.dispatch(mkReq('GET', '/limited', { remoteAddress: '10.0.0.2' }))).status).toBe(429)
    release()
    expect((await slow).status).toBe(204)

    const text = await host.service.metricsText()
    expect(sampleValue(text, 'busy_rejections_total', { endpoint: 'admission', queue: '' })).toBe(1)
    expect(sampleValue(text, 'busy_rejections_total', { endpoint: 'limited', queue: 'own' })).toBe(1)
  })

  it("labels a full work queue's 429 with the route name it matched", async () => {
    const host = createServiceHost({
      id: 'svc',
      version: '1',
      topology: {
        service: 'svc',
        tasks: [{ name: 'work-worker', count: 1, criticality: 'critical', description: 'runs jobs' }],
        channels: [{ name: 'work', kind: 'mpsc', capacity: 1, producers: ['http'], consumers: ['work-worker'], overflow: 'reject-new', pool: { concurrency: 1 } }],
      },
    })
    hosts.push(host)
    const gate = deferred()
    const entered = deferred()
    host.routes([
      {
        method: 'GET',
        path: '/job',
        name: 'job',
        queue: 'work',
        handler: async () => {
          entered.resolve()
          await gate.promise
          return { status: 204 }
        },
      },
    ])
    const running = host.service.dispatch(mkReq('GET', '/job'))
    await entered.promise
    const queued = host.service.dispatch(mkReq('GET', '/job'))
    const refused = await host.service.dispatch(mkReq('GET', '/job'))
    expect(refused.status).toBe(429)
    gate.resolve()
    expect((await running).status).toBe(204)
    expect((await queued).status).toBe(204)
    const text = await host.service.metricsText()
    expect(sampleValue(text, 'busy_rejections_total', { endpoint: 'job', queue: 'work' })).toBe(1)
  })
})
