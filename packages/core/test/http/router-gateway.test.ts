/**
 * What a gateway needs from the router: a catch-all last segment, dispatch by `Host` (with the
 * first label captured), and routes whose responses carry no CORS headers — on both edges
 * (in-process dispatch and a real socket).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createServiceHost, serve, type RonService, type Route, type Topology } from '@ron/core'
import { createHttpHandler, RouteConfigError } from '../../src/http/index.js'
import { Router } from '../../src/http/router.js'
import { mkReq, readJson } from './helpers.js'

const ok = (tag: string): Route['handler'] => (ctx) => ({ status: 200, json: { tag, params: ctx.params } })

function gatewayRoutes(): Route[] {
  return [
    { method: 'GET', path: '/o/:addr', handler: ok('raw') },
    { method: 'GET', path: '/o/:addr/*path', handler: ok('object-path') },
    { method: 'GET', path: '/n/:name', handler: ok('name-bare') },
    { method: 'GET', path: '/n/:name/*path', handler: ok('name-path') },
    { method: 'GET', path: '/*path', handler: ok('anything') },
    { method: 'GET', path: '/hello', handler: ok('hello') },
    { method: 'GET', host: ':site.localhost', path: '/*path', cors: false, handler: ok('site') },
    { method: 'GET', host: 'admin.example', path: '/status', handler: ok('exact-host') },
  ]
}

describe('router: catch-all segments', () => {
  const r = new Router(gatewayRoutes())
  /** The matched route's path pattern and params, or the kind of miss. */
  const found = (method: string, path: string): { path: string; params: Record<string, string> } | string => {
    const m = r.match(method, path)
    return m.kind === 'found' ? { path: m.route.route.path, params: m.params } : m.kind
  }

  it('a static path and a fixed-length pattern win over a catch-all', () => {
    expect(found('GET', '/hello')).toEqual({ path: '/hello', params: {} })
    expect(found('GET', '/o/b3:x')).toEqual({ path: '/o/:addr', params: { addr: 'b3:x' } })
    expect(found('GET', '/n/docs.alice')).toEqual({ path: '/n/:name', params: { name: 'docs.alice' } })
  })

  it('takes the rest of the path, one segment or more, possibly empty, and decodes it', () => {
    const m1 = r.match('GET', '/n/docs.alice/')
    expect(m1.kind === 'found' ? m1.params : undefined).toEqual({ name: 'docs.alice', path: '' })
    const m2 = r.match('GET', '/n/docs.alice/css/site.css')
    expect(m2.kind === 'found' ? m2.params : undefined).toEqual({ name: 'docs.alice', path: 'css/site.css' })
    const m3 = r.match('GET', '/o/b3:x/a%20b/c')
    expect(m3.kind === 'found' ? m3.params : undefined).toEqual({ addr: 'b3:x', path: 'a b/c' })
    // The most specific catch-all first: `/n/:name/*path` before `/*path`.
    const m4 = r.match('GET', '/other/thing')
    expect(m4.kind === 'found' ? m4.params : undefined).toEqual({ path: 'other/thing' })
    const m5 = r.match('GET', '/')
    expect(m5.kind === 'found' ? m5.params : undefined).toEqual({ path: '' })
  })

  it('an empty fixed param never matches, and HEAD falls back to GET; other methods get 405', () => {
    const m = r.match('GET', '/n//x')
    expect(m.kind === 'found' ? m.params : undefined).toEqual({ path: 'n//x' })
    expect(r.match('HEAD', '/n/a/b')).toMatchObject({ kind: 'found', head: true })
    expect(r.match('POST', '/n/a/b')).toEqual({ kind: 'method', allow: 'GET, HEAD' })
  })

  it('refuses a catch-all that is not the last segment, and a bad param name', () => {
    expect(() => new Router([{ method: 'GET', path: '/a/*rest/b', handler: ok('x') }])).toThrow(RouteConfigError)
    expect(() => new Router([{ method: 'GET', path: '/a/*1x', handler: ok('x') }])).toThrow(/bad param name/)
    expect(() => new Router([{ method: 'GET', host: ':x', path: '/', handler: ok('x') }])).toThrow(RouteConfigError)
    expect(() => new Router([{ method: 'GET', host: 'bad host!', path: '/', handler: ok('x') }])).toThrow(RouteConfigError)
  })

  it('a malformed percent-encoding in the rest is a 400', () => {
    expect(() => r.match('GET', '/n/a/%zz')).toThrow(/percent-encoding/)
  })
})

describe('router: static paths', () => {
  it('finds every static path, whatever how many share its length, and nothing for a near miss', () => {
    // Lengths with one path, with four (compared one by one) and with nine (looked up by hash).
    const paths = ['/a', '/bb', '/c/1', '/c/2', '/c/3', '/c/4', ...Array.from({ length: 9 }, (_, i) => `/nine/${i}`)]
    const r = new Router([
      ...paths.map((path): Route => ({ method: 'GET', path, handler: ok(path) })),
      { method: 'POST', path: '/c/2', public: true, handler: ok('post') },
      { method: 'GET', path: '/p/:x', handler: ok('pattern') },
    ])
    const hit = (method: string, path: string): string => {
      const m = r.match(method, path)
      return m.kind === 'found' ? `${m.route.route.path}${m.head ? ' (head)' : ''}` : m.kind
    }
    for (const path of paths) {
      expect(hit('GET', path)).toBe(path)
      expect(hit('HEAD', path)).toBe(`${path} (head)`)
    }
    expect(hit('POST', '/c/2')).toBe('/c/2')
    expect(hit('PUT', '/c/3')).toBe('method')
    // Same lengths, other characters; lengths with no static path; longer than any; a pattern.
    for (const path of ['/b', '/bB', '/c/5', '/C/1', '/nine/9', '/nine/a', '', '/', '/c/', '/nine/10', `/${'x'.repeat(100)}`]) expect(hit('GET', path)).toBe('none')
    expect(hit('GET', '/p/1')).toBe('/p/:x')
    expect(new Router([]).match('GET', '/a').kind).toBe('none')
  })
})

describe('router: dispatch by Host', () => {
  const r = new Router(gatewayRoutes())

  it('captures the first label of a matching host, ignoring port, case and a trailing dot', () => {
    for (const host of ['docs-alice.localhost:7705', 'DOCS-ALICE.LOCALHOST', 'docs-alice.localhost.']) {
      const m = r.matchHost('GET', host, '/css/site.css')
      expect(m?.kind === 'found' ? m.params : undefined).toEqual({ path: 'css/site.css', site: 'docs-alice' })
    }
    const exact = r.matchHost('GET', 'admin.example:80', '/status')
    expect(exact?.kind).toBe('found')
  })

  it('leaves every other host, and a request without one, to the ordinary routes', () => {
    expect(r.hasHostRoutes).toBe(true)
    for (const host of ['localhost:7705', '127.0.0.1:7705', 'a.b.localhost', '.localhost', 'evil.example', 'bad_label.localhost', '[::1]:7705', undefined]) {
      expect(r.matchHost('GET', host, '/x')).toBeUndefined()
    }
    expect(new Router([{ method: 'GET', path: '/x', handler: ok('x') }]).hasHostRoutes).toBe(false)
  })

  it('a matching host sees only its own routes (404/405 there, never an ordinary route)', () => {
    expect(r.matchHost('GET', 'admin.example', '/hello')).toEqual({ kind: 'none' })
    expect(r.matchHost('POST', 'x.localhost', '/')).toEqual({ kind: 'method', allow: 'GET, HEAD' })
  })
})

describe('handler: host routes come before built-ins; cors: false routes carry no CORS headers', () => {
  const topology: Topology = { service: 'gw', tasks: [], channels: [] }
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c()
  })
  function service(): RonService {
    const host = createServiceHost({ id: 'gw', version: '1', topology })
    host.routes(gatewayRoutes())
    closers.push(() => host.service.close())
    return host.service
  }

  it('in process: a site host answers /healthz from its own routes; CORS only where allowed', async () => {
    const svc = service()
    const site = await svc.dispatch(mkReq('GET', '/healthz', { headers: { host: 'docs-alice.localhost:1', origin: 'http://evil.localhost:1' } }))
    expect(site.status).toBe(200)
    expect(site.headers['access-control-allow-origin']).toBeUndefined()
    expect(await readJson(site)).toEqual({ tag: 'site', params: { path: 'healthz', site: 'docs-alice' } })
    const builtin = await svc.dispatch(mkReq('GET', '/healthz', { headers: { host: 'localhost:1', origin: 'http://evil.localhost:1' } }))
    expect(builtin.status).toBe(200)
    expect(builtin.headers['access-control-allow-origin']).toBe('*')
    await readJson(builtin)
    // An error on a site host carries no CORS header either.
    const refused = await svc.dispatch(mkReq('DELETE', '/x', { headers: { host: 'docs-alice.localhost', origin: 'http://evil.localhost' } }))
    expect(refused.status).toBe(405)
    expect(refused.headers['access-control-allow-origin']).toBeUndefined()
    await readJson(refused)
  })

  it('over a real socket: the same answers, the Host header sent by the client', async () => {
    const srv = await serve(service(), { port: 0 })
    closers.push(() => srv.close())
    const port = new URL(srv.url).port
    const { request } = await import('node:http')
    const get = (host: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, headers: { host, origin: 'http://other.localhost' } }, (res) => {
          let body = ''
          res.setEncoding('utf8').on('data', (c: string) => (body += c))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        })
        req.on('error', reject)
        req.end()
      })
    const site = await get(`my--site-alice.localhost:${port}`, '/index.html')
    expect(site.status).toBe(200)
    expect(site.headers['access-control-allow-origin']).toBeUndefined()
    expect(JSON.parse(site.body)).toEqual({ tag: 'site', params: { path: 'index.html', site: 'my--site-alice' } })
    const plain = await get(`localhost:${port}`, '/n/docs.alice/index.html')
    expect(plain.headers['access-control-allow-origin']).toBe('*')
    expect(JSON.parse(plain.body)).toMatchObject({ params: { name: 'docs.alice', path: 'index.html' } })
  })

  it('a handler without host routes takes no host path (the hot path unchanged)', async () => {
    const h = createHttpHandler({ serviceId: 't', routes: [{ method: 'GET', path: '/hello', handler: ok('hello') }] })
    const res = await h.dispatch(mkReq('GET', '/hello', { headers: { host: 'x.localhost' } }))
    expect(res.status).toBe(200)
    await readJson(res)
  })
})
