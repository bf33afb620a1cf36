/**
 * The gateway (SPEC §6a "Gateway"): names and manifest addresses served with the manifest's type,
 * `index.html` for directories, `404.html`, redirects to a name's own origin, a sandbox on the
 * shared path origin, no CORS on site content, ETag/Range/If-None-Match.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, metricValue } from '@ron/core'
import { mesh, text, type Mesh } from './gateway-helpers.js'

let m: Mesh | undefined
afterEach(async () => {
  await m?.close()
  m = undefined
})

const SITE = {
  'index.html': '<!doctype html><link rel="stylesheet" href="css/site.css"><a href="docs/">docs</a>',
  'css/site.css': 'body { color: rgb(1, 2, 3) }',
  'img/logo.png': new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]),
  'docs/index.html': '<p>docs</p>',
  '404.html': '<p>not here</p>',
}
const ORIGIN = { origin: 'http://evil-site.localhost:7705' }
const NOT_GATEWAY_HOST = { host: '127.0.0.1:7705' }

describe('path gateway /n/<name>/<path>', () => {
  it('serves each file with its manifest type, nosniff, the sandbox CSP, a short TTL and no CORS', async () => {
    m = await mesh()
    await m.publish('site.alice', SITE)
    const root = await m.get('/n/site.alice/', { ...NOT_GATEWAY_HOST, ...ORIGIN })
    expect(root.status).toBe(200)
    expect(root.utf8).toBe(SITE['index.html'])
    expect(root.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(root.headers['x-content-type-options']).toBe('nosniff')
    expect(root.headers['content-security-policy']).toMatch(/^sandbox allow-scripts/)
    expect(root.headers['cache-control']).toBe('public, max-age=10')
    expect(root.headers['etag']).toBe(`"${addressOf(text(SITE['index.html']))}"`)
    expect(root.headers['access-control-allow-origin']).toBeUndefined()
    const css = await m.get('/n/site.alice/css/site.css', NOT_GATEWAY_HOST)
    expect([css.status, css.headers['content-type'], css.utf8]).toEqual([200, 'text/css; charset=utf-8', SITE['css/site.css']])
    const png = await m.get('/n/site.alice/img/logo.png', NOT_GATEWAY_HOST)
    expect(png.headers['content-type']).toBe('image/png')
  })

  it('redirects a directory to its slash, serves 404.html with 404, and the bare name to its root', async () => {
    m = await mesh()
    await m.publish('site.alice', SITE)
    const docs = await m.get('/n/site.alice/docs?x=1', NOT_GATEWAY_HOST)
    expect([docs.status, docs.headers['location']]).toEqual([301, '/n/site.alice/docs/?x=1'])
    expect((await m.get('/n/site.alice/docs/', NOT_GATEWAY_HOST)).utf8).toBe(SITE['docs/index.html'])
    const missing = await m.get('/n/site.alice/nope.html', NOT_GATEWAY_HOST)
    expect([missing.status, missing.headers['content-type'], missing.utf8]).toEqual([404, 'text/html; charset=utf-8', SITE['404.html']])
    const bare = await m.get('/n/site.alice', NOT_GATEWAY_HOST)
    expect([bare.status, bare.headers['location']]).toEqual([301, '/n/site.alice/'])
    // A site without 404.html: the error envelope.
    await m.publish('plain.alice', { 'index.html': 'x' })
    const gone = await m.get('/n/plain.alice/nope', NOT_GATEWAY_HOST)
    expect(gone.status).toBe(404)
    expect(JSON.parse(gone.utf8)).toMatchObject({ error: { code: 'NotFound' } })
    expect((await m.get('/n/nobody.alice/', NOT_GATEWAY_HOST)).status).toBe(404)
    expect((await m.get('/n/Not_A_Name/', NOT_GATEWAY_HOST)).status).toBe(400)
  })

  it('on the gateway domain, redirects to the name\'s own origin, keeping the path and query', async () => {
    m = await mesh()
    await m.publish('my-site.alice', SITE)
    const r = await m.get('/n/my-site.alice/css/site.css?v=2', { host: 'localhost:7705' })
    expect([r.status, r.headers['location']]).toEqual([301, '//my--site-alice.localhost:7705/css/site.css?v=2'])
    const bare = await m.get('/n/my-site.alice', { host: 'LOCALHOST:7705' })
    expect(bare.headers['location']).toBe('//my--site-alice.localhost:7705/')
    // A name whose label would pass 63 characters has no origin: served here, no redirect.
    const long = `${'a'.repeat(40)}.${'b'.repeat(30)}`
    await m.publish(long, SITE)
    const served = await m.get(`/n/${long}/`, { host: 'localhost:7705' })
    expect([served.status, served.utf8]).toEqual([200, SITE['index.html']])
    expect(served.headers['content-security-policy']).toMatch(/^sandbox/)
  })

  it('ETag, If-None-Match (304), Range (206, 416) and HEAD', async () => {
    m = await mesh()
    await m.publish('site.alice', SITE)
    const css = SITE['css/site.css']
    const etag = `"${addressOf(text(css))}"`
    const notModified = await m.get('/n/site.alice/css/site.css', { ...NOT_GATEWAY_HOST, 'if-none-match': `W/"b3:x", ${etag}` })
    expect([notModified.status, notModified.utf8, notModified.headers['etag']]).toEqual([304, '', etag])
    const part = await m.get('/n/site.alice/css/site.css', { ...NOT_GATEWAY_HOST, range: 'bytes=0-3' })
    expect([part.status, part.utf8, part.headers['content-range']]).toEqual([206, css.slice(0, 4), `bytes 0-3/${css.length}`])
    const suffix = await m.get('/n/site.alice/css/site.css', { ...NOT_GATEWAY_HOST, range: 'bytes=-3' })
    expect([suffix.status, suffix.utf8]).toEqual([206, css.slice(-3)])
    const beyond = await m.get('/n/site.alice/css/site.css', { ...NOT_GATEWAY_HOST, range: `bytes=${css.length}-` })
    expect([beyond.status, beyond.headers['content-range']]).toEqual([416, `bytes */${css.length}`])
    const head = await m.get('/n/site.alice/css/site.css', NOT_GATEWAY_HOST, 'HEAD')
    expect([head.status, head.utf8, head.headers['content-length'], head.headers['content-type']]).toEqual([200, '', String(css.length), 'text/css; charset=utf-8'])
  })
})

describe('a name on its own origin: http://<label>.localhost:<port>/', () => {
  it('serves the site for any path (built-in paths included), without CSP or CORS; an unknown label is 404', async () => {
    m = await mesh()
    await m.publish('my-site.alice', SITE)
    const host = { host: 'my--site-alice.localhost:7705' }
    const root = await m.get('/', { ...host, ...ORIGIN })
    expect([root.status, root.utf8]).toEqual([200, SITE['index.html']])
    expect(root.headers['content-security-policy']).toBeUndefined()
    expect(root.headers['access-control-allow-origin']).toBeUndefined()
    expect((await m.get('/css/site.css', host)).utf8).toBe(SITE['css/site.css'])
    expect((await m.get('/docs', host)).headers['location']).toBe('/docs/')
    // /healthz on a site origin is the site's path (here: its 404.html), not interop's health.
    const health = await m.get('/healthz', host)
    expect([health.status, health.utf8]).toEqual([404, SITE['404.html']])
    for (const label of ['nobody-alice', 'my---site', 'Not_a_label']) {
      const r = await m.get('/', { host: `${label}.localhost:7705` })
      expect(r.status, label).toBe(404)
    }
    // The gateway's own host keeps its built-ins and raw reads.
    expect((await m.get('/healthz', { host: 'localhost:7705' })).status).toBe(200)
  })

  it('follows a republish at once (names move; the TTL is short)', async () => {
    m = await mesh()
    await m.publish('site.alice', { 'index.html': 'one' })
    expect((await m.get('/', { host: 'site-alice.localhost' })).utf8).toBe('one')
    await m.publish('site.alice', { 'index.html': 'two' })
    expect((await m.get('/', { host: 'site-alice.localhost' })).utf8).toBe('two')
  })

  it('with subdomains off: no site origins and no redirects', async () => {
    m = await mesh({ gateway: { subdomains: false } })
    await m.publish('site.alice', SITE)
    expect((await m.get('/n/site.alice/', { host: 'localhost:7705' })).status).toBe(200)
    expect((await m.get('/', { host: 'site-alice.localhost' })).status).toBe(404)
  })
})

describe('/o/<manifest>/<path> and raw /o/<b3>', () => {
  it('serves a manifest address immutably under the sandbox; the raw object stays application/octet-stream', async () => {
    m = await mesh()
    const ma = await m.publish('site.alice', SITE)
    const css = await m.get(`/o/${ma}/css/site.css`, { host: 'localhost:7705', ...ORIGIN })
    expect([css.status, css.utf8, css.headers['content-type']]).toEqual([200, SITE['css/site.css'], 'text/css; charset=utf-8'])
    expect(css.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(css.headers['content-security-policy']).toMatch(/^sandbox/)
    expect(css.headers['access-control-allow-origin']).toBeUndefined()
    expect((await m.get(`/o/${ma}/`)).utf8).toBe(SITE['index.html'])
    const raw = await m.get(`/o/${ma}`, ORIGIN)
    expect(raw.headers['content-type']).toBe('application/octet-stream')
    expect(JSON.parse(raw.utf8)).toMatchObject({ kind: 'dir' })
    // Raw objects are public data: readable cross-origin like storage's.
    expect(raw.headers['access-control-allow-origin']).toBe('*')
  })

  it('a file manifest serves its content at the root only; something that is not a manifest is 422', async () => {
    m = await mesh()
    const content = await m.put('plain text')
    const fm = await m.put(JSON.stringify({ content, size: 10, type: 'text/plain; charset=utf-8' }))
    const root = await m.get(`/o/${fm}/`)
    expect([root.status, root.utf8, root.headers['content-type']]).toEqual([200, 'plain text', 'text/plain; charset=utf-8'])
    expect((await m.get(`/o/${fm}/x`)).status).toBe(404)
    const notManifest = await m.get(`/o/${content}/`)
    expect(notManifest.status).toBe(422)
    expect(JSON.parse(notManifest.utf8)).toMatchObject({ error: { code: 'InvalidReference', details: { reason: 'not_a_manifest' } } })
    expect((await m.get(`/o/b3:nope/`)).status).toBe(400)
  })

  it('reads count in the HTTP metrics under the gateway route names', async () => {
    m = await mesh()
    const ma = await m.publish('site.alice', SITE)
    await m.get(`/o/${ma}/`)
    expect(metricValue(await m.interop.metricsText(), 'http_requests_total', { route: 'GET /o/:addr/*path', method: 'GET', status: '200' })).toBe(1)
  })
})
