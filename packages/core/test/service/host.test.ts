import { afterEach, describe, expect, it } from 'vitest'
import {
  MemoryTransport,
  RouteConfigError,
  createServiceHost,
  isRonError,
  mergeExpositions,
  throwIfError,
  type RonError,
  type Route,
  type ServiceHost,
  type ServiceHostOptions,
  type Topology,
  type TransportResponse,
} from '@ron/core'
import { VirtualClock, abortListenerCount, createTestIssuer, deferred } from '@ron/core/testing'
import { sampleValue } from '../metrics/prom-text.js'

const topology = (capacity = 1, concurrency = 1): Topology => ({
  service: 'svc',
  tasks: [{ name: 'work-worker', count: concurrency, criticality: 'critical', description: 'runs queued jobs' }],
  channels: [
    { name: 'work', kind: 'mpsc', capacity, producers: ['http'], consumers: ['work-worker'], overflow: 'reject-new', pool: { concurrency } },
    { name: 'events', kind: 'broadcast', capacity: 8, producers: ['work-worker'], consumers: ['sse'], overflow: 'drop-oldest' },
  ],
})

/** A queued route whose handler reports that it started and waits for its gate (ignoring its signal). */
function gatedJob(): { route: Route; started: Array<Promise<void>>; gates: Array<() => void> } {
  const started: Array<() => void> = []
  const startedP: Array<Promise<void>> = []
  const gates: Array<() => void> = []
  const waits: Array<Promise<void>> = []
  for (let i = 0; i < 8; i++) {
    const s = deferred()
    started.push(s.resolve)
    startedP.push(s.promise)
    const g = deferred()
    gates.push(g.resolve)
    waits.push(g.promise)
  }
  let n = 0
  const route: Route = {
    method: 'POST',
    path: '/job',
    public: true,
    queue: 'work',
    handler: async () => {
      const i = n++
      started[i]!()
      await waits[i]
      return { status: 200, json: { job: i } }
    },
  }
  return { route, started: startedP, gates }
}

const errorOf = async (res: TransportResponse): Promise<RonError> => (await throwIfError(res).catch((e: unknown) => e)) as RonError

describe('createServiceHost', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  function setup(extra: Partial<ServiceHostOptions> = {}, routes: Route[] = []): { host: ServiceHost; t: MemoryTransport } {
    const host = createServiceHost({ id: 'svc', version: '1.2.3', topology: topology(), ...extra })
    host.routes(routes)
    const t = new MemoryTransport(extra.clock === undefined ? {} : { clock: extra.clock })
    t.mount('svc', host.service)
    cleanups.push(() => t.close())
    return { host, t }
  }

  it('answers 429 Busy with Retry-After when the work queue is full, while /healthz and /metrics still answer 200', async () => {
    const job = gatedJob()
    const { host, t } = setup({}, [job.route])
    cleanups.push(() => host.service.close())
    const first = t.request('svc', { method: 'POST', path: '/job' })
    await job.started[0]
    const second = t.request('svc', { method: 'POST', path: '/job' })
    await expect.poll(() => host.pool('work').depth).toBe(1)

    const third = await t.request('svc', { method: 'POST', path: '/job' })
    expect(third.status).toBe(429)
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect((await errorOf(third)).code).toBe('Busy')

    const healthz = await t.request('svc', { method: 'GET', path: '/healthz' })
    expect(healthz.status).toBe(200)
    expect(await healthz.json()).toEqual({ live: true })
    const metrics = await t.request('svc', { method: 'GET', path: '/metrics' })
    expect(metrics.status).toBe(200)
    expect(metrics.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
    const text = await metrics.text()
    expect(sampleValue(text, 'http_requests_total', { route: '/job', method: 'POST', status: '429', service: 'svc' })).toBe(1)
    expect(sampleValue(text, 'queue_depth', { queue: 'work', service: 'svc' })).toBe(1)
    expect(sampleValue(text, 'busy_rejections_total', { service: 'svc' })).toBe(1)

    job.gates[0]!()
    job.gates[1]!()
    expect((await first).status).toBe(200)
    expect((await second).status).toBe(200)
  })

  it('turns /healthz 503 with the reason when a critical task crash-loops', async () => {
    const clock = new VirtualClock()
    const { host, t } = setup({ clock })
    cleanups.push(() => host.service.close())
    host.supervisor.spawn('flaky', () => Promise.reject(new Error('boom')), { critical: true })
    for (let i = 0; i < 40 && host.service.health().live; i++) await clock.advance(1000)
    expect(host.service.health()).toMatchObject({ live: false, ready: false })

    const healthz = await t.request('svc', { method: 'GET', path: '/healthz' })
    expect(healthz.status).toBe(503)
    expect(healthz.headers['retry-after']).toBeDefined()
    const body = await healthz.json<{ live: boolean; reason: string }>()
    expect(body.live).toBe(false)
    expect(body.reason).toContain('flaky')
    const readyz = await t.request('svc', { method: 'GET', path: '/readyz' })
    expect(readyz.status).toBe(503)
    expect(await readyz.json()).toMatchObject({ ready: false, writeReady: false })
  })

  it('close() lets an in-flight request finish, refuses new ones with 503 Draining, and aborts and counts a straggler at the deadline', async () => {
    const clock = new VirtualClock()
    const job = gatedJob()
    const host = createServiceHost({ id: 'svc', version: '1', topology: topology(4, 2), clock, drainDeadlineMs: 1000 })
    host.routes([job.route])
    const t = new MemoryTransport({ clock, timeoutMs: 60_000 })
    t.mount('svc', host.service)
    cleanups.push(() => t.close())
    const order: string[] = []
    host.onClose(() => void order.push('first'))
    host.onClose(() => void order.push('second'))

    const inFlight = t.request('svc', { method: 'POST', path: '/job' })
    const straggler = t.request('svc', { method: 'POST', path: '/job' }).catch((e: unknown) => e)
    await Promise.all([job.started[0], job.started[1]])

    let closed = false
    const closing = host.service.close().then(() => void (closed = true))
    expect(host.closing).toBe(true)
    expect(host.service.health()).toMatchObject({ ready: false, writeReady: false })
    const refused = await t.request('svc', { method: 'POST', path: '/job' })
    expect(refused.status).toBe(503)
    expect(refused.headers['retry-after']).toBeDefined()
    expect((await errorOf(refused)).code).toBe('Draining')

    job.gates[0]!()
    expect((await inFlight).status).toBe(200)
    await clock.advance(999)
    expect(closed).toBe(false)
    expect(host.signal.aborted).toBe(false)
    for (let i = 0; i < 20 && !closed; i++) await clock.advance(100)
    await closing
    expect(host.signal.aborted).toBe(true)
    expect(order).toEqual(['second', 'first'])

    const text = await host.metrics.text()
    expect(sampleValue(text, 'tasks_aborted_total', { kind: 'work-worker', service: 'svc' })).toBe(1)
    await host.service.close() // a second close joins and is harmless
    const after = await t.request('svc', { method: 'GET', path: '/hello' })
    expect(after.status).toBe(503)
    expect(['Closed', 'Draining']).toContain((await errorOf(after)).code)
    job.gates[1]!()
    await straggler
    expect(clock.pending).toBe(0) // no timer left behind by the host or the transport
  })

  it('aborts a direct (unqueued) request still running at the drain deadline through its signal, and counts it', async () => {
    const clock = new VirtualClock()
    const started = deferred()
    let sawAbort = false
    const host = createServiceHost({ id: 'svc', version: '1', topology: topology(), clock, drainDeadlineMs: 500 })
    host.routes([
      {
        method: 'GET',
        path: '/hang',
        handler: async (ctx) => {
          started.resolve()
          await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }))
          sawAbort = true
          return { status: 200, json: {} }
        },
      },
    ])
    const t = new MemoryTransport({ clock, timeoutMs: 60_000 })
    t.mount('svc', host.service)
    cleanups.push(() => t.close())
    const pending = t.request('svc', { method: 'GET', path: '/hang' }).then(
      (r) => r.status,
      (e: unknown) => e,
    )
    await started.promise
    let closed = false
    const closing = host.service.close().then(() => void (closed = true))
    await clock.advance(499)
    expect(sawAbort).toBe(false)
    for (let i = 0; i < 10 && !closed; i++) await clock.advance(100)
    await closing
    expect(sawAbort).toBe(true)
    expect(sampleValue(await host.metrics.text(), 'tasks_aborted_total', { kind: 'request' })).toBe(1)
    await pending
  })

  it("in-process requests leave no listener on the host's signal once their exchange finishes (buffered, streamed, abandoned)", async () => {
    const host = createServiceHost({ id: 'svc', version: '1', topology: topology(4, 2) })
    const streamed = (): AsyncIterable<Uint8Array> => (async function* () {
      yield Buffer.from('a')
      yield Buffer.from('b')
    })()
    host.routes([
      { method: 'GET', path: '/json', handler: () => ({ status: 200, json: { ok: true } }) },
      { method: 'GET', path: '/stream', queue: 'work', handler: () => ({ status: 200, body: streamed() }) },
    ])
    const baseline = abortListenerCount(host.signal)
    const caller = new AbortController()
    const req = (path: string) => ({ method: 'GET', url: path, headers: {}, body: (async function* () {})(), remoteAddress: 'memory', signal: caller.signal })
    for (let i = 0; i < 20; i++) {
      const a = await host.service.dispatch(req('/json'))
      for await (const _ of a.body) void _
      const b = await host.service.dispatch(req('/stream'))
      const chunks: string[] = []
      for await (const c of b.body) chunks.push(Buffer.from(c).toString())
      expect(chunks.join('')).toBe('ab')
      const c = await host.service.dispatch(req('/stream'))
      await c.body[Symbol.asyncIterator]().return?.()
    }
    expect(abortListenerCount(host.signal)).toBe(baseline)
    expect(abortListenerCount(caller.signal)).toBe(0)
    await host.service.close()
  })

  it('counts a queued request cut off at the drain deadline in tasks_aborted_total even when it honours the abort, not in tasks_canceled_total', async () => {
    const clock = new VirtualClock()
    const started = deferred()
    const host = createServiceHost({ id: 'svc', version: '1', topology: topology(1, 2), clock, drainDeadlineMs: 500 })
    host.routes([
      {
        method: 'POST',
        path: '/job',
        public: true,
        queue: 'work',
        handler: async (ctx) => {
          started.resolve()
          await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }))
          throw ctx.signal.reason
        },
      },
    ])
    const t = new MemoryTransport({ clock, timeoutMs: 60_000 })
    t.mount('svc', host.service)
    cleanups.push(() => t.close())
    const pending = t.request('svc', { method: 'POST', path: '/job' }).then((r) => r.dump().then(() => r.status))
    await started.promise
    const closing = host.service.close()
    await clock.advance(500)
    await closing
    expect(await pending).toBe(503)
    const text = await host.metrics.text()
    expect(sampleValue(text, 'tasks_aborted_total', { kind: 'work-worker' })).toBe(1)
    // Not a cancellation (the idle worker ends when the stopped queue runs dry: completed).
    expect(sampleValue(text, 'tasks_canceled_total', { kind: 'work-worker' }) ?? 0).toBe(0)
  })

  it('keeps separate metrics for two instances of a service in one process, and merges them into one exposition', async () => {
    const a = setup({}, [{ method: 'GET', path: '/hello', handler: () => ({ status: 200, json: {} }) }])
    const b = createServiceHost({ id: 'svc-b', version: '1', topology: topology() })
    b.routes([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, json: {} }) }])
    cleanups.push(() => a.host.service.close(), () => b.service.close())
    for (let i = 0; i < 3; i++) await (await a.t.request('svc', { method: 'GET', path: '/hello' })).dump()
    const textA = await a.host.metrics.text()
    const textB = await b.metrics.text()
    expect(sampleValue(textA, 'http_requests_total', { route: '/hello', service: 'svc' })).toBe(3)
    expect(sampleValue(textB, 'http_requests_total', { route: '/hello' })).toBeUndefined()
    expect(a.host.metrics.registry).not.toBe(b.metrics.registry)
    const merged = mergeExpositions([await a.host.service.metricsText(), await b.service.metricsText()])
    expect(merged.match(/^# TYPE http_requests_total /gm)).toHaveLength(1)
    expect(merged.match(/^# TYPE queue_depth /gm)?.length ?? 0).toBeLessThanOrEqual(1)
    expect(merged).toContain('service="svc"')
    expect(merged).toContain('service="svc-b"')
  })

  it('answers 401 on scoped routes without auth configured, and checks tokens when keys are given', async () => {
    const route: Route = { method: 'POST', path: '/w', scope: 'svc:write', handler: () => ({ status: 204 }) }
    const open = setup({}, [route])
    cleanups.push(() => open.host.service.close())
    const noAuth = await open.t.request('svc', { method: 'POST', path: '/w', headers: { authorization: 'Bearer x.y.z' } })
    expect(noAuth.status).toBe(401)
    await noAuth.dump()

    const issuer = createTestIssuer()
    const host = createServiceHost({ id: 'svc', version: '1', topology: topology(), auth: { keys: issuer.keys } })
    host.routes([route])
    cleanups.push(() => host.service.close())
    const t = new MemoryTransport()
    t.mount('svc', host.service)
    const missing = await t.request('svc', { method: 'POST', path: '/w' })
    expect((await errorOf(missing)).code).toBe('Unauthorized')
    const wrongScope = await t.request('svc', { method: 'POST', path: '/w', headers: { authorization: `Bearer ${issuer.mint({ scope: 'svc:read', aud: 'svc' })}` } })
    expect((await errorOf(wrongScope)).code).toBe('Forbidden')
    const ok = await t.request('svc', { method: 'POST', path: '/w', headers: { authorization: `Bearer ${issuer.mint({ scope: 'svc:write', aud: 'svc' })}` } })
    expect(ok.status).toBe(204)
  })

  it('regression: enforces method and path caveats of attenuated tokens on every scoped route', async () => {
    const issuer = createTestIssuer()
    const host = createServiceHost({ id: 'svc', version: '1', topology: topology(), auth: { keys: issuer.keys } })
    host.routes([
      { method: 'DELETE', path: '/o/:id', scope: 'svc:admin', handler: () => ({ status: 204 }) },
      { method: 'POST', path: '/o/:id/pin', scope: 'svc:admin', handler: () => ({ status: 200, json: {} }) },
    ])
    cleanups.push(() => host.service.close())
    const t = new MemoryTransport()
    t.mount('svc', host.service)
    const call = async (method: string, path: string, ron: Record<string, unknown>): Promise<number> => {
      const token = issuer.mint({ scope: 'svc:admin', aud: 'svc', ron })
      const res = await t.request('svc', { method, path, headers: { authorization: `Bearer ${token}` } })
      await res.dump()
      return res.status
    }
    expect(await call('DELETE', '/o/a', { methods: ['GET'] })).toBe(403)
    expect(await call('POST', '/o/a/pin', { pathPrefix: '/o/b' })).toBe(403)
    expect(await call('DELETE', '/o/ab?x=1', { pathPrefix: '/o/a' })).toBe(403)
    expect(await call('DELETE', '/o/a?x=1', { pathPrefix: '/o/a', methods: ['DELETE'] })).toBe(204)
    expect(await call('POST', '/o/a/pin', { pathPrefix: '/o/a' })).toBe(200)
  })

  it('serves /version and /readyz from readiness dependencies, bypassing routes', async () => {
    const { host, t } = setup()
    cleanups.push(() => host.service.close())
    const version = await t.request('svc', { method: 'GET', path: '/version' })
    expect(await version.json()).toEqual({ service: 'svc', version: '1.2.3', node: process.version })
    host.readiness.declare('disk', 'write')
    const notReady = await t.request('svc', { method: 'GET', path: '/readyz' })
    expect(notReady.status).toBe(200)
    expect(await notReady.json()).toMatchObject({ ready: true, writeReady: false, missing: ['disk'] })
    host.readiness.declare('peers', 'both')
    const down = await t.request('svc', { method: 'GET', path: '/readyz' })
    expect(down.status).toBe(503)
    expect(down.headers['retry-after']).toBe('1')
    expect(await down.json()).toMatchObject({ ready: false, writeReady: false, missing: ['disk', 'peers'] })
  })

  it('reports a stale revocation feed in readiness: write-gating `revocations`, reason revocation_stale, and ready again once synced', async () => {
    const clock = new VirtualClock(1_800_000_000_000)
    const issuer = createTestIssuer({ clock })
    let stale = true
    const revocations = { isRevoked: () => false, isStale: () => stale }
    const { host, t } = setup({ clock, auth: { verifier: issuer.verifier({ revocations }) } })
    cleanups.push(() => host.service.close())
    expect(host.service.health()).toMatchObject({ ready: true, writeReady: false, missing: ['revocations'], reason: 'revocations: revocation_stale' })
    const res = await t.request('svc', { method: 'GET', path: '/readyz' })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ ready: true, writeReady: false, missing: ['revocations'] })
    stale = false
    const fresh = await t.request('svc', { method: 'GET', path: '/readyz' })
    expect(await fresh.json()).toMatchObject({ ready: true, writeReady: true, missing: [] })
    expect(host.service.health()).toMatchObject({ writeReady: true, missing: [] })
  })

  it('validates queue names and refuses new routes after the first request', async () => {
    const { host, t } = setup()
    cleanups.push(() => host.service.close())
    expect(() => host.routes([{ method: 'GET', path: '/q', queue: 'nope', handler: () => ({ status: 200 }) }])).toThrow(/nope/)
    expect(() => host.routes([{ method: 'DELETE', path: '/x', handler: () => ({ status: 204 }) }])).toThrow(RouteConfigError)
    expect(() => host.broadcast('work')).toThrow(/broadcast/)
    expect(host.broadcast('events')).toBe(host.broadcast('events'))
    await (await t.request('svc', { method: 'GET', path: '/healthz' })).dump()
    expect(() => host.routes([{ method: 'GET', path: '/late', handler: () => ({ status: 200 }) }])).toThrow(/before the first request/)
    expect(host.service.describe()).toEqual(topology())
    expect(isRonError(await t.request('svc', { method: 'GET', path: '/missing' }).then(errorOf), 'NotFound')).toBe(true)
  })
})

describe('built-in endpoints', () => {
  it('answers each built-in path, and routes every other path (shorter, longer or of the same length) to the service', async () => {
    const host = createServiceHost({ id: 'svc', version: '1.2.3', topology: { service: 'svc', tasks: [], channels: [] } })
    const paths = ['/h', '/hello', '/healthy', '/versions', '/metricz', '/registry/head']
    host.routes(paths.map((path) => ({ method: 'GET' as const, path, public: true, handler: () => ({ status: 200, json: { route: path } }) })))
    const t = new MemoryTransport()
    t.mount('svc', host.service)
    try {
      for (const path of ['/healthz', '/readyz', '/metrics', '/version']) {
        const r = await t.request('svc', { method: 'GET', path })
        expect(r.status, path).toBe(200)
        const text = Buffer.from(await r.bytes()).toString('utf8')
        expect(text, path).not.toContain('"route"')
        if (path === '/version') expect(JSON.parse(text)).toMatchObject({ service: 'svc', version: '1.2.3' })
      }
      for (const path of paths) {
        const r = await t.request('svc', { method: 'GET', path })
        expect(await r.json(), path).toEqual({ route: path })
      }
    } finally {
      await host.service.close()
      await t.close()
    }
  })
})
