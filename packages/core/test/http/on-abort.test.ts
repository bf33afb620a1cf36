import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { connect, type Socket } from 'node:net'
import { createHttpHandler, serve, type RonServer, type Route } from '../../src/http/index.js'
import { deferred } from '../../src/testing/index.js'

// ctx.onAbort: hears of a client gone (or a forced shutdown) like ctx.signal, without making the
// request's AbortController when nothing read the signal.

const servers: RonServer[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function start(routes: Route[], opts: Parameters<typeof serve>[1] = {}): Promise<RonServer> {
  const srv = await serve(createHttpHandler({ serviceId: 't', routes }), { port: 0, ...opts })
  servers.push(srv)
  return srv
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

describe('RouteContext.onAbort', () => {
  it('calls back with Canceled when the client disconnects mid-request, and makes no AbortController', async () => {
    const entered = deferred()
    const heard = deferred<Error>()
    const srv = await start([hangRoute(entered, heard)])
    const { made, value } = await countingControllers(async () => {
      const s = connect(srv.port, '127.0.0.1')
      sockets.push(s)
      s.write('GET /hang HTTP/1.1\r\nhost: x\r\n\r\n')
      await entered.promise
      s.destroy()
      return heard.promise
    })
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
