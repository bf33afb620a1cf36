/**
 * Slow clients (SPEC.md 4, issue 20 item 5): the minimum body rate over a window, the
 * whole-request deadline and the per-principal body shares, in every service's HTTP layer.
 * Virtual time and in-process bodies for the rules; real sockets for the cut itself.
 */
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { decodedBody } from '../../src/http/body.js'
import { BodyPace, bodyDeadlineMs, type PaceLimits } from '../../src/http/pace.js'
import type { RonRequest } from '../../src/http/types.js'
import { DEFAULT_SLOW_CLIENT_LIMITS, createHttpHandler, createServiceHost, isRonError, noopMetrics, serve, type HttpLimits, type MetricsSink, type RonResponse, type Route } from '../../src/index.js'
import { VirtualClock, until } from '../../src/testing/index.js'
import { expectEnvelope, mkReq, readJson } from './helpers.js'

const limits: PaceLimits = { minBytesPerSec: 100, rateWindowMs: 1000, requestTimeoutMs: 5000 }

/** A sink that records counters by `name{op}`. */
function recording(): MetricsSink & { counts: Map<string, number> } {
  const counts = new Map<string, number>()
  return {
    counts,
    inc(name, labels, by = 1) {
      const key = `${name}{${labels?.op ?? ''}}`
      counts.set(key, (counts.get(key) ?? 0) + by)
    },
    set() {},
    observe() {},
  }
}

const reasonOf = (e: unknown): string => (isRonError(e) ? `${e.code}:${typeof e.details.reason === 'string' ? e.details.reason : ''}` : String(e))

describe('BodyPace: the minimum rate and the deadline of one body', () => {
  it('fails a body under the minimum rate once it has been read for a window, and counts it once', () => {
    const clock = new VirtualClock(0)
    const metrics = recording()
    const pace = new BodyPace(limits, undefined, clock, metrics)
    pace.go(0)
    let failure
    // 10 bytes every 200 ms: 50 B/s against a minimum of 100.
    for (let t = 0; t <= 2000 && failure === undefined; t += 200) failure = pace.add(10, t)
    expect(failure?.code).toBe('RequestTimeout')
    expect(failure?.status).toBe(408)
    expect(failure?.details).toMatchObject({ op: 'read', reason: 'min_rate', minBytesPerSec: 100, windowMs: 1000 })
    expect(pace.check(3000)).toBe(failure)
    expect(metrics.counts.get('io_timeouts_total{read_rate}')).toBe(1)
  })

  it('lets a body at the minimum rate through however long it takes, and judges only the last window', () => {
    const clock = new VirtualClock(0)
    const pace = new BodyPace(limits, undefined, clock, noopMetrics)
    pace.go(0)
    for (let t = 0; t <= 60_000; t += 100) expect(pace.add(12, t)).toBeUndefined() // 120 B/s
    // A burst long ago does not pay for a stall now: 10 kB at once, then silence.
    const burst = new BodyPace(limits, undefined, clock, noopMetrics)
    burst.go(0)
    expect(burst.add(10_000, 0)).toBeUndefined()
    expect(burst.check(900)).toBeUndefined()
    expect(reasonOf(burst.check(2200))).toBe('RequestTimeout:min_rate')
  })

  it('does not count the time the host was not reading (its consumer was busy), nor the time before its first read', () => {
    const clock = new VirtualClock(0)
    const pace = new BodyPace(limits, undefined, clock, noopMetrics)
    // Created when the handler asked for the body, read only after a minute in a queue.
    expect(pace.check(60_000)).toBeUndefined()
    expect(pace.elapsed(60_000)).toBe(0)
    pace.go(60_000)
    expect(pace.add(50, 60_000)).toBeUndefined()
    pace.stop(60_100)
    // 30 s of the host's own backpressure: not the client's fault.
    pace.go(90_100)
    expect(pace.elapsed(90_200)).toBe(200)
    for (let t = 90_200; t <= 93_000; t += 100) expect(pace.add(15, t)).toBeUndefined()
  })

  it('sets the deadline to requestTimeoutMs plus the time the body takes at the minimum rate', () => {
    expect(bodyDeadlineMs(undefined, limits)).toBeUndefined()
    expect(bodyDeadlineMs(Infinity, limits)).toBeUndefined()
    expect(bodyDeadlineMs(0, limits)).toBe(5000)
    expect(bodyDeadlineMs(1000, limits)).toBe(15_000)
    // Storage's former upload rule, kept: 30 s window and deadline, 8 KiB/s.
    expect(bodyDeadlineMs(8192 * 60, { minBytesPerSec: 8192, rateWindowMs: 30_000, requestTimeoutMs: 30_000 })).toBe(90_000)
    const clock = new VirtualClock(0)
    const metrics = recording()
    const pace = new BodyPace({ minBytesPerSec: 1, rateWindowMs: 60_000, requestTimeoutMs: 1000 }, 10, clock, metrics)
    pace.go(0)
    expect(pace.deadlineMs).toBe(11_000)
    expect(pace.add(5, 5000)).toBeUndefined()
    const late = pace.check(11_000)
    expect(late?.details).toMatchObject({ reason: 'deadline', deadlineMs: 11_000, received: 5 })
    expect(metrics.counts.get('io_timeouts_total{read_deadline}')).toBe(1)
  })
})

type Limits = Parameters<typeof decodedBody>[1]

function nodeReq(body: PassThrough, headers: Record<string, string> = {}): RonRequest {
  return { method: 'PUT', url: '/', headers, body, remoteAddress: 'test', signal: new AbortController().signal }
}

function paced(clock: VirtualClock, over: Partial<Limits> = {}, expected?: number): Limits {
  return {
    limit: Infinity,
    ratio: 10,
    maxDecoded: 1 << 20,
    readTimeoutMs: 5000,
    clock,
    signal: new AbortController().signal,
    metrics: noopMetrics,
    pace: new BodyPace(limits, expected, clock, noopMetrics),
    ...over,
  }
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('the body readers apply the pace', () => {
  it('a node body trickled within the gap timeout is cut for its rate, at the next check after a window', async () => {
    const clock = new VirtualClock(0)
    const s = new PassThrough()
    const it = decodedBody(nodeReq(s), paced(clock))[Symbol.asyncIterator]()
    let outcome: string | undefined
    const read = (async () => {
      for (;;) {
        const r = await it.next()
        if (r.done === true) return 'done'
      }
    })().then(
      (v) => (outcome = v),
      (e: unknown) => (outcome = reasonOf(e)),
    )
    // One byte every 400 ms: never a gap of 5 s, far under 100 B/s.
    for (let t = 0; t < 3000 && outcome === undefined; t += 400) {
      s.write('x')
      await tick()
      await clock.advance(400)
    }
    await read
    expect(outcome).toBe('RequestTimeout:min_rate')
    expect(clock.now()).toBeLessThanOrEqual(1600)
    expect(s.listenerCount('data')).toBe(0)
  })

  it('a stalled node body is cut by the check timer, not left to the gap timeout', async () => {
    const clock = new VirtualClock(0)
    const s = new PassThrough()
    const it = decodedBody(nodeReq(s), paced(clock, { readTimeoutMs: 60_000 }))[Symbol.asyncIterator]()
    s.write('x'.repeat(50))
    expect((await it.next()).done).toBe(false)
    const stalled = it.next().then(
      () => 'resolved',
      (e: unknown) => reasonOf(e),
    )
    await clock.advance(1200)
    expect(await stalled).toBe('RequestTimeout:min_rate')
  })

  it('the time a node body is paused for the consumer is not held against the client', async () => {
    const clock = new VirtualClock(0)
    const s = new PassThrough()
    const it = decodedBody(nodeReq(s), paced(clock))[Symbol.asyncIterator]()
    s.write('a'.repeat(60))
    s.write('b'.repeat(60))
    s.write('c'.repeat(60))
    await tick()
    expect(s.isPaused()).toBe(true)
    // The consumer takes 20 s over its two held pieces.
    await clock.advance(20_000)
    for (let i = 0; i < 3; i++) expect((await it.next()).done).toBe(false)
    s.end()
    expect((await it.next()).done).toBe(true)
  })

  it('an in-process body (the iterator path) is cut for its rate as well', async () => {
    const clock = new VirtualClock(0)
    async function* trickle(): AsyncGenerator<Uint8Array> {
      for (;;) {
        await clock.sleep(400)
        yield Buffer.from('x')
      }
    }
    const req: RonRequest = { method: 'PUT', url: '/', headers: {}, body: trickle(), remoteAddress: 'memory', signal: new AbortController().signal }
    const it = decodedBody(req, paced(clock))[Symbol.asyncIterator]()
    const read = (async () => {
      for (;;) if ((await it.next()).done === true) return 'done'
    })().then(
      (v) => v,
      (e: unknown) => reasonOf(e),
    )
    for (let i = 0; i < 10; i++) await clock.advance(400)
    expect(await read).toBe('RequestTimeout:min_rate')
  })
})

const echo: Route = {
  method: 'POST',
  path: '/echo',
  public: true,
  handler: async (ctx) => ({ status: 200, json: await ctx.json(z.object({ n: z.number() })) }),
}
const sink: Route = {
  method: 'PUT',
  path: '/sink',
  public: true,
  bodyLimit: Infinity,
  handler: async (ctx) => {
    let n = 0
    for await (const c of ctx.stream()) n += c.byteLength
    return { status: 200, json: { n } }
  },
}

/** An in-process body that yields `chunk` every `everyMs` of virtual time, `count` times (forever when undefined). */
async function* trickle(clock: VirtualClock, everyMs: number, count?: number, chunk = 'x'): AsyncGenerator<Uint8Array> {
  for (let i = 0; count === undefined || i < count; i++) {
    await clock.sleep(everyMs)
    yield Buffer.from(chunk)
  }
}

/** Advances virtual time in steps until `p` settles; resolves with the response and the virtual time it took. */
async function settle(clock: VirtualClock, p: Promise<RonResponse>, stepMs = 100, maxMs = 120_000): Promise<{ res: RonResponse; ms: number }> {
  const start = clock.now()
  let res: RonResponse | undefined
  void p.then((r) => (res = r))
  while (res === undefined && clock.now() - start < maxMs) await clock.advance(stepMs)
  await tick()
  if (res === undefined) throw new Error(`not settled within ${maxMs} ms of virtual time`)
  return { res, ms: clock.now() - start }
}

describe('the handler: every route gets the slow-client rules', () => {
  it('regression: a JSON body trickled at 1 byte per 1.5 s is cut with 408 after one window under the defaults, not held for 60 s', async () => {
    const clock = new VirtualClock(0)
    const h = createHttpHandler({ serviceId: 't', routes: [echo], clock })
    const p = h.dispatch(mkReq('POST', '/echo', { headers: { 'content-type': 'application/json' }, body: trickle(clock, 1500) }))
    const { res, ms } = await settle(clock, p)
    expect(res.status).toBe(408)
    const e = expectEnvelope(await readJson(res), 'RequestTimeout')
    expect(e.details).toMatchObject({ reason: 'min_rate', minBytesPerSec: DEFAULT_SLOW_CLIENT_LIMITS.minBytesPerSec })
    expect(ms).toBeGreaterThanOrEqual(DEFAULT_SLOW_CLIENT_LIMITS.rateWindowMs)
    expect(ms).toBeLessThan(DEFAULT_SLOW_CLIENT_LIMITS.rateWindowMs + 1600)
  })

  it('cuts a small body past its whole-request deadline even when its window is long', async () => {
    const clock = new VirtualClock(0)
    const h = createHttpHandler({ serviceId: 't', routes: [echo], clock, limits: { minBytesPerSec: 100, rateWindowMs: 60_000, requestTimeoutMs: 1000 } })
    // 20 bytes announced: deadline 1000 + 200 ms; one byte every 300 ms.
    const p = h.dispatch(mkReq('POST', '/echo', { headers: { 'content-type': 'application/json', 'content-length': '20' }, body: trickle(clock, 300) }))
    const { res, ms } = await settle(clock, p)
    expect(res.status).toBe(408)
    expect(expectEnvelope(await readJson(res), 'RequestTimeout').details).toMatchObject({ reason: 'deadline', deadlineMs: 1200 })
    expect(ms).toBeLessThanOrEqual(1500)
  })

  it('a body at a healthy rate is read to its end however long it is', async () => {
    const clock = new VirtualClock(0)
    const h = createHttpHandler({ serviceId: 't', routes: [sink], clock, limits: { minBytesPerSec: 100, rateWindowMs: 1000 } })
    // 20 bytes every 100 ms (200 B/s) for 30 s, no length: no deadline, the rate alone.
    const p = h.dispatch(mkReq('PUT', '/sink', { body: trickle(clock, 100, 300, 'y'.repeat(20)) }))
    const { res } = await settle(clock, p)
    expect(res.status).toBe(200)
    expect(await readJson(res)).toEqual({ n: 6000 })
  })

  it('setSlowClientLimits applies to bodies read afterwards, and refuses a bad value without changing anything', async () => {
    const clock = new VirtualClock(0)
    const h = createHttpHandler({ serviceId: 't', routes: [sink], clock, limits: { minBytesPerSec: 100, rateWindowMs: 1000 } })
    expect(() => h.setSlowClientLimits({ minBytesPerSec: 0 })).toThrow(/minBytesPerSec/)
    h.setSlowClientLimits({ minBytesPerSec: 1000 })
    const p = h.dispatch(mkReq('PUT', '/sink', { body: trickle(clock, 100, 300, 'y'.repeat(20)) }))
    const { res } = await settle(clock, p)
    expect(res.status).toBe(408)
    expect(expectEnvelope(await readJson(res), 'RequestTimeout').details).toMatchObject({ reason: 'min_rate', minBytesPerSec: 1000 })
  })
})

describe('per-principal body shares', () => {
  // A 1 s window: a body still arriving after 100 ms of reading lingers and takes a share.
  const shareLimits = (max: number): HttpLimits => ({ maxBodiesPerPrincipal: max, rateWindowMs: 1000, minBytesPerSec: 10 })
  /** 50 bytes every 100 ms for 2 s: slow but well above the minimum rate. */
  const slowBody = (clock: VirtualClock): AsyncGenerator<Uint8Array> => trickle(clock, 100, 20, 'z'.repeat(50))
  const errorOf = async (p: Promise<RonResponse>): Promise<string> => {
    const res = await p
    return res.status === 200 ? '200' : `${res.status} ${String(expectEnvelope(await readJson(res), res.status === 429 ? 'Busy' : 'RequestTimeout').details.reason)}`
  }

  it('a client over its share of lingering bodies gets 429 per_principal; another client, and the same client afterwards, do not', async () => {
    const clock = new VirtualClock(0)
    const h = createHttpHandler({ serviceId: 't', routes: [sink], clock, limits: shareLimits(2) })
    const put = (ip: string): Promise<RonResponse> => h.dispatch(mkReq('PUT', '/sink', { remoteAddress: ip, body: slowBody(clock) }))
    const a1 = put('10.0.0.1')
    const a2 = put('10.0.0.1')
    await clock.advance(300) // both linger: the share is full
    const a3 = put('10.0.0.1')
    const b1 = put('10.0.0.2')
    const over = await settle(clock, a3)
    expect(over.res.status).toBe(429)
    expect(over.res.headers['retry-after']).toBe('1')
    expect(expectEnvelope(await readJson(over.res), 'Busy').details).toMatchObject({ reason: 'per_principal', limit: 2 })
    expect(over.ms).toBeLessThan(500) // refused as soon as it lingers, not at its end
    for (const p of [b1, a1, a2]) expect(await errorOf(settle(clock, p).then((r) => r.res))).toBe('200')
    expect((await settle(clock, put('10.0.0.1'))).res.status).toBe(200)
  })

  it('bodies read at line speed never take a share, however many arrive together', async () => {
    // A clock that never moves: however long 100 dispatches take on a loaded machine, no body lingers.
    const h = createHttpHandler({ serviceId: 't', routes: [sink], clock: new VirtualClock(0), limits: shareLimits(2) })
    const all = await Promise.all(Array.from({ length: 100 }, () => h.dispatch(mkReq('PUT', '/sink', { remoteAddress: '10.0.0.1', body: 'fast' }))))
    expect(all.map((r) => r.status)).toEqual(Array(100).fill(200))
  })

  it('the principal is the route-named one (an API key client) when set, whatever the address', async () => {
    const clock = new VirtualClock(0)
    const keyed: Route = {
      ...sink,
      path: '/keyed',
      handler: async (ctx) => {
        ctx.setPrincipal(`key:${String(ctx.req.headers['x-api-key'])}`)
        let n = 0
        for await (const c of ctx.stream()) n += c.byteLength
        return { status: 200, json: { n } }
      },
    }
    const h = createHttpHandler({ serviceId: 't', routes: [keyed], clock, limits: shareLimits(1) })
    const put = (ip: string, key: string): Promise<RonResponse> => h.dispatch(mkReq('PUT', '/keyed', { remoteAddress: ip, headers: { 'x-api-key': key }, body: slowBody(clock) }))
    const first = put('10.0.0.1', 'k1')
    await clock.advance(300)
    const sameKey = put('10.0.0.9', 'k1')
    const otherKey = put('10.0.0.1', 'k2')
    expect(await errorOf(settle(clock, sameKey).then((r) => r.res))).toBe('429 per_principal')
    expect(await errorOf(settle(clock, otherKey).then((r) => r.res))).toBe('200')
    expect(await errorOf(settle(clock, first).then((r) => r.res))).toBe('200')
  })

  it('a share is given back when the handler answers without reading the body to its end', async () => {
    const clock = new VirtualClock(0)
    const early: Route = {
      ...sink,
      path: '/early',
      handler: async (ctx) => {
        const it = ctx.stream()[Symbol.asyncIterator]()
        for (let i = 0; i < 5; i++) await it.next() // lingers, then answers without finishing (or returning) the iterator
        return { status: 202 }
      },
    }
    const h = createHttpHandler({ serviceId: 't', routes: [early, sink], clock, limits: shareLimits(1) })
    const first = await settle(clock, h.dispatch(mkReq('PUT', '/early', { body: slowBody(clock) })))
    expect(first.res.status).toBe(202)
    const next = await settle(clock, h.dispatch(mkReq('PUT', '/sink', { body: slowBody(clock) })))
    expect(next.res.status).toBe(200)
  })
})

describe('JSON routes take JSON', () => {
  const h = createHttpHandler({ serviceId: 't', routes: [echo] })
  const post = (headers: Record<string, string>, body?: string | AsyncIterable<Uint8Array>): Promise<RonResponse> =>
    h.dispatch(mkReq('POST', '/echo', { headers, ...(body === undefined ? {} : { body }) }))

  it('refuses a body with another Content-Type, or none, with 415 UnsupportedMediaType', async () => {
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/json']) {
      const res = await post({ 'content-type': ct, 'content-length': '7' }, '{"n":1}')
      expect(res.status, ct).toBe(415)
      expect(expectEnvelope(await readJson(res), 'UnsupportedMediaType').details).toEqual({ contentType: ct })
    }
    const none = await post({ 'content-length': '7' }, '{"n":1}')
    expect(none.status).toBe(415)
    // An in-process stream announces nothing: refused once its bytes are seen.
    async function* stream(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('{"n":1}')
    }
    expect((await post({}, stream())).status).toBe(415)
  })

  it('accepts application/json with parameters and +json types, and does not check a request without a body', async () => {
    for (const ct of ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/merge-patch+json']) {
      const res = await post({ 'content-type': ct }, '{"n":1}')
      expect(res.status, ct).toBe(200)
    }
    const bodiless = await post({ 'content-type': 'text/plain' })
    expect(bodiless.status).toBe(400)
    expect(expectEnvelope(await readJson(bodiless), 'Malformed').message).toMatch(/empty/)
  })
})

describe('the service host', () => {
  it('passes its limits to the handler and setSlowClientLimits reaches bodies read after it (also before the first request)', async () => {
    const clock = new VirtualClock(0)
    const host = createServiceHost({ id: 't', version: '1', topology: { service: 't', tasks: [], channels: [] }, clock, limits: { minBytesPerSec: 10, rateWindowMs: 1000 } })
    host.routes([sink])
    expect(() => host.setSlowClientLimits({ rateWindowMs: -1 })).toThrow(/rateWindowMs/)
    host.setSlowClientLimits({ minBytesPerSec: 1000 })
    const { res } = await settle(clock, host.service.dispatch(mkReq('PUT', '/sink', { body: trickle(clock, 100, 50, 'y'.repeat(20)) })))
    expect(res.status).toBe(408)
    expect(expectEnvelope(await readJson(res), 'RequestTimeout').details).toMatchObject({ minBytesPerSec: 1000 })
    host.setSlowClientLimits({ minBytesPerSec: 10 })
    const ok = await settle(clock, host.service.dispatch(mkReq('PUT', '/sink', { body: trickle(clock, 100, 50, 'y'.repeat(20)) })))
    expect(ok.res.status).toBe(200)
    await settleClose(clock, host.service.close())
  })
})

async function settleClose(clock: VirtualClock, p: Promise<void>): Promise<void> {
  let done = false
  void p.then(() => (done = true))
  for (let i = 0; i < 100 && !done; i++) await clock.advance(100)
  await p
}

describe('real sockets', () => {
  async function served(l: HttpLimits, clock?: VirtualClock): Promise<{ url: URL; close(): Promise<void> }> {
    const h = createHttpHandler({ serviceId: 't', routes: [sink, echo], limits: l, ...(clock && { clock }) })
    const srv = await serve(h, { drainDeadlineMs: 200 })
    return { url: new URL(srv.url), close: () => srv.close() }
  }

  it('a trickling upload is answered 408 RequestTimeout (min_rate) and its connection closed', async () => {
    const { connect } = await import('node:net')
    // Real socket, virtual time: the pace is judged on the handler's clock, so a loaded machine
    // cannot stretch or shrink the window the bytes arrive in.
    const clock = new VirtualClock(0)
    const s = await served({ minBytesPerSec: 1000, rateWindowMs: 400, readTimeoutMs: 5000 }, clock)
    const sock = connect(Number(s.url.port), s.url.hostname)
    let got = ''
    let isClosed = false
    sock.setEncoding('utf8').on('data', (d: string) => (got += d))
    const closed = new Promise<void>((r) => sock.once('close', () => ((isClosed = true), r())))
    sock.write('PUT /sink HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n')
    // 1 byte per 50 virtual ms (20 B/s, far under 1000 B/s), until the server gives up.
    for (let i = 0; i < 400 && !isClosed; i++) {
      if (sock.writable) await new Promise<void>((r) => sock.write('x', () => r()))
      await until(() => isClosed || clock.nextAt !== undefined, 'the handler is waiting on its clock')
      await clock.advance(50)
    }
    await closed
    expect(got).toMatch(/^HTTP\/1.1 408 /)
    expect(got).toMatch(/connection: close/i)
    const body = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)) as unknown
    expect(expectEnvelope(body, 'RequestTimeout').details).toMatchObject({ reason: 'min_rate' })
    await s.close()
  })

  it("Node's own refusals carry the error envelope: 431 for oversized headers, 400 for a malformed request", async () => {
    const { connect } = await import('node:net')
    const h = createHttpHandler({ serviceId: 't', routes: [echo] })
    const srv = await serve(h, { maxHeaderSize: 2048 })
    const url = new URL(srv.url)
    const exchange = (raw: string): Promise<string> =>
      new Promise((resolve) => {
        const sock = connect(Number(url.port), url.hostname)
        let got = ''
        sock.setEncoding('utf8').on('data', (d: string) => (got += d))
        sock.once('close', () => resolve(got))
        sock.on('error', () => resolve(got))
        sock.write(raw)
      })
    const big = await exchange(`GET /echo HTTP/1.1\r\nhost: x\r\nx-pad: ${'a'.repeat(4096)}\r\n\r\n`)
    expect(big).toMatch(/^HTTP\/1.1 431 Request Header Fields Too Large\r\n/)
    expect(big).toMatch(/x-corr-id: \S+/i)
    const e = expectEnvelope(JSON.parse(big.slice(big.indexOf('\r\n\r\n') + 4)), 'OverLimit')
    expect(e.details).toMatchObject({ source: 'headers', limit: 2048 })
    const bad = await exchange('NOT A REQUEST\r\n\r\n')
    expect(bad).toMatch(/^HTTP\/1.1 400 Bad Request\r\n/)
    expect(expectEnvelope(JSON.parse(bad.slice(bad.indexOf('\r\n\r\n') + 4)), 'Malformed').details.reason).toMatch(/^HPE_/)
    await srv.close()
  })

  it('headers not received within the read timeout are answered 408 with the envelope', async () => {
    const { connect } = await import('node:net')
    const h = createHttpHandler({ serviceId: 't', routes: [echo] })
    const srv = await serve(h, { readTimeoutMs: 200 })
    const url = new URL(srv.url)
    const got = await new Promise<string>((resolve) => {
      const sock = connect(Number(url.port), url.hostname)
      let out = ''
      sock.setEncoding('utf8').on('data', (d: string) => (out += d))
      sock.once('close', () => resolve(out))
      sock.write('GET /echo HTTP/1.1\r\nhost: x\r\n') // never finished
    })
    expect(got).toMatch(/^HTTP\/1.1 408 /)
    expect(expectEnvelope(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)), 'RequestTimeout').details).toMatchObject({ reason: 'headers' })
    await srv.close()
  })
})
