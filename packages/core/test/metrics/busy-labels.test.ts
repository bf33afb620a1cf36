import { afterEach, describe, expect, it } from 'vitest'
import { BusyError, createServiceHost, type ServiceHost } from '@ron/core'
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
})
