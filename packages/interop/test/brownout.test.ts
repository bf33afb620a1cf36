import { afterEach, describe, expect, it } from 'vitest'
import { collectBytes } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { BrownoutSentinel, parseInteropConfig, signWebhook, type BrownoutThresholds, type InteropEvent } from '../src/index.js'
import { API_KEY, SECRETS, T0, readJson, system, type System } from './helpers.js'

let sys: System | undefined
afterEach(async () => {
  await sys?.close()
  sys = undefined
})

function delivery(s: System, i: number): Promise<Awaited<ReturnType<System['request']>>> {
  const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: `{"n":${i}}`, nowMs: T0, deliveryId: `d-${i}` })
  return s.request(w.method, w.path, w.headers, w.body)
}

describe('brownout', () => {
  it('slow storage fills the work queue past 80%: webhooks and uploads get 503 Brownout while GET /o still works; it clears with hysteresis', async () => {
    sys = await system({ workQueue: 10, workers: 2 })
    const s = sys
    const sub = s.interop.subscribe()
    // An object to read later, stored before storage turns slow.
    const put = await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'readable during brownout')
    const { address } = await readJson<{ address: string }>(put)

    s.slow.stall()
    const pending = Array.from({ length: 11 }, (_, i) => delivery(s, i)) // 2 in flight + 9 queued
    await s.clock.flush()
    expect(s.slow.putsWaiting).toBe(2)

    const shed = await delivery(s, 99)
    expect(shed.status).toBe(503)
    expect(shed.headers['retry-after']).toBe('5')
    expect(await readJson(shed)).toMatchObject({ error: { code: 'Brownout', details: { triggers: ['queue'] } } })
    const upload = await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
    expect(upload.status).toBe(503)

    const read = await s.request('GET', `/o/${address}`)
    expect(read.status).toBe(200)
    expect(new TextDecoder().decode(await collectBytes(read.body))).toBe('readable during brownout')

    const readyz = await s.request('GET', '/readyz')
    expect(await readJson(readyz)).toMatchObject({ paths: { webhooks: false, uploads: false, reads: true } })
    const health = s.interop.health()
    expect(health.paths).toEqual({ webhooks: false, uploads: false, reads: true })
    expect(health.ready).toBe(true)
    const metrics = await s.interop.metricsText()
    expect(metrics).toMatch(/brownout_active\{component="webhooks",service="interop"\} 1/)
    expect(metrics).toMatch(/rejected_total\{reason="BACKPRESSURE",service="interop"\} 2/)

    // Storage recovers: the queue drains, every queued delivery is acknowledged.
    s.slow.release()
    const answers = await Promise.all(pending)
    expect(answers.map((r) => r.status)).toEqual(Array(11).fill(202))
    // Hysteresis: still shedding until the signals stay calm for holdMs (10 s).
    await s.clock.advance(5000)
    expect(s.interop.brownout.active).toBe(true)
    await s.clock.advance(6000)
    expect(s.interop.brownout.active).toBe(false)
    expect(s.interop.health().paths).toEqual({ webhooks: true, uploads: true, reads: true })
    expect((await delivery(s, 100)).status).toBe(202)

    const seen: InteropEvent[] = []
    for (let r = sub.tryRecv(); r !== undefined; r = sub.tryRecv()) if ('value' in r && r.value.type === 'brownout:changed') seen.push(r.value)
    expect(seen.map((e) => e.type === 'brownout:changed' && e.active)).toEqual([true, false])
    sub.close()
  })

  it('with brownout disabled a full queue answers 429 Busy with Retry-After', async () => {
    sys = await system({ workQueue: 4, workers: 1, brownout: { enabled: false } })
    const s = sys
    s.slow.stall()
    const pending = Array.from({ length: 5 }, (_, i) => delivery(s, i)) // 1 in flight + 4 queued
    await s.clock.flush()
    const busy = await delivery(s, 50)
    expect(busy.status).toBe(429)
    expect(busy.headers['retry-after']).toBeDefined()
    expect(await readJson(busy)).toMatchObject({ error: { code: 'Busy' } })
    s.slow.release()
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual(Array(5).fill(202))
  })

  it('the rate limit (burst) answers 429 Busy', async () => {
    sys = await system({ rateLimit: { rps: 1, burst: 2 } })
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await delivery(sys, i)).status)
    expect(statuses).toEqual([202, 202, 429])
    await sys.clock.advance(1000)
    expect((await delivery(sys, 3)).status).toBe(202)
  })
})

describe('BrownoutSentinel', () => {
  const thresholds = (): BrownoutThresholds => {
    const { sampleIntervalMs: _s, ...t } = parseInteropConfig({}).brownout
    return t
  }

  it('error rate ≥ 1% over the window (with enough requests) triggers; calm for holdMs clears', async () => {
    const clock = new VirtualClock(T0)
    const s = new BrownoutSentinel({ thresholds: thresholds(), clock, queue: () => ({ depth: 0, capacity: 512 }) })
    for (let i = 0; i < 50; i++) s.recordRequest(i === 0)
    expect(s.evaluate().active).toBe(false) // 1 of 50, but fewer than minRequests
    for (let i = 0; i < 50; i++) s.recordRequest(false)
    expect(s.evaluate()).toMatchObject({ active: true, triggers: ['error_rate'] })
    for (let i = 0; i < 200; i++) s.recordRequest(false) // 1 of 300 ≈ 0.33% < 0.5% clear level
    expect(s.evaluate().active).toBe(true)
    await clock.advance(10_000)
    expect(s.evaluate().active).toBe(false)
  })

  it('upstream p95 ≥ 500 ms triggers; old samples leave the window', async () => {
    const clock = new VirtualClock(T0)
    const s = new BrownoutSentinel({ thresholds: { ...thresholds(), holdMs: 0 }, clock, queue: () => ({ depth: 0, capacity: 512 }) })
    for (let i = 0; i < 100; i++) s.recordUpstream(i < 90 ? 20 : 800)
    expect(s.evaluate()).toMatchObject({ active: true, triggers: ['upstream_p95'], upstreamP95Ms: 800 })
    await clock.advance(61_000)
    expect(s.evaluate().active).toBe(false)
  })
})

describe('chaos: upstream 5xx bursts', () => {
  it('storage failing every PUT: webhooks answer 503 (never 500), the error rate browns out writes, the breaker opens, reads stay up', async () => {
    sys = await system({ brownout: { minRequests: 10 } })
    const s = sys
    const put = await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'still readable')
    const { address } = await readJson<{ address: string }>(put)
    s.slow.failPuts = true
    const statuses: number[] = []
    for (let i = 0; i < 12; i++) statuses.push((await delivery(s, i)).status)
    expect(statuses.every((x) => x === 503)).toBe(true)
    await s.clock.advance(1000) // one sentinel sample
    expect(s.interop.brownout.status()).toMatchObject({ active: true })
    expect(s.interop.brownout.status().triggers).toContain('error_rate')
    const shed = await delivery(s, 100)
    expect(await readJson(shed)).toMatchObject({ error: { code: 'Brownout' } })
    const text = await s.interop.metricsText()
    expect(text).toMatch(/breaker_state\{[^}]*target="storage\/write"[^}]*\} 1/)
    expect(text).toMatch(/breaker_open_total\{[^}]*target="storage\/write"[^}]*\} 1/)
    const read = await s.request('GET', `/o/${address}`)
    expect(read.status).toBe(200)
    expect(new TextDecoder().decode(await collectBytes(read.body))).toBe('still readable')
  })
})
