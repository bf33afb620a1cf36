import { afterEach, describe, expect, it } from 'vitest'
import { createServiceHost, serve, type RonServer, type RonService, type Route, type ServiceHostOptions, type Topology } from '@ron/core'
import { z } from 'zod'
import { mkReq, readJson } from '../http/helpers.js'

const topology: Topology = { service: 'svc', tasks: [], channels: [] }
const routes: Route[] = [
  { method: 'GET', path: '/thing', handler: () => ({ status: 200, headers: { etag: '"x"' }, json: { ok: true } }) },
  { method: 'PUT', path: '/thing', public: true, handler: () => ({ status: 204 }) },
]

describe('host CORS (SPEC.md 6b)', () => {
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })
  function mk(cors?: ServiceHostOptions['cors']): RonService {
    const host = createServiceHost({ id: 'svc', version: '1', topology, ...(cors === undefined ? {} : { cors }) })
    host.routes(routes)
    cleanups.push(() => host.service.close())
    return host.service
  }
  async function listen(svc: RonService): Promise<RonServer> {
    const srv = await serve(svc, { port: 0 })
    cleanups.push(() => srv.close())
    return srv
  }

  it('public reads answer any origin with * and expose ETag, Content-Range, Accept-Ranges, X-Corr-ID, Retry-After (real socket)', async () => {
    const srv = await listen(mk())
    const res = await fetch(`${srv.url}/thing`, { headers: { origin: 'https://app.example' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-expose-headers')).toBe('ETag, Content-Range, Accept-Ranges, X-Corr-ID, Retry-After')
    expect(res.headers.get('etag')).toBe('"x"')
    expect(res.headers.get('x-corr-id')).not.toBeNull()
    await res.arrayBuffer()
    const plain = await fetch(`${srv.url}/thing`)
    expect(plain.headers.get('access-control-allow-origin')).toBeNull()
    await plain.arrayBuffer()
  })

  it('preflights a write from an allowed origin with Authorization, Content-Encoding and X-Expect-Address allowed', async () => {
    const srv = await listen(mk({ writeOrigins: ['https://admin.example'] }))
    const res = await fetch(`${srv.url}/thing`, {
      method: 'OPTIONS',
      headers: { origin: 'https://admin.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization' },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://admin.example')
    expect(res.headers.get('access-control-allow-methods')).toContain('PUT')
    const allowed = res.headers.get('access-control-allow-headers')!.split(', ')
    for (const h of ['Authorization', 'Content-Encoding', 'X-Expect-Address']) expect(allowed).toContain(h)
    expect(res.headers.get('vary')).toContain('Origin')
    const put = await fetch(`${srv.url}/thing`, { method: 'PUT', headers: { origin: 'https://admin.example' } })
    expect(put.status).toBe(204)
    expect(put.headers.get('access-control-allow-origin')).toBe('https://admin.example')
  })

  it('refuses the preflight of a write from an origin not on the list with 403 Forbidden, and adds no CORS header to its writes', async () => {
    const svc = mk({ writeOrigins: ['https://admin.example'] })
    const pre = await svc.dispatch(mkReq('OPTIONS', '/thing', { headers: { origin: 'https://evil.example', 'access-control-request-method': 'PUT' } }))
    expect(pre.status).toBe(403)
    expect(await readJson(pre)).toMatchObject({ error: { code: 'Forbidden', details: { reason: 'cors_origin' } } })
    const put = await svc.dispatch(mkReq('PUT', '/thing', { headers: { origin: 'https://evil.example' } }))
    expect(put.headers['access-control-allow-origin']).toBeUndefined()
  })

  it('restricted reads echo listed origins with Vary: Origin and leave others without Allow-Origin', async () => {
    const svc = mk({ readOrigins: ['https://app.example'] })
    const ok = await svc.dispatch(mkReq('GET', '/thing', { headers: { origin: 'https://app.example' } }))
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.example')
    expect(ok.headers.vary).toBe('Origin')
    const other = await svc.dispatch(mkReq('GET', '/thing', { headers: { origin: 'https://other.example' } }))
    expect(other.headers['access-control-allow-origin']).toBeUndefined()
    expect(other.headers.vary).toBe('Origin')
    const pre = await svc.dispatch(mkReq('OPTIONS', '/thing', { headers: { origin: 'https://other.example', 'access-control-request-method': 'GET' } }))
    expect(pre.status).toBe(403)
  })

  it('an OPTIONS request that is not a preflight goes to routing (405 with Allow)', async () => {
    const svc = mk()
    const res = await svc.dispatch(mkReq('OPTIONS', '/thing'))
    expect(res.status).toBe(405)
  })

  it('setCors from an onReload hook makes the write origins reloadable, and a rolled-back reload restores them', async () => {
    const schema = z.object({ cors: z.object({ writeOrigins: z.array(z.string()).default([]) }).default({ writeOrigins: [] }), fail: z.boolean().default(false) })
    const host = createServiceHost({ id: 'svc', version: '1', topology, config: { schema, input: {} } })
    host.routes(routes)
    cleanups.push(() => host.service.close())
    host.onReload(() => host.setCors(host.config.get().cors))
    host.onReload(() => {
      if (host.config.get().fail) throw new Error('refused')
    })
    const preflight = async (): Promise<number> => {
      const res = await host.service.dispatch(
        mkReq('OPTIONS', '/thing', { headers: { origin: 'https://admin.example', 'access-control-request-method': 'PUT' } }),
      )
      await readJson(res).catch(() => undefined)
      return res.status
    }
    expect(await preflight()).toBe(403)
    await host.service.reload({ cors: { writeOrigins: ['https://admin.example'] } })
    expect(await preflight()).toBe(204)
    await expect(host.service.reload({ cors: { writeOrigins: [] }, fail: true })).rejects.toMatchObject({ code: 'Internal' })
    expect(await preflight()).toBe(204)
    await host.service.reload({ cors: { writeOrigins: [] } })
    expect(await preflight()).toBe(403)
  })
})
