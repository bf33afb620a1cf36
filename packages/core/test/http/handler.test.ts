import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { BusyError, DrainingError, ForbiddenError, RonError, TimeoutError } from '../../src/errors.js'
import { createHttpHandler, RouteConfigError, type HttpHooks, type Reply, type Route } from '../../src/http/index.js'
import type { Claims } from '../../src/auth/types.js'
import { deferred } from '../../src/testing/deferred.js'
import { expectEnvelope, mkReq, readBody, readJson } from './helpers.js'

const Item = z.strictObject({ name: z.string(), size: z.number().int() })

const claims: Claims = { iss: 'i', sub: 's', aud: ['t'], scope: ['t:write'], iat: 0, exp: 1, jti: 'j' }

function routes(): Route[] {
  return [
    { method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) },
    { method: 'GET', path: '/o/:addr', name: 'object', handler: (ctx) => ({ status: 200, json: { addr: ctx.params.addr, q: ctx.query.get('x') } }) },
    { method: 'DELETE', path: '/o/:addr', scope: 't:write', handler: (ctx) => ({ status: 200, json: { sub: ctx.auth?.sub } }) },
    { method: 'POST', path: '/items', public: true, handler: async (ctx) => ({ status: 201, json: await ctx.json(Item) }) },
    { method: 'POST', path: '/small', public: true, bodyLimit: 16, handler: async (ctx) => ({ status: 200, json: { n: (await ctx.bytes()).byteLength } }) },
    { method: 'GET', path: '/boom', handler: () => { throw new Error('secret stack detail') } },
    { method: 'GET', path: '/q', queue: 'work', handler: () => ({ status: 200, body: 'queued' }) },
  ]
}

function handler(hooks: HttpHooks = {}, rs: Route[] = routes()) {
  return createHttpHandler({ serviceId: 't', routes: rs, hooks })
}

describe('createHttpHandler startup validation', () => {
  it('rejects a write route without scope or public and names the route', () => {
    const bad: Route = { method: 'PUT', path: '/x', handler: () => ({ status: 200 }) }
    expect(() => handler({}, [bad])).toThrow(RouteConfigError)
    expect(() => handler({}, [bad])).toThrow(/PUT \/x/)
  })

  it('rejects a duplicate route', () => {
    const r: Route = { method: 'GET', path: '/x/:a', handler: () => ({ status: 200 }) }
    expect(() => handler({}, [r, { ...r, path: '/x/:b' }])).toThrow(/duplicate/)
  })
})

describe('routing and envelopes (dispatch)', () => {
  it('serves a JSON route with content-type and a generated corr-id', async () => {
    const res = await handler().dispatch(mkReq('GET', '/hello'))
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('application/json')
    expect(res.headers['x-corr-id']).toMatch(/^[0-9a-z]{6}-[0-9a-z]{1,5}$/)
    expect(await readJson(res)).toEqual({ hello: 'world' })
  })

  it('echoes a well-formed X-Corr-ID and puts it in error bodies', async () => {
    const res = await handler().dispatch(mkReq('GET', '/nope', { headers: { 'x-corr-id': 'abc-123.x:y' } }))
    expect(res.status).toBe(404)
    expect(res.headers['x-corr-id']).toBe('abc-123.x:y')
    expectEnvelope(await readJson(res), 'NotFound', 'abc-123.x:y')
  })

  it('replaces an ill-formed X-Corr-ID with a generated one', async () => {
    const res = await handler().dispatch(mkReq('GET', '/nope', { headers: { 'x-corr-id': 'bad id<script>' } }))
    const gen = res.headers['x-corr-id'] as string
    expect(gen).not.toBe('bad id<script>')
    expectEnvelope(await readJson(res), 'NotFound', gen)
  })

  it('answers 405 with Allow (HEAD implied by GET)', async () => {
    const res = await handler().dispatch(mkReq('PUT', '/o/abc'))
    expect(res.status).toBe(405)
    expect(res.headers.allow).toBe('DELETE, GET, HEAD')
    expectEnvelope(await readJson(res), 'MethodNotAllowed')
  })

  it('decodes path params and parses the query', async () => {
    const res = await handler().dispatch(mkReq('GET', '/o/a%20b?x=1'))
    expect(await readJson(res)).toEqual({ addr: 'a b', q: '1' })
  })

  it('a static path answers with and without a query (the query parsed), a wrong method is 405, and a built-in of the same path wins', async () => {
    const h = createHttpHandler({
      serviceId: 't',
      routes: [
        { method: 'GET', path: '/s', handler: (ctx) => ({ status: 200, json: { q: ctx.query.get('q'), raw: ctx.req.url } }) },
        { method: 'GET', path: '/healthz', handler: () => ({ status: 200, json: { route: true } }) },
      ],
      hooks: { builtin: (path) => (path === '/healthz' ? { status: 200, json: { builtin: true } } : undefined) },
    })
    expect(await readJson(await h.dispatch(mkReq('GET', '/s')))).toEqual({ q: null, raw: '/s' })
    expect(await readJson(await h.dispatch(mkReq('GET', '/s?q=1')))).toEqual({ q: '1', raw: '/s?q=1' })
    expect(await readJson(await h.dispatch(mkReq('GET', '/s?')))).toEqual({ q: null, raw: '/s?' })
    const post = await h.dispatch(mkReq('POST', '/s'))
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET, HEAD')
    expect((await h.dispatch(mkReq('GET', '/s/'))).status).toBe(404)
    expect(await readJson(await h.dispatch(mkReq('GET', '/healthz')))).toEqual({ builtin: true })
    expect(await readJson(await h.dispatch(mkReq('GET', '/healthz?x=1')))).toEqual({ builtin: true })
  })

  it('routes sharing a path shape each get their own param names', async () => {
    const rs: Route[] = [
      { method: 'GET', path: '/r/:name', handler: (ctx) => ({ status: 200, json: ctx.params }) },
      { method: 'PUT', path: '/r/:id', public: true, handler: (ctx) => ({ status: 200, json: ctx.params }) },
      { method: 'GET', path: '/r/:name/meta', handler: (ctx) => ({ status: 200, json: { meta: ctx.params.name } }) },
    ]
    const h = handler({}, rs)
    expect(await readJson(await h.dispatch(mkReq('GET', '/r/a')))).toEqual({ name: 'a' })
    expect(await readJson(await h.dispatch(mkReq('PUT', '/r/b')))).toEqual({ id: 'b' })
    expect(await readJson(await h.dispatch(mkReq('GET', '/r/c/meta')))).toEqual({ meta: 'c' })
    expect((await h.dispatch(mkReq('GET', '/r/'))).status).toBe(404)
  })

  it('rejects bad percent-encoding in a param with 400', async () => {
    const res = await handler().dispatch(mkReq('GET', '/o/%E0%A4%A'))
    expect(res.status).toBe(400)
    expect(expectEnvelope(await readJson(res), 'Malformed').details.field).toBe('addr')
  })

  it('turns a non-RonError into a generic 500 without leaking the message', async () => {
    const seen: RonError[] = []
    const res = await handler({ onError: (e) => seen.push(e) }).dispatch(mkReq('GET', '/boom'))
    expect(res.status).toBe(500)
    const text = (await readBody(res)).toString()
    expect(text).not.toContain('secret')
    expect(text).not.toContain('at ')
    expectEnvelope(JSON.parse(text), 'Internal')
    expect(seen.map((e) => e.code)).toEqual(['Internal'])
  })

  it('HEAD on a GET route sends headers with content-length and no body', async () => {
    const res = await handler().dispatch(mkReq('HEAD', '/hello'))
    expect(res.status).toBe(200)
    expect(res.headers['content-length']).toBe(String(JSON.stringify({ hello: 'world' }).length))
    expect((await readBody(res)).byteLength).toBe(0)
  })

  it('reports every finished request to observe with its route label', async () => {
    const seen: string[] = []
    const h = handler({ observe: (route, method, status) => seen.push(`${route} ${method} ${status}`) })
    await readBody(await h.dispatch(mkReq('GET', '/o/x')))
    await readBody(await h.dispatch(mkReq('GET', '/missing')))
    expect(seen).toEqual(['object GET 200', 'unmatched GET 404'])
  })
})

describe('JSON bodies', () => {
  const post = (body: string | Uint8Array, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    handler().dispatch(mkReq('POST', '/items', { body, headers }))

  it('accepts a valid body', async () => {
    const res = await post(JSON.stringify({ name: 'a', size: 1 }))
    expect(res.status).toBe(201)
    expect(await readJson(res)).toEqual({ name: 'a', size: 1 })
  })

  it('rejects malformed JSON with 400 Malformed', async () => {
    const res = await post('{"name":')
    expect(res.status).toBe(400)
    expectEnvelope(await readJson(res), 'Malformed')
  })

  it('rejects an unknown field with 400 naming it', async () => {
    const res = await post(JSON.stringify({ name: 'a', size: 1, extra: true }))
    expect(res.status).toBe(400)
    const e = expectEnvelope(await readJson(res), 'Malformed')
    expect(e.details.field).toBe('extra')
    expect(e.message).toContain('extra')
  })

  it('rejects a wrong type with 400 naming the field', async () => {
    const res = await post(JSON.stringify({ name: 'a', size: 'big' }))
    const e = expectEnvelope(await readJson(res), 'Malformed')
    expect(e.details.field).toBe('size')
    expect(e.message).toContain('size')
  })

  it('rejects a non-JSON content-type with 415', async () => {
    const res = await post('{}', { 'content-type': 'text/plain' })
    expect(res.status).toBe(415)
    expectEnvelope(await readJson(res), 'UnsupportedMediaType')
  })

  it('rejects an unknown content-encoding with 415', async () => {
    const res = await post('{}', { 'content-type': 'application/json', 'content-encoding': 'zstd' })
    expect(res.status).toBe(415)
    expectEnvelope(await readJson(res), 'UnsupportedMediaType')
  })

  it('decodes a gzip body', async () => {
    const res = await post(gzipSync(JSON.stringify({ name: 'z', size: 2 })), { 'content-type': 'application/json', 'content-encoding': 'gzip' })
    expect(await readJson(res)).toEqual({ name: 'z', size: 2 })
  })

  it('rejects a corrupt gzip body with 400 Malformed', async () => {
    const res = await post(Buffer.from('definitely not gzip'), { 'content-type': 'application/json', 'content-encoding': 'gzip' })
    expect(res.status).toBe(400)
    expectEnvelope(await readJson(res), 'Malformed')
  })

  it('rejects a streamed body over the route cap with 413', async () => {
    const chunks = [Buffer.alloc(10), Buffer.alloc(10)]
    const res = await handler().dispatch(mkReq('POST', '/small', { body: chunks }))
    expect(res.status).toBe(413)
    expectEnvelope(await readJson(res), 'OverLimit')
  })

  it('rejects a declared content-length over the cap with 413 before reading', async () => {
    let pulled = 0
    async function* body() {
      pulled++
      yield await Promise.resolve(Buffer.alloc(1))
    }
    const res = await handler().dispatch(mkReq('POST', '/small', { body: body(), headers: { 'content-length': '100' } }))
    expect(res.status).toBe(413)
    expect(pulled).toBe(0)
  })
})

describe('auth and hooks', () => {
  it('a scoped route without a verifier is 401, never open', async () => {
    const res = await handler().dispatch(mkReq('DELETE', '/o/x'))
    expect(res.status).toBe(401)
    expectEnvelope(await readJson(res), 'Unauthorized')
  })

  it('passes verified claims to the handler and maps Forbidden to 403', async () => {
    const ok = handler({ authenticate: () => Promise.resolve(claims) })
    expect(await readJson(await ok.dispatch(mkReq('DELETE', '/o/x')))).toEqual({ sub: 's' })
    const no = handler({ authenticate: () => Promise.reject(new ForbiddenError('lacks scope')) })
    const res = await no.dispatch(mkReq('DELETE', '/o/x'))
    expect(res.status).toBe(403)
  })

  it('builtin answers /healthz even when every queue is full; queued routes get 429 with Retry-After', async () => {
    let admitted = 0
    const h = handler({
      builtin: (path) => (path === '/healthz' ? { status: 200, json: { live: true } } : undefined),
      admit: () => {
        admitted++
        return () => {}
      },
      submit: () => Promise.reject(new BusyError('queue full', { retryAfterMs: 1500 })),
    })
    const health = await h.dispatch(mkReq('GET', '/healthz'))
    expect(health.status).toBe(200)
    expect(health.headers['x-corr-id']).toBeDefined()
    expect(admitted).toBe(0)
    const busy = await h.dispatch(mkReq('GET', '/q'))
    expect(busy.status).toBe(429)
    expect(busy.headers['retry-after']).toBe('2')
    const e = expectEnvelope(await readJson(busy), 'Busy')
    expect(e.retryable).toBe(true)
  })

  it('intake refusal becomes 503 Draining with Retry-After', async () => {
    const h = handler({
      intake: () => {
        throw new DrainingError('shutting down')
      },
    })
    const res = await h.dispatch(mkReq('GET', '/hello'))
    expect(res.status).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expectEnvelope(await readJson(res), 'Draining')
  })

  it('any error carrying retryAfterMs (a 504 Timeout) gets Retry-After; one without it does not', async () => {
    const h = handler({}, [
      { method: 'GET', path: '/slow', handler: () => Promise.reject(new TimeoutError('dependency too slow', { retryAfterMs: 2500 })) },
      { method: 'GET', path: '/plain', handler: () => Promise.reject(new TimeoutError('dependency too slow')) },
    ])
    const slow = await h.dispatch(mkReq('GET', '/slow'))
    expect(slow.status).toBe(504)
    expect(slow.headers['retry-after']).toBe('3')
    expectEnvelope(await readJson(slow), 'Timeout')
    const plain = await h.dispatch(mkReq('GET', '/plain'))
    expect(plain.status).toBe(504)
    expect(plain.headers['retry-after']).toBeUndefined()
    expectEnvelope(await readJson(plain), 'Timeout')
  })

  it('admission is released once, after the response body was consumed', async () => {
    const events: string[] = []
    async function* slow() {
      yield await Promise.resolve(Buffer.from('a'))
      events.push('yielded')
      yield Buffer.from('b')
    }
    const rs: Route[] = [{ method: 'GET', path: '/s', handler: () => ({ status: 200, body: slow() }) }]
    const h = handler({ admit: () => () => events.push('released') }, rs)
    const res = await h.dispatch(mkReq('GET', '/s'))
    expect(events).toEqual([])
    expect((await readBody(res)).toString()).toBe('ab')
    expect(events).toEqual(['yielded', 'released'])
  })

  it('a queued job keeps its worker slot until the streamed body is consumed', async () => {
    const events: string[] = []
    const freed = deferred()
    let body: AsyncGenerator<Uint8Array> | undefined
    async function* gen() {
      try {
        yield await Promise.resolve(Buffer.from('x'))
        yield Buffer.from('y')
      } finally {
        events.push('body consumed')
      }
    }
    const rs: Route[] = [{ method: 'GET', path: '/s', queue: 'get', handler: () => ({ status: 200, body: (body = gen()) }) }]
    const h = handler(
      {
        submit: async (_q, job) => {
          await job(new AbortController().signal)
          events.push('slot freed')
          freed.resolve()
        },
      },
      rs,
    )
    const res = await h.dispatch(mkReq('GET', '/s'))
    expect(res.status).toBe(200)
    expect(body).toBeDefined()
    expect(events).toEqual([])
    expect((await readBody(res)).toString()).toBe('xy')
    await freed.promise
    expect(events).toEqual(['body consumed', 'slot freed'])
  })

  it('a job whose handler throws frees its slot and answers with the error', async () => {
    const rs: Route[] = [{ method: 'GET', path: '/t', queue: 'get', handler: () => { throw new BusyError('inner') } }]
    const h = handler({ submit: (_q, job) => job(new AbortController().signal) }, rs)
    const res = await h.dispatch(mkReq('GET', '/t'))
    expect(res.status).toBe(429)
    expectEnvelope(await readJson(res), 'Busy')
  })
})

describe('fetch adapter', () => {
  it('round-trips a JSON POST and an error with the same envelope', async () => {
    const h = handler()
    const ok = await h.fetch(
      new Request('http://x/items', { method: 'POST', body: JSON.stringify({ name: 'f', size: 3 }), headers: { 'content-type': 'application/json', 'x-corr-id': 'fetch-1' } }),
    )
    expect(ok.status).toBe(201)
    expect(ok.headers.get('x-corr-id')).toBe('fetch-1')
    expect(await ok.json()).toEqual({ name: 'f', size: 3 })
    const bad = await h.fetch(new Request('http://x/items', { method: 'POST', body: '{"name":1,"size":1}', headers: { 'content-type': 'application/json' } }))
    expect(bad.status).toBe(400)
    expectEnvelope(await bad.json(), 'Malformed', bad.headers.get('x-corr-id')!)
  })

  it('streams a reply body and cancels the source on cancel()', async () => {
    let returned = false
    const src: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]() {
        let i = 0
        return {
          next: () => Promise.resolve({ done: false, value: Buffer.from(String(i++)) }),
          return: () => {
            returned = true
            return Promise.resolve({ done: true, value: undefined })
          },
        }
      },
    }
    const rs: Route[] = [{ method: 'GET', path: '/inf', handler: (): Reply => ({ status: 200, body: src }) }]
    const res = await handler({}, rs).fetch(new Request('http://x/inf'))
    const reader = res.body!.getReader()
    const first = await reader.read()
    expect(Buffer.from(first.value!).toString()).toBe('0')
    await reader.cancel()
    expect(returned).toBe(true)
  })
})
