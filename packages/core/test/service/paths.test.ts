import { afterEach, describe, expect, it } from 'vitest'
import { createServiceHost, type ServiceHost, type Topology } from '@ron/core'
import { mkReq, readBody, readJson } from '../http/helpers.js'

const topology: Topology = { service: 'svc', tasks: [], channels: [] }

describe('host readiness per path (SPEC.md 3.3a)', () => {
  const hosts: ServiceHost[] = []
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.service.close()
  })

  it('health().paths and /readyz report each path; the service stays ready for its cheap paths', async () => {
    const host = createServiceHost({ id: 'svc', version: '1', topology })
    hosts.push(host)
    host.readiness.setPath('verify', true)
    host.readiness.setPath('issue', false, 'kms_slow')
    expect(host.service.health()).toMatchObject({ ready: true, paths: { verify: true, issue: false }, missing: ['kms_slow'] })
    const res = await host.service.dispatch(mkReq('GET', '/readyz'))
    expect(res.status).toBe(200)
    expect(await readJson(res)).toMatchObject({ ready: true, paths: { verify: true, issue: false } })
  })

  it('metricsText() is the /metrics exposition', async () => {
    const host = createServiceHost({ id: 'svc', version: '1', topology })
    hosts.push(host)
    const text = await host.service.metricsText()
    expect(text).toContain('config_reloads_total{service="svc"} 0')
    const res = await host.service.dispatch(mkReq('GET', '/metrics'))
    expect((await readBody(res)).toString('utf8')).toContain('config_reloads_total{service="svc"} 0')
  })
})
