/**
 * The service contract (issue 21) as the host implements it: the base config applied by the
 * host, the runtime argument, the drain with its read window and shed order, readiness derived
 * from declared dependencies, reload coalescing, the metrics declaration.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, createServiceHost, isRonError, metricValue, noTransport, serviceBaseShape, type Topology } from '@ron/core'
import { RecordingMetrics, VirtualClock, createTestIssuer, deferred, readRepoFile, serviceConformance } from '@ron/core/testing'
import { z } from 'zod'
import * as helloEntry from './fixtures/hello-service.js'
import { createHelloService, HELLO_CONCURRENCY, HELLO_README, type HelloConfig, type HelloRuntime, type HelloService } from './fixtures/hello-service.js'

const issuer = createTestIssuer()
const token = issuer.mint({ scope: 'hello:write', aud: 'hello' })
const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
const note = (n = 'x'): { method: string; path: string; headers: Record<string, string>; body: string } => ({ method: 'POST', path: '/notes', headers: auth, body: JSON.stringify({ note: n }) })

describe('the service contract (core host)', () => {
  const open: Array<{ svc: HelloService; t: MemoryTransport; clock: VirtualClock }> = []
  afterEach(async () => {
    for (const o of open.splice(0)) {
      const done = o.svc.close()
      for (let i = 0; i < 20; i++) await o.clock.advance(5000)
      await done
      await o.t.close()
    }
  })

  async function start(config: HelloConfig = {}, runtime: HelloRuntime = {}): Promise<{ svc: HelloService; t: MemoryTransport; clock: VirtualClock; send: (r: { method: string; path: string; headers?: Record<string, string>; body?: string }) => ReturnType<MemoryTransport['request']> }> {
    const clock = new VirtualClock(1_700_000_000_000)
    const svc = await createHelloService(config, undefined, { clock, auth: { keys: issuer.keys }, ...runtime })
    const t = new MemoryTransport()
    t.mount('hello', svc)
    open.push({ svc, t, clock })
    return { svc, t, clock, send: (r) => t.request('hello', r) }
  }

  describe('base config applied by the host', () => {
    it('http.jsonBodyLimit (a per-service default) answers 413 OverLimit', async () => {
      const { send } = await start()
      const res = await send(note('x'.repeat(5000)))
      expect(res.status).toBe(413)
      expect(await res.json()).toMatchObject({ error: { code: 'OverLimit' } })
    })

    it('http.maxInflight and http.maxRps answer 429 with their reason, counted by route; both reload live', async () => {
      const { svc, send, clock } = await start({ http: { maxRps: 2 } })
      expect((await send({ method: 'GET', path: '/hello' })).status).toBe(200)
      expect((await send({ method: 'GET', path: '/hello' })).status).toBe(200)
      const over = await send({ method: 'GET', path: '/hello' })
      expect(over.status).toBe(429)
      expect(over.headers['retry-after']).toBeDefined()
      expect(await over.json()).toMatchObject({ error: { code: 'Busy', details: { reason: 'max_rps', limit: 2 } } })
      expect(metricValue(await svc.metricsText(), 'busy_rejections_total', { endpoint: '/hello' })).toBe(1)
      // Unmatched requests are not admitted: a 404 never takes a rate token.
      await clock.advance(1000)
      expect((await send({ method: 'GET', path: '/nope' })).status).toBe(404)
      await svc.reload({ http: { maxRps: 1000 } })
      for (let i = 0; i < 5; i++) expect((await send({ method: 'GET', path: '/hello' })).status).toBe(200)
    })

    it('http.maxInflight counts a request until its streamed body is consumed, and reloads live', async () => {
      const schema = z.strictObject({ ...serviceBaseShape() })
      const host = createServiceHost({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] }, config: { schema, input: { http: { maxInflight: 1 } }, extendsBase: true } })
      async function* body(): AsyncGenerator<Uint8Array> {
        yield await Promise.resolve(new Uint8Array([1]))
        yield new Uint8Array([2])
      }
      host.routes([{ method: 'GET', path: '/s', handler: () => ({ status: 200, body: body() }) }])
      const t = new MemoryTransport()
      t.mount('svc', host.service)
      const held = await t.request('svc', { method: 'GET', path: '/s' })
      const over = await t.request('svc', { method: 'GET', path: '/s' })
      expect(over.status).toBe(429)
      expect(await over.json()).toMatchObject({ error: { code: 'Busy', details: { reason: 'max_inflight', limit: 1 } } })
      await held.dump()
      const next = await t.request('svc', { method: 'GET', path: '/s' })
      expect(next.status).toBe(200)
      await host.service.reload({ http: { maxInflight: 2 } })
      const two = await t.request('svc', { method: 'GET', path: '/s' })
      expect(two.status).toBe(200)
      await Promise.all([next.dump(), two.dump()])
      await host.service.close()
      await t.close()
    })

    it('admission slots come back once per request, per IP and through the gate once a reload turns it on', async () => {
      const schema = z.strictObject({ ...serviceBaseShape() })
      const host = createServiceHost({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] }, config: { schema, input: { http: { maxConcurrentPerIp: 2 } }, extendsBase: true } })
      async function* body(): AsyncGenerator<Uint8Array> {
        yield await Promise.resolve(new Uint8Array([1]))
      }
      host.routes([
        { method: 'GET', path: '/s', handler: () => ({ status: 200, body: body() }) },
        { method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) },
      ])
      const t = new MemoryTransport()
      t.mount('svc', host.service)
      const busy = async (reason: string): Promise<void> => {
        const r = await t.request('svc', { method: 'GET', path: '/hello' })
        expect(r.status).toBe(429)
        expect(await r.json()).toMatchObject({ error: { code: 'Busy', details: { reason } } })
      }
      // Many requests from one address, one after another: each gives its per-IP slot back.
      for (let i = 0; i < 20; i++) expect((await t.request('svc', { method: 'GET', path: '/hello' })).status).toBe(200)
      const held = [await t.request('svc', { method: 'GET', path: '/s' }), await t.request('svc', { method: 'GET', path: '/s' })]
      await busy('per_ip')
      await Promise.all(held.map((r) => r.dump()))
      expect((await t.request('svc', { method: 'GET', path: '/hello' })).status).toBe(200)
      // The gate turned on by a reload: requests now hold a gate slot too, and give both back.
      await host.service.reload({ http: { maxInflight: 1 } })
      for (let i = 0; i < 5; i++) expect((await t.request('svc', { method: 'GET', path: '/hello' })).status).toBe(200)
      const gated = await t.request('svc', { method: 'GET', path: '/s' })
      await busy('max_inflight')
      await gated.dump()
      expect((await t.request('svc', { method: 'GET', path: '/hello' })).status).toBe(200)
      await host.service.close() // resolves only once every admitted request is released (in flight 0)
      await t.close()
    })

    it('cors comes from the config and reloads; base keys that shape the handler are immutable', async () => {
      const { svc, send } = await start({ cors: { writeOrigins: ['https://a.example'] } })
      const pre = (origin: string): Promise<Awaited<ReturnType<typeof send>>> =>
        send({ method: 'OPTIONS', path: '/notes', headers: { origin, 'access-control-request-method': 'POST' } })
      expect((await pre('https://a.example')).headers['access-control-allow-origin']).toBe('https://a.example')
      expect((await pre('https://b.example')).status).toBe(403)
      await svc.reload({ cors: { writeOrigins: ['https://b.example'] } })
      expect((await pre('https://b.example')).headers['access-control-allow-origin']).toBe('https://b.example')
      expect((await pre('https://a.example')).status).toBe(403)
      await expect(svc.reload({ http: { jsonBodyLimit: 10 } })).rejects.toMatchObject({ code: 'Malformed', details: { reason: 'immutable', path: 'http.jsonBodyLimit' } })
      await expect(svc.reload({ dataDir: '/x' })).rejects.toMatchObject({ details: { reason: 'immutable', path: 'dataDir' } })
    })

    it('exposes a listener policy from the http keys', async () => {
      const { svc } = await start({ http: { idleTimeoutMs: '2s', maxConnections: 7, maxConcurrentPerIp: 3 } })
      expect(svc.listener).toMatchObject({ idleTimeoutMs: 2000, maxConnections: 7, maxConnectionsPerIp: 3, readTimeoutMs: 5000 })
      expect(svc.listener?.intakeStopped.aborted).toBe(false)
    })

    it('refuses extendsBase on a schema without the base keys', () => {
      expect(() =>
        createServiceHost({ id: 'x', version: '1', topology: { service: 'x', tasks: [], channels: [] }, config: { schema: z.strictObject({ a: z.number().default(1) }), extendsBase: true } }),
      ).toThrow(/serviceBaseShape/)
    })
  })

  describe('runtime argument', () => {
    it('takes the clock, auth and a metrics sink that sees what the primitives report', async () => {
      const sink = new RecordingMetrics()
      const { send } = await start({ http: { maxRps: 1 } }, { metrics: sink })
      const { clock } = open[open.length - 1]!
      await send({ method: 'GET', path: '/hello' })
      await send({ method: 'GET', path: '/hello' })
      expect(sink.counter('busy_rejections_total', { endpoint: '/hello', queue: '' })).toBe(1)
      await clock.advance(1000) // the runtime's clock refills the rate bucket
      expect((await send(note())).status).toBe(201) // the runtime's auth verified the token
    })

    it('a service without a transport answers 503 Unavailable no_transport', async () => {
      const { svc } = await start()
      await expect(svc.transport.request('storage', { method: 'GET', path: '/o' })).rejects.toMatchObject({ code: 'Unavailable', status: 503, details: { reason: 'no_transport', target: 'storage' } })
      await expect(noTransport('x').request('y', { method: 'GET', path: '/' })).rejects.toSatisfy((e: unknown) => isRonError(e, 'Unavailable'))
    })
  })

  describe('drain (SPEC.md 3.3, 3.3a)', () => {
    it('writes refused → read window (reads served, /readyz 200 write-unready) → intake stops → in-flight finishes → hooks', async () => {
      const events: string[] = []
      const { svc, send, clock } = await start({ drainReadWindowMs: 2000, drainDeadlineMs: 1000 })
      svc.host.preClose(() => void events.push('preClose'))
      svc.host.onClose(() => void events.push('onClose'))
      const closing = svc.close().then(() => events.push('closed'))
      await clock.flush()
      expect(svc.host.phase).toBe('writes')
      expect(events).toEqual(['preClose'])
      expect(svc.health()).toMatchObject({ ready: true, writeReady: false, paths: { greet: true, notes: false, lookup: true } })
      const w = await send(note())
      expect(w.status).toBe(503)
      expect(w.headers['retry-after']).toBe('1')
      expect(await w.json()).toMatchObject({ error: { code: 'Draining', details: { phase: 'writes' } } })
      expect((await send({ method: 'GET', path: '/hello' })).status).toBe(200)
      // A POST declared on a read path is served through the window.
      expect((await send({ method: 'POST', path: '/lookup' })).status).toBe(200)
      const readyz = await send({ method: 'GET', path: '/readyz' })
      expect(readyz.status).toBe(200)
      expect(await readyz.json()).toMatchObject({ ready: true, writeReady: false })
      expect(svc.listener?.intakeStopped.aborted).toBe(false)

      await clock.advance(1999)
      expect(svc.host.phase).toBe('writes')
      await clock.advance(1)
      expect(svc.host.phase).not.toBe('writes')
      expect(svc.listener?.intakeStopped.aborted).toBe(true)
      expect(svc.health()).toMatchObject({ ready: false, writeReady: false, paths: { greet: false, notes: false, lookup: false } })
      // Nothing was in flight: the drain is over at once, and a late request finds it closed.
      const late = await send({ method: 'GET', path: '/hello' })
      expect(late.status).toBe(503)
      expect(await late.json()).toMatchObject({ error: { code: 'Closed' } })
      expect((await send({ method: 'GET', path: '/healthz' })).status).toBe(200)
      await closing
      expect(events).toEqual(['preClose', 'onClose', 'closed'])
      const after = await send({ method: 'GET', path: '/hello' })
      expect(await after.json()).toMatchObject({ error: { code: 'Closed' } })
    })

    it('a request in flight when intake stops finishes; one still running at the deadline is aborted and counted', async () => {
      const topology: Topology = { service: 'svc', tasks: [], channels: [] }
      const clock = new VirtualClock()
      const host = createServiceHost({ id: 'svc', version: '1', topology, runtime: { clock }, drainReadWindowMs: 100, drainDeadlineMs: 500 })
      const gates = [deferred(), deferred()]
      const started = [deferred(), deferred()]
      let n = 0
      host.routes([
        {
          method: 'GET',
          path: '/slow',
          handler: async (ctx) => {
            const i = n++
            started[i]!.resolve()
            await Promise.race([gates[i]!.promise, new Promise<void>((_, rej) => ctx.signal.addEventListener('abort', () => rej(ctx.signal.reason as Error), { once: true }))])
            return { status: 200, json: { i } }
          },
        },
      ])
      const t = new MemoryTransport()
      t.mount('svc', host.service)
      const first = t.request('svc', { method: 'GET', path: '/slow' })
      await started[0]!.promise
      const closing = host.service.close()
      await clock.flush()
      // In the read window a new read is still admitted.
      const second = t.request('svc', { method: 'GET', path: '/slow' })
      await started[1]!.promise
      await clock.advance(100)
      // Intake stopped while two requests are in flight: a new one gets 503 Draining.
      const refused = await t.request('svc', { method: 'GET', path: '/slow' })
      expect(refused.status).toBe(503)
      expect(refused.headers['retry-after']).toBe('1')
      expect(await refused.json()).toMatchObject({ error: { code: 'Draining' } })
      gates[0]!.resolve()
      expect((await first).status).toBe(200)
      await clock.advance(500)
      const cut = await second
      expect(cut.status).toBe(503)
      await closing
      expect(metricValue(await host.service.metricsText(), 'tasks_aborted_total', { kind: 'request' })).toBe(1)
      await t.close()
    })

    it('drain: { readWindow: false } turns the service unready at once whatever the config says (index)', async () => {
      const clock = new VirtualClock()
      const host = createServiceHost({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] }, runtime: { clock }, drainReadWindowMs: 5000, drain: { readWindow: false } })
      const closing = host.service.close()
      expect(host.service.health()).toMatchObject({ ready: false, writeReady: false })
      expect(host.service.listener?.intakeStopped.aborted).toBe(true)
      await closing
    })

    it('close() is joined by a second call and preClose runs once', async () => {
      const { svc, clock } = await start()
      let runs = 0
      svc.host.preClose(() => void runs++)
      const a = svc.close()
      const b = svc.close()
      await clock.advance(250)
      await Promise.all([a, b])
      expect(runs).toBe(1)
    })
  })

  describe('readiness from declared dependencies', () => {
    it('a path goes unready when a dependency it needs breaks, and only that path', async () => {
      const store = { open: true }
      const { svc } = await start({}, { store })
      expect(svc.health()).toMatchObject({ ready: true, writeReady: true, paths: { greet: true, notes: true }, missing: [] })
      svc.host.readiness.set('disk', false, 'disk_full')
      expect(svc.health()).toMatchObject({ ready: true, writeReady: false, paths: { greet: true, notes: false } })
      expect(svc.health().missing).toEqual(['disk'])
      svc.host.readiness.set('disk', true)
      store.open = false // a check dependency: read when readiness is reported
      const h = svc.health()
      expect(h).toMatchObject({ ready: false, writeReady: false, paths: { greet: false, notes: false, lookup: false } })
      expect(h.missing).toEqual(['store'])
      expect(h.reason).toContain('store: closed')
    })

    it('a path needing an undeclared dependency is unready, naming it', () => {
      const host = createServiceHost({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] }, readiness: { paths: { p: { needs: ['nope'], shed: 'reads' } } } })
      expect(host.service.health()).toMatchObject({ paths: { p: false }, missing: ['nope'] })
    })
  })

  describe('reload coalescing (host option)', () => {
    const schema = z.strictObject({ a: z.number().default(0), b: z.number().default(0) })
    const mk = (coalesce: boolean): { host: ReturnType<typeof createServiceHost<z.output<typeof schema>>>; runs: unknown[] } => {
      const host = createServiceHost<z.output<typeof schema>>({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] }, config: { schema, coalesce } })
      const runs: unknown[] = []
      host.onReload((p) => void runs.push(p))
      return { host, runs }
    }

    it('merges reloads that wait their turn into one; without it each runs', async () => {
      const on = mk(true)
      await Promise.all([on.host.service.reload({ a: 1 }), on.host.service.reload({ b: 2 }), on.host.service.reload({ a: 3 })])
      expect(on.runs).toEqual([{ a: 3, b: 2 }])
      expect(on.host.config.get()).toEqual({ a: 3, b: 2 })
      expect(metricValue(await on.host.service.metricsText(), 'config_reloads_total')).toBe(1)
      const off = mk(false)
      await Promise.all([off.host.service.reload({ a: 1 }), off.host.service.reload({ b: 2 })])
      expect(off.runs).toEqual([{ a: 1 }, { b: 2 }])
      await on.host.service.close()
      await off.host.service.close()
    })

    it('coalesced callers share the outcome of an invalid merged reload', async () => {
      const { host } = mk(true)
      const results = await Promise.allSettled([host.service.reload({ a: 1 }), host.service.reload({ b: 'x' })])
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
      expect(host.config.get()).toEqual({ a: 0, b: 0 })
      await host.service.close()
    })
  })

  describe('metrics declaration', () => {
    it('registers own families and zero series at startup, with typed handles', async () => {
      const { svc, send } = await start()
      const text = await svc.metricsText()
      expect(text).toContain('greetings_total{kind="get",service="hello"} 0')
      expect(text).toContain('greetings_total{kind="post",service="hello"} 0')
      expect(text).toContain('notes_stored{service="hello"} 0')
      expect(text).toContain('busy_rejections_total{endpoint="POST /notes",queue="",service="hello"} 0')
      // Topology-implied seed series.
      expect(text).toContain('tasks_spawned_total{kind="ticker",service="hello"}')
      expect(text).toContain('tasks_aborted_total{kind="request",service="hello"} 0')
      expect(text).toContain('bus_lagged_total{topic="events",service="hello"} 0')
      await send({ method: 'GET', path: '/hello' })
      expect(metricValue(await svc.metricsText(), 'greetings_total', { kind: 'get' })).toBe(1)
    })
  })

  describe('conformance suite on a minimal third-party service', () => {
    const errors = readRepoFile('docs/errors.md')
    for (const check of serviceConformance({
      id: 'hello',
      create: (config, runtime) => createHelloService(config, undefined, { ...runtime, auth: { keys: issuer.keys } }),
      read: { method: 'GET', path: '/hello' },
      write: note(),
      overLimit: { config: {}, request: note('y'.repeat(5000)) },
      docs: { readme: HELLO_README, concurrency: HELLO_CONCURRENCY, errors },
    })) {
      it(check.name, () => check.run())
    }
  })

  describe('conformance: the exported surface', () => {
    const errors = readRepoFile('docs/errors.md')
    const reportOf = (names: string[]): string => `# API report\n\n## \`@acme/hello\` (${names.length})\n\n${names.map((n) => `- \`${n}\` const`).join('\n')}\n\n## \`@acme/other\` (0)\n`
    const check = (exports: Record<string, unknown>, report: string): (() => Promise<void>) => {
      const c = serviceConformance({
        id: 'hello',
        create: (config, runtime) => createHelloService(config, undefined, { ...runtime, auth: { keys: issuer.keys } }),
        read: { method: 'GET', path: '/hello' },
        write: note(),
        overLimit: { config: {}, request: note('y'.repeat(5000)) },
        docs: { readme: HELLO_README, concurrency: HELLO_CONCURRENCY, errors },
        surface: { entry: '@acme/hello', exports, apiReport: report },
      }).find((x) => x.name.startsWith('the exported surface'))
      if (c === undefined) throw new Error('no surface check')
      return () => c.run()
    }
    const names = Object.keys(helloEntry)

    it('passes for a package listed in the report with a factory, a config schema and <SERVICE>_IMMUTABLE_KEYS', async () => {
      await check(helloEntry, reportOf(names))()
    })

    it('fails for a name the report does not list, a second factory, or immutable keys without the base ones', async () => {
      await expect(check(helloEntry, reportOf(names.filter((n) => n !== 'HELLO_METRICS')))()).rejects.toThrow(/HELLO_METRICS/)
      await expect(check(helloEntry, '# API report\n')()).rejects.toThrow(/section for @acme\/hello/)
      const twoFactories = { ...helloEntry, createOtherService: () => undefined }
      await expect(check(twoFactories, reportOf(Object.keys(twoFactories)))()).rejects.toThrow(/one create\*Service factory/)
      const narrow = { ...helloEntry, HELLO_IMMUTABLE_KEYS: ['dataDir'] }
      await expect(check(narrow, reportOf(names))()).rejects.toThrow(/includes the base key http\.readTimeoutMs/)
    })
  })
})
