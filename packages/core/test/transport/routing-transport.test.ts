import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, MemoryTransport, RoutingTransport, createServiceHost, isRonError, serve, type RonServer, type ServiceHost } from '@ron/core'

function hello(id: string): ServiceHost {
  const host = createServiceHost({ id, version: '1', topology: { service: id, tasks: [], channels: [] } })
  host.routes([{ method: 'GET', path: '/who', handler: () => ({ status: 200, json: { id } }) }])
  return host
}

describe('RoutingTransport', () => {
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('sends names to the local transport and http(s) URLs to the remote one; close() closes both', async () => {
    const local = hello('local')
    const remote = hello('remote')
    cleanups.push(() => local.service.close(), () => remote.service.close())
    const srv: RonServer = await serve(remote.service, { port: 0 })
    cleanups.push(() => srv.close())
    const memory = new MemoryTransport()
    memory.mount('storage', local.service)
    const t = new RoutingTransport({ local: memory, remote: new HttpTransport() })
    expect(await (await t.request('storage', { method: 'GET', path: '/who' })).json()).toEqual({ id: 'local' })
    expect(await (await t.request(srv.url, { method: 'GET', path: '/who' })).json()).toEqual({ id: 'remote' })
    await t.close()
    await t[Symbol.asyncDispose]()
    await expect(t.request('storage', { method: 'GET', path: '/who' })).rejects.toSatisfy((e) => isRonError(e, 'Closed'))
    await expect(memory.request('storage', { method: 'GET', path: '/who' })).rejects.toSatisfy((e) => isRonError(e, 'Closed'))
  })
})
