import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { connect, type Socket } from 'node:net'
import { createHttpHandler, serve, type HttpHooks, type RonServer, type Route } from '../../src/http/index.js'
import { Supervisor, WorkPool } from '../../src/concurrency/index.js'
import { deferred, until, type Deferred } from '../../src/testing/index.js'

// ctx.onAbort: hears of a client gone (or a forced shutdown) like ctx.signal, without making the
// request's AbortController when nothing read the signal.

const servers: RonServer[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function start(routes: Route[], opts: Parameters<typeof serve>[1] = {}, pool?: WorkPool, more: HttpHooks = {}): Promise<RonServer> {
  const hooks: HttpHooks = pool === undefined ? more : { ...more, submit: (_q, job, signal) => pool.submit(job, signal) }
  const srv = await serve(createHttpHandler({ serviceId: 't', routes, hooks }), { port: 0, ...opts })
  servers.push(srv)
  return srv
}

/** A one-worker pool as the service host runs queued routes on, and its supervisor. */
function onePool(): { pool: WorkPool; supervisor: Supervisor } {
  const supervisor = new Supervisor({ name: 't' })
  return { pool: new WorkPool({ name: 'q', capacity: 8, concurrency: 1, supervisor }), supervisor }
}

/** Counts AbortControllers made while `fn` runs (the global is what the host constructs). */
async function countingControllers<T>(fn: () => Promise<T>): Promise<{ made: number; value: T }> {
  const Original = globalThis.AbortController
  let made = 0
  globalThis.AbortController = class extends Original {
    constructor() {
      super()
      made++
    }
  }
  try {
    const value = await fn()
    return { made, value }
  } finally {
    globalThis.AbortController = Original
  }
}

/** `GET /hang`: never answers; says when entered, and rejects with what `ctx.onAbort` heard. */
function hangRoute(entered: { resolve(): void }, heard: { resolve(reason: Error): void }): Route {
  return {
    method: 'GET',
    path: '/hang',
    handler: (ctx) =>
      new Promise((_resolve, reject) => {
        ctx.onAbort((reason) => {
          heard.resolve(reason)
          reject(reason)
        })
        entered.resolve()
      }),
  }
}

/** Sends `GET /hang`, drops the connection once the handler is in, and waits for what it heard (counting controllers made). */
function disconnectMidRequest(port: number, entered: Deferred<void>, heard: Deferred<Error>): Promise<{ made: number; value: Error }> {
  return countingControllers(async () => {
    const s = connect(port, '127.0.0.1')
    sockets.push(s)
    s.write('GET /hang HTTP/1.1\r\nhost: x\r\n\r\n')
    await entered.promise
    s.destroy()
    return heard.promise
  })
}

describe('RouteContext.onAbort', () => {
  it('calls back with Canceled when the client disconnects mid-request, and makes no AbortController', async () => {
    const entered = deferred()
    const heard = deferred<Error>()
    const srv = await start([hangRoute(entered, heard)])
    const { made, value } = await disconnectMidRequest(srv.port, entered, heard)
    expect(value).toMatchObject({ code: 'Canceled', message: 'client disconnected' })
    expect(made).toBe(0)
  })

  it('never calls back for a request that completes, and the disposer removes its listener', async () => {
    let calls = 0
    let closeListeners: number[] = []
    const srv = await start([
      {
        method: 'GET',
        path: '/ok',
        handler: (ctx) => {
          const res = (ctx.req as unknown as { res: { listenerCount(e: string): number } }).res
          const before = res.listenerCount('close')
          const off = ctx.onAbort(() => calls++)
          const during = res.listenerCount('close')
          off()
          off()
          closeListeners = [before, during, res.listenerCount('close')]
          ctx.onAbort(() => calls++)
          return { status: 200, json: { ok: true } }
        },
      },
    ])
    const { made } = await countingControllers(async () => {
      for (let i = 0; i < 3; i++) {
        const r = await request(`${srv.url}/ok`)
        expect(r.statusCode).toBe(200)
        await r.body.json()
      }
    })
    expect(calls).toBe(0)
    expect(made).toBe(0)
    expect(closeListeners[1]).toBe(closeListeners[0]! + 1)
    expect(closeListeners[2]).toBe(closeListeners[0])
  })

  it('calls back when close() destroys a straggler past the drain deadline', async () => {
    const entered = deferred()
    const heard = deferred<Error>()
    const srv = await start([hangRoute(entered, heard)], { drainDeadlineMs: 100 })
    const inflight = request(`${srv.url}/hang`).then(
      () => 'completed',
      () => 'failed',
    )
    await entered.promise
    await srv.close()
    expect(await inflight).toBe('failed')
    expect(await heard.promise).toMatchObject({ code: 'Canceled' })
  })

  it('calls back at once once the signal has aborted, with the signal\'s reason', async () => {
    const result = deferred<{ sync: boolean; reason: Error; same: boolean }>()
    const entered = deferred()
    const srv = await start([
      {
        method: 'GET',
        path: '/late',
        handler: (ctx) =>
          new Promise((_resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              let sync = false
              let got: Error | undefined
              ctx.onAbort((reason) => {
                sync = true
                got = reason
              })
              result.resolve({ sync, reason: got!, same: got === ctx.signal.reason })
              reject(got ?? new Error('no reason'))
            })
            entered.resolve()
          }),
      },
    ])
    const s = connect(srv.port, '127.0.0.1')
    sockets.push(s)
    s.write('GET /late HTTP/1.1\r\nhost: x\r\n\r\n')
    await entered.promise
    s.destroy()
    const r = await result.promise
    expect(r.sync).toBe(true)
    expect(r.same).toBe(true)
    expect(r.reason).toMatchObject({ code: 'Canceled' })
  })
})

describe('queued routes: the request\'s abort without a signal made for it', () => {
  it('onAbort in a queued job hears a client gone and the worker shut down, and makes no AbortController', async () => {
    const { pool, supervisor } = onePool()
    const entered = deferred()
    const heard = deferred<Error>()
    const srv = await start([{ ...hangRoute(entered, heard), queue: 'q' }], {}, pool)
    const { made, value } = await disconnectMidRequest(srv.port, entered, heard)
    expect(value).toMatchObject({ code: 'Canceled', message: 'client disconnected' })
    expect(made).toBe(0)

    // The worker's abort (a shutdown past the drain deadline) is heard the same way.
    const entered2 = deferred()
    const heard2 = deferred<Error>()
    const srv2 = await start([{ ...hangRoute(entered2, heard2), queue: 'q' }], {}, pool)
    const inflight = request(`${srv2.url}/hang`).then((r) => r.statusCode)
    await entered2.promise
    await supervisor.shutdown(0)
    expect(await heard2.promise).toMatchObject({ code: 'Canceled' })
    expect(await inflight).toBeGreaterThanOrEqual(500)
  })

  it('ctx.signal of a queued job follows the client and the worker, made only when read', async () => {
    const { pool, supervisor } = onePool()
    /** A queued route whose handler reads ctx.signal and hangs until it aborts. */
    const signalRoute = (entered: Deferred<void>, aborted: Deferred<unknown>): Route => ({
      method: 'GET',
      path: '/sig',
      queue: 'q',
      handler: (ctx) =>
        new Promise((_resolve, reject) => {
          const signal = ctx.signal
          signal.addEventListener('abort', () => {
            aborted.resolve(signal.reason)
            reject(signal.reason as Error)
          })
          entered.resolve()
        }),
    })
    const entered = deferred()
    const aborted = deferred<unknown>()
    const srv = await start([signalRoute(entered, aborted)], {}, pool)
    const s = connect(srv.port, '127.0.0.1')
    sockets.push(s)
    s.write('GET /sig HTTP/1.1\r\nhost: x\r\n\r\n')
    await entered.promise
    s.destroy()
    expect(await aborted.promise).toMatchObject({ code: 'Canceled', message: 'client disconnected' })

    const entered2 = deferred()
    const aborted2 = deferred<unknown>()
    const srv2 = await start([signalRoute(entered2, aborted2)], {}, pool)
    const inflight = request(`${srv2.url}/sig`).then((r) => r.statusCode)
    await entered2.promise
    await supervisor.shutdown(0)
    expect(await aborted2.promise).toMatchObject({ code: 'Canceled' })
    expect(await inflight).toBeGreaterThanOrEqual(500)
  })

  it('a request gone while its job waits in the queue is answered at once, and its handler never runs', async () => {
    const { pool, supervisor } = onePool()
    const first = deferred()
    const release = deferred()
    let ran = 0
    const finished: string[] = []
    const srv = await start(
      [
        { method: 'GET', path: '/block', queue: 'q', handler: async () => { first.resolve(); await release.promise; return { status: 200, json: { ok: true } } } },
        { method: 'GET', path: '/later', queue: 'q', handler: () => { ran++; return { status: 200, json: { ok: true } } } },
      ],
      {},
      pool,
      { observe: (route) => finished.push(route) },
    )
    const blocking = request(`${srv.url}/block`)
    await first.promise
    const s = connect(srv.port, '127.0.0.1')
    sockets.push(s)
    s.write('GET /later HTTP/1.1\r\nhost: x\r\n\r\n')
    await until(() => pool.depth === 1, 'the second job queued')
    s.destroy()
    // Answered (finished) while the worker is still busy and the pool still holds its job.
    await until(() => finished.includes('/later'), 'the gone request finished')
    expect(pool.depth).toBe(1)
    release.resolve()
    expect((await blocking).statusCode).toBe(200)
    await pool.close()
    expect(ran).toBe(0)
    expect(finished).toEqual(['/later', '/block'])
    await supervisor.shutdown(0)
  })
})
