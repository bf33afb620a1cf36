/**
 * One compliance suite, run against every Transport: the same cases against MemoryTransport
 * (in-process dispatch) and HttpTransport (undici over a real socket on port 0).
 */
import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  BusyError,
  HttpTransport,
  MemoryTransport,
  createHttpHandler,
  isRonError,
  serve,
  throwIfError,
  type HttpHandler,
  type RonServer,
  type Route,
  type Transport,
} from '@ron/core'
import { VirtualClock, checkPatternStream, patternStream } from '@ron/core/testing'

const MiB = 1024 * 1024

/** Server-side probes the cases wait on instead of sleeping. */
class Probe {
  started!: Promise<AbortSignal>
  #resolve!: (s: AbortSignal) => void
  constructor() {
    this.reset()
  }
  reset(): void {
    this.started = new Promise((r) => (this.#resolve = r))
  }
  hit(signal: AbortSignal): void {
    this.#resolve(signal)
  }
}

const aborted = (signal: AbortSignal): Promise<void> =>
  signal.aborted ? Promise.resolve() : new Promise((r) => signal.addEventListener('abort', () => r(), { once: true }))

function fixture(): { handler: HttpHandler; probe: Probe; streamReturned: () => boolean } {
  const probe = new Probe()
  let returned = false
  const routes: Route[] = [
    { method: 'GET', path: '/item/:id', handler: (ctx) => ({ status: 200, json: { id: ctx.params.id } }) },
    {
      method: 'PUT',
      path: '/item/:id',
      public: true,
      bodyLimit: Infinity,
      handler: async (ctx) => ({ status: 201, json: { id: ctx.params.id, ...(await checkPatternStream(ctx.stream())) } }),
    },
    {
      method: 'GET',
      path: '/big',
      handler: (ctx) => {
        const size = Number(ctx.query.get('size'))
        const gen = patternStream(size)
        const body: AsyncIterable<Uint8Array> = {
          [Symbol.asyncIterator]: () => ({
            next: () => gen.next(),
            return: () => {
              returned = true
              return Promise.resolve({ done: true as const, value: undefined })
            },
          }),
        }
        return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body }
      },
    },
    {
      method: 'GET',
      path: '/slow',
      handler: async (ctx) => {
        probe.hit(ctx.signal)
        await aborted(ctx.signal)
        return { status: 200, json: { late: true } }
      },
    },
    {
      method: 'GET',
      path: '/busy',
      handler: () => {
        throw new BusyError('queue full', { retryAfterMs: 2000, details: { queue: 'work' } })
      },
    },
    { method: 'GET', path: '/corr', handler: (ctx) => ({ status: 200, json: { corrId: ctx.corrId } }) },
  ]
  return { handler: createHttpHandler({ serviceId: 'svc', routes }), probe, streamReturned: () => returned }
}

async function closedPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

interface Harness {
  transport: Transport
  clock: VirtualClock
  /** Makes `svc` unreachable and returns the target name to call. */
  unreachable(): Promise<string>
  close(): Promise<void>
}

const suites: Array<[string, (fx: ReturnType<typeof fixture>) => Promise<Harness>]> = [
  [
    'MemoryTransport',
    (fx) => {
      const clock = new VirtualClock()
      const transport = new MemoryTransport({ clock })
      transport.mount('svc', fx.handler)
      transport.mount('down', fx.handler)
      return Promise.resolve({
        transport,
        clock,
        unreachable: () => {
          transport.setReachable('down', false)
          return Promise.resolve('down')
        },
        close: () => transport.close(),
      })
    },
  ],
  [
    'HttpTransport',
    async (fx) => {
      const clock = new VirtualClock()
      const server: RonServer = await serve(fx.handler, { port: 0 })
      const transport = new HttpTransport({ targets: { svc: server.url }, clock, retry: { tries: 1 } })
      return {
        transport,
        clock,
        unreachable: async () => `http://127.0.0.1:${await closedPort()}`,
        close: async () => {
          await transport.close()
          await server.close()
        },
      }
    },
  ],
]

for (const [name, make] of suites) {
  describe(`Transport compliance: ${name}`, () => {
    let fx: ReturnType<typeof fixture>
    let h: Harness
    beforeAll(async () => {
      fx = fixture()
      h = await make(fx)
    })
    afterAll(async () => {
      await h.close()
    })

    it('round-trips a GET with lower-cased headers and a PUT with a body', async () => {
      const get = await h.transport.request('svc', { method: 'GET', path: '/item/a%20b' })
      expect(get.status).toBe(200)
      expect(get.headers['content-type']).toMatch(/^application\/json/)
      expect(await get.json()).toEqual({ id: 'a b' })
      const put = await h.transport.request('svc', { method: 'PUT', path: '/item/x', body: new Uint8Array([0, 1, 2, 3]) })
      expect(put.status).toBe(201)
      expect(await put.json()).toMatchObject({ id: 'x', bytes: 4, intact: true })
      expect(h.clock.pending).toBe(0) // the per-call deadline timer is cleared once the head arrived
    })

    it('streams a 20 MiB upload and a 20 MiB download without buffering either whole', async () => {
      const put = await h.transport.request('svc', { method: 'PUT', path: '/item/big', body: patternStream(20 * MiB) })
      const up = await put.json<{ bytes: number; maxChunk: number; intact: boolean }>()
      expect(up).toMatchObject({ bytes: 20 * MiB, intact: true })
      expect(up.maxChunk).toBeLessThanOrEqual(MiB)
      const get = await h.transport.request('svc', { method: 'GET', path: `/big?size=${20 * MiB}` })
      const down = await checkPatternStream(get.body)
      expect(down).toMatchObject({ bytes: 20 * MiB, intact: true })
      expect(down.maxChunk).toBeLessThanOrEqual(MiB)
    })

    it('fails with Timeout when no response arrives within timeoutMs, and aborts the server-side request', async () => {
      fx.probe.reset()
      const pending = h.transport.request('svc', { method: 'GET', path: '/slow', timeoutMs: 500 })
      const outcome = pending.then(
        () => 'resolved',
        (e: unknown) => e,
      )
      const serverSignal = await fx.probe.started
      await h.clock.advance(499)
      expect(serverSignal.aborted).toBe(false)
      await h.clock.advance(1)
      const err = await outcome
      expect(isRonError(err, 'Timeout')).toBe(true)
      await aborted(serverSignal)
    })

    it('a streamed upload that keeps sending outlives timeoutMs; one that stalls past it times out', async () => {
      // Each chunk is preceded by 300 ms of virtual time: 8 chunks take 2.4 s against a 500 ms deadline.
      const steady = async function* (): AsyncGenerator<Uint8Array> {
        for await (const chunk of patternStream(8 * 65_536)) {
          await h.clock.advance(300)
          yield chunk
        }
      }
      const ok = await h.transport.request('svc', { method: 'PUT', path: '/item/steady', body: steady(), timeoutMs: 500 })
      expect(await ok.json()).toMatchObject({ bytes: 8 * 65_536, intact: true })

      const stalled = async function* (): AsyncGenerator<Uint8Array> {
        yield new Uint8Array(65_536)
        await h.clock.advance(500)
        yield new Uint8Array(65_536)
      }
      const err = await h.transport.request('svc', { method: 'PUT', path: '/item/stalled', body: stalled(), timeoutMs: 500 }).then(
        () => 'resolved',
        (e: unknown) => e,
      )
      expect(isRonError(err, 'Timeout')).toBe(true)
      expect(h.clock.pending).toBe(0)
    })

    it("fails with Canceled when the caller's signal aborts, and aborts the server-side request", async () => {
      fx.probe.reset()
      const ac = new AbortController()
      const outcome = h.transport.request('svc', { method: 'GET', path: '/slow', signal: ac.signal }).then(
        () => 'resolved',
        (e: unknown) => e,
      )
      const serverSignal = await fx.probe.started
      ac.abort()
      expect(isRonError(await outcome, 'Canceled')).toBe(true)
      await aborted(serverSignal)
    })

    it('aborting mid-download fails the next read with Canceled and stops the producer', async () => {
      const ac = new AbortController()
      const res = await h.transport.request('svc', { method: 'GET', path: `/big?size=${256 * MiB}`, signal: ac.signal })
      const it = res.body[Symbol.asyncIterator]()
      const first = await it.next()
      expect(first.done).toBe(false)
      ac.abort()
      const err = await it.next().then(
        () => 'read',
        (e: unknown) => e,
      )
      expect(isRonError(err, 'Canceled')).toBe(true)
      await expect.poll(() => fx.streamReturned()).toBe(true)
    })

    it('an unreachable target fails with NotReady { reason: unreachable }', async () => {
      const target = await h.unreachable()
      const err = await h.transport.request(target, { method: 'GET', path: '/item/1' }).catch((e: unknown) => e)
      expect(isRonError(err, 'NotReady')).toBe(true)
      expect((err as BusyError).details).toMatchObject({ reason: 'unreachable' })
      expect((err as BusyError).retryable).toBe(true)
      const unknown = await h.transport.request('no-such-service', { method: 'GET', path: '/' }).catch((e: unknown) => e)
      expect(isRonError(unknown, 'NotReady')).toBe(true)
    })

    it('throwIfError turns an error envelope into the typed error with Retry-After', async () => {
      const res = await h.transport.request('svc', { method: 'GET', path: '/busy' })
      expect(res.status).toBe(429)
      const err = await throwIfError(res).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(BusyError)
      expect((err as BusyError).retryAfterMs).toBe(2000)
      expect((err as BusyError).details).toMatchObject({ queue: 'work' })
      const ok = await h.transport.request('svc', { method: 'GET', path: '/item/1' })
      await expect(throwIfError(ok)).resolves.toBeUndefined()
      await ok.dump()
    })

    it('carries x-corr-id from the request headers to the handler and back', async () => {
      const res = await h.transport.request('svc', { method: 'GET', path: '/corr', headers: { 'X-Corr-ID': 'corr-42' } })
      expect(res.headers['x-corr-id']).toBe('corr-42')
      expect(await res.json()).toEqual({ corrId: 'corr-42' })
    })

    it('fails with Closed after close()', async () => {
      const fx2 = fixture()
      const h2 = await make(fx2)
      await h2.close()
      await h2.close()
      const err = await h2.transport.request('svc', { method: 'GET', path: '/item/1' }).catch((e: unknown) => e)
      expect(isRonError(err, 'Closed')).toBe(true)
    })
  })
}
