/**
 * Slow clients against interop (issue 20 item 5): trickling uploads are cut with 408 and never
 * counted as upstream load, so webhooks keep being acknowledged. Deterministic: one
 * MemoryTransport, virtual time. (The same attack on a real ron-node process:
 * packages/cli/test/slow-clients.e2e.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest'
import { RequestTimeoutError, TimeoutError, type Transport, type TransportRequest, type TransportResponse } from '@ron/core'
import { VirtualClock, metricValue, seededRandom } from '@ron/core/testing'
import { DEFAULT_UPSTREAM_RETRY, Upstreams, hashApiKey, rechunk, signWebhook, type BodyWatch } from '../src/index.js'
import { SECRETS, T0, readJson, system, type System } from './helpers.js'

let sys: System | undefined
afterEach(async () => {
  await sys?.close()
  sys = undefined
})

const KEYS = ['a', 'b', 'c'].map((client) => ({ client, key: `ronk_${client}_${'k'.repeat(24)}` }))

/** An upload body that sends one byte every `everyMs` of virtual time, forever. */
async function* trickle(clock: VirtualClock, everyMs: number): AsyncGenerator<Uint8Array> {
  for (;;) {
    await clock.sleep(everyMs)
    yield Buffer.from('x')
  }
}

/** A body of `total` bytes (all `fill`) sent in `chunk`-byte pieces every `everyMs`. */
async function* steady(clock: VirtualClock, total: number, chunk: number, everyMs: number, fill = 7): AsyncGenerator<Uint8Array> {
  for (let sent = 0; sent < total; sent += chunk) {
    await clock.sleep(everyMs)
    yield new Uint8Array(Math.min(chunk, total - sent)).fill(fill)
  }
}

function webhook(s: System, i: number): Promise<TransportResponse> {
  const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: `{"n":${i}}`, nowMs: s.clock.now(), deliveryId: `d-${i}` })
  return s.request(w.method, w.path, w.headers, w.body)
}

const statusOf = async (p: Promise<TransportResponse>): Promise<string> => {
  const res = await p
  if (res.status < 400) return String(res.status)
  const body = await readJson<{ error: { code: string; details: { reason?: string } } }>(res)
  return `${res.status} ${body.error.details.reason ?? body.error.code}`
}

describe('trickling uploads against webhooks', () => {
  it('regression: 3 API keys × 8 uploads trickling 1 byte every 2 s — webhooks are acknowledged throughout, the trickles are cut with 408 or refused with 429, brownout never starts', async () => {
    sys = await system({
      apiKeys: KEYS.map((k) => ({ client: k.client, keyHash: hashApiKey(k.key) })),
      // Short limits keep the test short; the defaults are the same rules over 10 s.
      http: { minBytesPerSec: 1024, rateWindowMs: 4000, requestTimeoutMs: 4000 },
    })
    const s = sys
    const uploads: Promise<string>[] = []
    // The clients connect together: a1 b1 c1 a2 b2 c2 …
    for (let i = 0; i < 8; i++) {
      for (const k of KEYS) uploads.push(statusOf(s.request('POST', '/put', { 'x-api-key': k.key, 'content-length': '100' }, trickle(s.clock, 2000))))
    }
    const hooks: Promise<string>[] = []
    for (let i = 0; i < 24; i++) {
      hooks.push(statusOf(webhook(s, i)))
      await s.clock.advance(500)
    }
    expect(await Promise.all(hooks)).toEqual(Array(24).fill('202'))
    const cut = await Promise.all(uploads)
    // Every trickle got a client-side answer: cut for its pace, or refused a slot up front.
    for (const c of cut) expect(c).toMatch(/^(408 (min_rate|deadline)|429 (per_client|uploads))$/)
    const timedOut = cut.filter((c) => c.startsWith('408')).length
    expect(timedOut).toBe(8) // uploads.maxConcurrent: half of the 16 workers
    expect(cut.filter((c) => c === '429 per_client')).toHaveLength(0)
    expect(s.interop.brownout.status()).toMatchObject({ active: false, triggers: [] })
    expect(s.interop.health().paths).toEqual({ webhooks: true, uploads: true, reads: true })
    const text = await s.interop.metricsText()
    expect(metricValue(text, 'brownout_active', { component: 'webhooks' })).toBe(0)
    expect(metricValue(text, 'breaker_state', { target: 'storage/write' })).toBe(0)
    const rate = metricValue(text, 'io_timeouts_total', { op: 'read_rate' }) ?? 0
    const deadline = metricValue(text, 'io_timeouts_total', { op: 'read_deadline' }) ?? 0
    expect(rate + deadline).toBe(8)
    // After the cut, the freed slots take new uploads at once.
    const after = await s.request('POST', '/put', { 'x-api-key': KEYS[2]!.key }, 'after the storm')
    expect(after.status).toBe(201)
  })

  it('uploads at an acceptable pace take seconds each, yet their client time is not upstream latency: no upstream_p95 brownout', async () => {
    sys = await system({
      apiKeys: [{ client: 'slow', keyHash: hashApiKey(KEYS[0]!.key) }],
      http: { minBytesPerSec: 100, rateWindowMs: 1000, requestTimeoutMs: 1000 },
      uploads: { maxConcurrentPerClient: 30 },
      workers: 64,
    })
    const s = sys
    // 30 uploads of 2 KB at 500 B/s: 4 s of client time each, far over the 500 ms p95 trigger.
    const ups = Array.from({ length: 30 }, (_, i) => statusOf(s.request('POST', '/put', { 'x-api-key': KEYS[0]!.key }, steady(s.clock, 2000, 100, 200, i))))
    // Storage writes 16 of them at a time (its writersPerPrincipal), so about two rounds.
    for (let i = 0; i < 120; i++) await s.clock.advance(100)
    expect(await Promise.all(ups)).toEqual(Array(30).fill('201'))
    s.interop.brownout.evaluate()
    expect(s.interop.brownout.status()).toMatchObject({ active: false })
    expect(s.interop.brownout.status().upstreamP95Ms ?? 0).toBeLessThan(500)
  })

  it('a client that goes away mid-upload is not an upstream error: the error ratio and the breaker stay clean', async () => {
    sys = await system({ http: { rateWindowMs: 60_000, requestTimeoutMs: 60_000 } })
    const s = sys
    for (let i = 0; i < 5; i++) {
      const ac = new AbortController()
      const body = (async function* () {
        yield Buffer.from('partial')
        await s.clock.sleep(100)
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
      })()
      const res = s.transport.request('interop', { method: 'POST', path: '/put', headers: { 'x-api-key': 'ronk_test_key_0123456789abcdef' }, body, signal: ac.signal })
      await s.clock.advance(200)
      expect((await res).status).toBe(503)
    }
    expect(s.interop.brownout.status().requests).toBe(0)
    expect(metricValue(await s.interop.metricsText(), 'breaker_state', { target: 'storage/write' })).toBe(0)
  })
})

describe('rechunk', () => {
  it('passes a partly filled chunk on after flushMs, so a slow client never starves the consumer', async () => {
    const clock = new VirtualClock(0)
    const got: { at: number; n: number }[] = []
    const watch: BodyWatch = {}
    const done = (async () => {
      for await (const c of rechunk(steady(clock, 30, 10, 700), 64 * 1024, { clock, flushMs: 1000, watch })) got.push({ at: clock.now(), n: c.byteLength })
    })()
    for (let i = 0; i < 40; i++) await clock.advance(100)
    await done
    // 10 bytes at 700, 1400, 2100: the first two wait together until the flush at 1700.
    expect(got).toEqual([
      { at: 1700, n: 20 },
      { at: 2100, n: 10 },
    ])
    expect(watch).toEqual({ endedAt: 2100 })
  })

  it("records the source's failure in the watch and passes it on", async () => {
    const clock = new VirtualClock(0)
    const watch: BodyWatch = {}
    const cut = new RequestTimeoutError('too slow', { details: { reason: 'min_rate' } })
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(5)
      throw cut
    }
    await expect(
      (async () => {
        for await (const _ of rechunk(failing(), 1024, { clock, watch })) void _
      })(),
    ).rejects.toBe(cut)
    expect(watch.failure).toBe(cut)
    expect(watch.endedAt).toBeUndefined()
  })
})

describe('Upstreams and a client body', () => {
  /** A transport that reads the request body; a failing body fails the call as undici would (a transport error). */
  function reading(latencyMs: number, clock: VirtualClock): Transport {
    return {
      async request(_target: string, req: TransportRequest): Promise<TransportResponse> {
        try {
          for await (const _ of req.body as AsyncIterable<Uint8Array>) void _
        } catch (e) {
          throw new TimeoutError('request body failed', { cause: e })
        }
        await clock.sleep(latencyMs)
        const res: TransportResponse = {
          status: 201,
          headers: {},
          body: (async function* () {})(),
          bytes: () => Promise.resolve(new Uint8Array()),
          text: () => Promise.resolve(''),
          json: <T>() => Promise.resolve({} as T),
          dump: () => Promise.resolve(),
        }
        return res
      },
      close: () => Promise.resolve(),
    }
  }

  it('measures a streamed call from the end of the body, and leaves the breaker alone when the client failed it', async () => {
    const clock = new VirtualClock(T0)
    const latencies: number[] = []
    const up = new Upstreams({ transport: reading(40, clock), clock, random: seededRandom(1), metrics: { inc() {}, set() {}, observe() {} }, retry: DEFAULT_UPSTREAM_RETRY, onLatency: (ms) => latencies.push(ms) })
    const watch: BodyWatch = {}
    const ok = up.call('storage', { op: 'storage.put', method: 'PUT', path: '/o', body: rechunk(steady(clock, 300, 100, 1000), 1024, { clock, watch }), timeoutMs: 60_000, idempotent: false, clientBody: watch })
    for (let i = 0; i < 50; i++) await clock.advance(100)
    expect((await ok).status).toBe(201)
    expect(latencies).toEqual([40]) // not the 3 s the client took
    // Twenty calls whose client body fails: not one counts against storage.
    for (let i = 0; i < 20; i++) {
      const w: BodyWatch = {}
      async function* dies(): AsyncGenerator<Uint8Array> {
        yield new Uint8Array(1)
        throw new RequestTimeoutError('too slow')
      }
      await expect(up.call('storage', { op: 'storage.put', method: 'PUT', path: '/o', body: rechunk(dies(), 1024, { clock, watch: w }), timeoutMs: 1000, idempotent: false, clientBody: w })).rejects.toMatchObject({ code: 'Timeout' })
    }
    expect(latencies).toEqual([40])
    expect(up.breaker('storage/write').toJSON()).toMatchObject({ state: 'closed', failures: 0 })
    // The same failures without a client to blame do open it.
    for (let i = 0; i < 20; i++) {
      async function* dies(): AsyncGenerator<Uint8Array> {
        yield new Uint8Array(1)
        throw new RequestTimeoutError('too slow')
      }
      await up.call('storage', { op: 'storage.put', method: 'PUT', path: '/o', body: dies(), timeoutMs: 1000, idempotent: false }).catch(() => undefined)
    }
    expect(up.breaker('storage/write').toJSON().state).toBe('open')
  })
})
