/**
 * Passport accepts AND enforces the base keys of the service contract (issue 21: before, its
 * schema refused `limits`, `cors`, `admission`): a body over `http.jsonBodyLimit` is 413
 * `OverLimit` and moves `rejected_total{reason="over_limit"}`; per-IP admission answers 429;
 * CORS lets reads from anywhere and writes only from `cors.writeOrigins`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { metricValue, setup } from './helpers.js'

let done: (() => Promise<void>) | undefined
afterEach(async () => {
  await done?.()
  done = undefined
})

const json = { 'content-type': 'application/json' }

describe('HTTP limits, admission and CORS from config', () => {
  it('a JSON body over http.jsonBodyLimit is 413 OverLimit and counted in rejected_total{reason="over_limit"}', async () => {
    const p = await setup({ http: { jsonBodyLimit: 256 } })
    done = p.close
    expect(await metricValue(p.passport, 'rejected_total', { reason: 'over_limit' })).toBe(0)
    const res = await p.transport.request('passport', { method: 'POST', path: '/v1/passport/verify', headers: json, body: JSON.stringify({ token: 'x'.repeat(1024) }) })
    expect(res.status).toBe(413)
    expect((await res.json<{ error: { code: string } }>()).error.code).toBe('OverLimit')
    expect(await metricValue(p.passport, 'rejected_total', { reason: 'over_limit' })).toBe(1)
    // Under the cap: served.
    const ok = await p.transport.request('passport', { method: 'POST', path: '/v1/passport/verify', headers: json, body: JSON.stringify({ token: 'x.y.z' }) })
    expect(ok.status).toBe(200)
    await ok.dump()
    expect(await metricValue(p.passport, 'rejected_total', { reason: 'over_limit' })).toBe(1)
  })

  it('per-IP admission (http.maxRpsPerIp) answers 429 with Retry-After and counts busy_rejections_total', async () => {
    const p = await setup({ http: { maxRpsPerIp: 1 } })
    done = p.close
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await p.transport.request('passport', { method: 'GET', path: '/v1/passport/keys' })
      statuses.push(res.status)
      if (res.status === 429) expect(res.headers['retry-after']).toBeDefined()
      await res.dump()
    }
    expect(statuses.slice(0, 2)).toEqual([200, 200]) // the burst: 2 s worth
    expect(statuses.slice(2)).toEqual([429, 429])
    expect(await metricValue(p.passport, 'busy_rejections_total', { endpoint: 'admission', queue: '' })).toBe(2)
    // The bucket refills on the injected clock.
    await p.clock.advance(1000)
    const again = await p.transport.request('passport', { method: 'GET', path: '/v1/passport/keys' })
    expect(again.status).toBe(200)
    await again.dump()
  })

  it('http.maxInflight answers 429 max_inflight while the limit is taken', async () => {
    const p = await setup({ http: { maxInflight: 1 } })
    done = p.close
    // An SSE follower holds its request open: the one slot is taken.
    const ac = new AbortController()
    const stream = await p.transport.request('passport', { method: 'GET', path: '/v1/passport/revocations/stream', signal: ac.signal })
    expect(stream.status).toBe(200)
    const res = await p.transport.request('passport', { method: 'GET', path: '/v1/passport/keys' })
    expect(res.status).toBe(429)
    expect((await res.json<{ error: { details: { reason: string } } }>()).error.details.reason).toBe('max_inflight')
    ac.abort()
    await stream.dump().catch(() => undefined)
  })

  it('CORS: reads from any origin; a write preflight only from cors.writeOrigins', async () => {
    const origin = 'https://admin.example'
    const closed = await setup()
    const pre = await closed.transport.request('passport', { method: 'OPTIONS', path: '/v1/passport/revoke', headers: { origin, 'access-control-request-method': 'POST' } })
    expect(pre.status).toBe(403)
    await pre.dump()
    const read = await closed.transport.request('passport', { method: 'GET', path: '/v1/passport/keys', headers: { origin } })
    expect(read.headers['access-control-allow-origin']).toBe('*')
    await read.dump()
    await closed.close()

    const open = await setup({ cors: { writeOrigins: [origin] } })
    done = open.close
    const ok = await open.transport.request('passport', { method: 'OPTIONS', path: '/v1/passport/revoke', headers: { origin, 'access-control-request-method': 'POST' } })
    expect(ok.status).toBe(204)
    expect(ok.headers['access-control-allow-origin']).toBe(origin)
    await ok.dump()
  })

  it('the base keys are accepted from config (and refused when unknown)', async () => {
    await expect(setup({ http: { nope: 1 } } as never)).rejects.toMatchObject({ code: 'Malformed' })
  })
})
