/**
 * Interop's drain (SPEC 3.3, seed svc-interop: shed writes and bridges before reads) and its
 * readiness per path (SPEC 3.3a), over virtual time: webhooks and uploads are refused and unready
 * at once while reads are served through the read window, then intake stops with 503 +
 * Retry-After; a delivery in flight finishes, one still stalled at the deadline is aborted and
 * counted. Each path's readiness comes from its real dependency: an outgoing service token held,
 * the dedupe journal's disk taking writes.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MemoryTransport, addressOf, isRonError } from '@ron/core'
import { VirtualClock, mountTmpfs } from '@ron/core/testing'
import { createInteropService, signWebhook, toServiceTokens } from '../src/index.js'
import { API_KEY, SECRETS, T0, closeOnVirtualTime, readJson, system, type System } from './helpers.js'

let sys: System | undefined
afterEach(async () => {
  await sys?.close()
  sys = undefined
})

const webhook = (s: System, id: string) => {
  const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: `{"id":"${id}"}`, nowMs: s.clock.now(), deliveryId: id })
  return s.request(w.method, w.path, w.headers, w.body)
}

async function until(s: System, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await s.clock.flush()
  expect(cond()).toBe(true)
}

const metric = (text: string, re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN)

describe('drain order (webhooks and uploads shed first, reads through the window)', () => {
  it('refuses webhooks and uploads at once, serves reads through the window, stops intake; an in-flight delivery finishes', async () => {
    sys = await system({ drainReadWindowMs: 1000, drainDeadlineMs: 5000 })
    const s = sys
    const up = await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'readable through the window')
    const { address } = await readJson<{ address: string }>(up)
    // In flight when the drain starts: a delivery whose receipt storage is still writing.
    s.slow.stall()
    const inFlight = webhook(s, 'in-flight')
    await until(s, () => s.slow.putsWaiting === 1)

    const closing = s.interop.close()
    await s.clock.flush()
    expect(s.interop.health()).toMatchObject({ ready: true, writeReady: false, paths: { webhooks: false, uploads: false, reads: true } })
    for (const res of [await webhook(s, 'late'), await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'late upload')]) {
      expect(res.status).toBe(503)
      expect((await readJson<{ error: { code: string; details: { phase: string } } }>(res)).error).toMatchObject({ code: 'Draining', details: { phase: 'writes' } })
      expect(res.headers['retry-after']).toBeDefined()
    }
    const read = await s.request('GET', `/o/${address}`)
    expect(read.status).toBe(200)
    expect(addressOf(new Uint8Array(await read.bytes()))).toBe(address)

    await s.clock.advance(1000)
    expect(s.interop.health()).toMatchObject({ ready: false, paths: { webhooks: false, uploads: false, reads: false } })
    const late = await s.request('GET', `/o/${address}`)
    expect(late.status).toBe(503)
    expect(late.headers['retry-after']).toBeDefined()
    await late.dump()

    // The delivery in flight finishes: its receipt is stored and acknowledged.
    s.slow.release()
    const done = await inFlight
    expect(done.status).toBe(202)
    await done.dump()
    await closeOnVirtualTime(s.clock, closing)
    const text = await s.interop.metricsText()
    expect(metric(text, /tasks_aborted_total\{kind="work-worker",service="interop"\} (\d+)/)).toBe(0)
  })

  it('a delivery still stalled at the deadline is aborted, answered 503, and counted', async () => {
    sys = await system({ drainReadWindowMs: 0, drainDeadlineMs: 500 })
    const s = sys
    s.slow.stall()
    const inFlight = webhook(s, 'stalled')
    await until(s, () => s.slow.putsWaiting === 1)
    const closing = s.interop.close()
    await s.clock.advance(500)
    await closeOnVirtualTime(s.clock, closing)
    const res = await inFlight
    expect(res.status).toBeGreaterThanOrEqual(500)
    expect(res.status).not.toBe(500)
    await res.dump()
    const text = await s.interop.metricsText()
    const aborted = metric(text, /tasks_aborted_total\{kind="work-worker",service="interop"\} (\d+)/) + metric(text, /tasks_aborted_total\{kind="request",service="interop"\} (\d+)/)
    expect(aborted).toBeGreaterThanOrEqual(1)
    s.slow.release()
  })
})

describe('readiness per path, from real dependencies', () => {
  it('no service token: webhooks and uploads unready (every delivery would get no_service_token), reads ready', async () => {
    const svc = await createInteropService({ webhooks: { providers: { github: { secrets: [SECRETS.github] } } } })
    try {
      expect(svc.health()).toMatchObject({ ready: true, writeReady: false, paths: { webhooks: false, uploads: false, reads: true } })
      expect(svc.health().missing).toContain('service_token')
      expect(svc.health().reason).toContain('service_token: no_service_token')
    } finally {
      await svc.close()
    }
  })

  it('a token source that fails turns webhooks and uploads unready until a token is held again', async () => {
    let failing = false
    sys = await system({}, {
      runtime: {
        tokens: toServiceTokens(() => {
          if (failing) throw new Error('passport unreachable')
          return sys!.issuer.mint({ sub: 'node:test', scope: ['storage:write'], aud: ['storage'], ron: { maxBytes: 1 << 30 } })
        }),
      },
    })
    const s = sys
    expect(s.interop.health().paths).toEqual({ webhooks: true, uploads: true, reads: true })
    failing = true
    const refused = await webhook(s, 'no-token')
    expect(refused.status).toBeGreaterThanOrEqual(500)
    await refused.dump()
    expect(s.interop.health()).toMatchObject({ ready: true, writeReady: false, paths: { webhooks: false, uploads: false, reads: true } })
    expect(s.interop.health().reason).toContain('service_token: token_unavailable')
    failing = false
    const ok = await webhook(s, 'token-again')
    expect(ok.status).toBe(202)
    await ok.dump()
    expect(s.interop.health()).toMatchObject({ writeReady: true, paths: { webhooks: true, uploads: true, reads: true } })
  })

  it("a full disk under the dedupe journal turns webhooks (and only webhooks) unready", async () => {
    const fs = await mountTmpfs(256 * 1024)
    if (fs === undefined) return
    try {
      sys = await system({ dataDir: fs.path })
      const s = sys
      expect(s.interop.health().paths).toEqual({ webhooks: true, uploads: true, reads: true })
      await fs.fill()
      const res = await webhook(s, 'disk-full')
      expect(res.status).toBe(503)
      await res.dump()
      expect(s.interop.health().paths).toEqual({ webhooks: false, uploads: true, reads: true })
      expect(s.interop.health().missing).toContain('disk')
      await fs.unfill()
      // The journal's probe task retries the (real) disk every second of virtual time. The probe's
      // write is real I/O, done when the machine gets to it: bound the wait in real time (a count
      // of event-loop turns ran out on a loaded runner), advancing virtual time between looks.
      await vi.waitFor(
        async () => {
          await s.clock.advance(1000)
          expect(s.interop.health().paths.webhooks).toBe(true)
        },
        { timeout: 10_000, interval: 10 },
      )
      expect(s.interop.health().paths).toEqual({ webhooks: true, uploads: true, reads: true })
    } finally {
      await sys?.close()
      sys = undefined
      await fs.close()
    }
  })
})

describe('no transport', () => {
  it('a delivery without a transport is 503 Unavailable no_transport, not a 500', async () => {
    const clock = new VirtualClock(T0)
    const svc = await createInteropService({ webhooks: { providers: { github: { secrets: [SECRETS.github] } } }, retry: { tries: 1 } }, undefined, { clock, tokens: toServiceTokens('t') })
    const t = new MemoryTransport()
    t.mount('interop', svc)
    try {
      const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: '{}', nowMs: T0 })
      const res = await t.request('interop', { method: w.method, path: w.path, headers: w.headers, body: w.body })
      expect(res.status).toBe(503)
      expect((await res.json<{ error: { code: string; details: { reason: string } } }>()).error).toMatchObject({ code: 'Unavailable', details: { reason: 'no_transport' } })
    } finally {
      await closeOnVirtualTime(clock, svc.close())
      await t.close()
    }
  })
})

describe('base keys from config: limits, admission, CORS', () => {
  it('http.jsonBodyLimit: a JSON admin body over it is 413 OverLimit', async () => {
    sys = await system({ http: { jsonBodyLimit: 32 } })
    const h = { authorization: `Bearer ${sys.issuer.mint({ aud: ['interop'], scope: ['interop:admin'], ttlSec: 86_400 })}`, 'content-type': 'application/json' }
    const res = await sys.request('PUT', '/admin/webhooks/github/secret', h, JSON.stringify({ secret: 'y'.repeat(64) }))
    expect(res.status).toBe(413)
    expect((await readJson<{ error: { code: string } }>(res)).error.code).toBe('OverLimit')
  })

  it('http.maxRpsPerIp: deliveries over the per-IP rate are 429 Busy per_ip_rate with Retry-After', async () => {
    sys = await system({ http: { maxRpsPerIp: 1 } })
    const statuses: number[] = []
    let env: { code: string; details: { reason: string } } | undefined
    for (let i = 0; i < 4; i++) {
      const res = await webhook(sys, `rate-${i}`)
      statuses.push(res.status)
      if (res.status === 429) {
        expect(res.headers['retry-after']).toBeDefined()
        env = (await readJson<{ error: { code: string; details: { reason: string } } }>(res)).error
      } else await res.dump()
    }
    expect(statuses).toEqual([202, 202, 429, 429])
    expect(env).toMatchObject({ code: 'Busy', details: { reason: 'per_ip_rate' } })
  })

  it('cors: reads carry Access-Control-Allow-Origin, write preflights only from writeOrigins, reloadable', async () => {
    sys = await system({ cors: { writeOrigins: ['https://dash.example'] } })
    const read = await sys.request('GET', '/readyz', { origin: 'https://any.example' })
    await read.dump()
    const obj = await sys.request('GET', `/o/${addressOf(new TextEncoder().encode('absent'))}`, { origin: 'https://any.example' })
    expect(obj.headers['access-control-allow-origin']).toBe('*')
    await obj.dump()
    const pre = (origin: string) => sys!.request('OPTIONS', '/admin/api-keys/alice', { origin, 'access-control-request-method': 'PUT' })
    const allowed = await pre('https://dash.example')
    expect(allowed.status).toBeLessThan(300)
    expect(allowed.headers['access-control-allow-origin']).toBe('https://dash.example')
    await allowed.dump()
    const refused = await pre('https://evil.example')
    expect(refused.status).toBe(403)
    await refused.dump()
    await sys.interop.reload({ cors: { writeOrigins: ['https://evil.example'] } })
    const now = await pre('https://evil.example')
    expect(now.status).toBeLessThan(300)
    await now.dump()
  })
})

describe('the replay window cap (seed: ≤ 5 min)', () => {
  it('refuses webhooks.toleranceSec above 300 with a ConfigError naming the field, at start and on reload', async () => {
    await expect(createInteropService({ webhooks: { toleranceSec: 301 } })).rejects.toSatisfy(
      (e: unknown) => isRonError(e, 'Malformed') && e.details['path'] === 'webhooks.toleranceSec' && /capped at 300/.test(e.message),
    )
    const svc = await createInteropService({ webhooks: { toleranceSec: 300 } })
    try {
      await expect(svc.reload({ webhooks: { toleranceSec: 3600 } })).rejects.toSatisfy((e: unknown) => isRonError(e, 'Malformed') && e.details['path'] === 'webhooks.toleranceSec')
      expect(svc.config().webhooks.toleranceSec).toBe(300)
    } finally {
      await svc.close()
    }
  })
})
