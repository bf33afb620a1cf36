/**
 * `serve()` with a service on the contract: the listener policy from the service's `http.*` keys,
 * the global connection cap, and a drain that closes idle keep-alive sockets at once and busy ones
 * after their response (issue 21).
 */
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createServiceHost, serve, serviceBaseShape, type RonServer } from '@ron/core'
import { VirtualClock, deferred } from '@ron/core/testing'

const servers: RonServer[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

function rawSocket(srv: RonServer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(srv.port, '127.0.0.1', () => resolve(s))
    s.once('error', reject)
    sockets.push(s)
  })
}

/** Everything received until the socket closes. */
function untilClosed(s: Socket): Promise<string> {
  let data = ''
  s.on('data', (d: Buffer) => (data += d.toString()))
  return new Promise((resolve) => {
    if (s.destroyed) resolve(data)
    s.once('close', () => resolve(data))
  })
}

/** The first chunk of a reply. */
function reply(s: Socket, request: string): Promise<string> {
  return new Promise((resolve) => {
    s.once('data', (d: Buffer) => resolve(d.toString()))
    s.write(request)
  })
}

function service(http: Record<string, unknown> = {}) {
  const schema = z.strictObject({ ...serviceBaseShape() })
  const host = createServiceHost({ id: 'svc', version: '1', topology: { service: 'svc', tasks: [], channels: [] }, config: { schema, input: { http, drainReadWindowMs: 0, drainDeadlineMs: 2000 }, extendsBase: true } })
  const gate = deferred()
  const entered = deferred()
  host.routes([
    { method: 'GET', path: '/hello', handler: () => ({ status: 200, body: 'hi' }) },
    {
      method: 'GET',
      path: '/slow',
      handler: async () => {
        entered.resolve()
        await gate.promise
        return { status: 200, body: 'done' }
      },
    },
  ])
  return { host, gate, entered }
}

describe('serve() and the service contract', () => {
  it("takes its idle timeout and connection caps from the service's listener policy", async () => {
    const { host } = service({ idleTimeoutMs: 1234, maxConcurrentPerIp: 2, maxConnections: 3 })
    const clock = new VirtualClock(0)
    const srv = await serve(host.service, { port: 0, clock })
    servers.push(srv)
    const first = await rawSocket(srv)
    const firstClosed = untilClosed(first)
    await rawSocket(srv)
    const third = await rawSocket(srv)
    const closed = untilClosed(third)
    third.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    const data = await closed
    expect(data).toMatch(/^HTTP\/1\.1 429/)
    expect(data).toContain('"reason":"per_ip"')
    // The idle timeout is the sweep's (node's keep-alive timer is off): an idle socket is kept
    // for 1234 ms and closed within a quarter of that more.
    expect(srv.server.keepAliveTimeout).toBe(0)
    await clock.advance(1234)
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
    expect(first.destroyed).toBe(false)
    await clock.advance(309)
    await firstClosed
    await host.service.close()
  })

  it('answers a socket over the global connection cap with 429 Busy max_connections', async () => {
    const { host } = service({ maxConnections: 2 })
    const srv = await serve(host.service, { port: 0 })
    servers.push(srv)
    const a = await rawSocket(srv)
    await rawSocket(srv)
    const c = await rawSocket(srv)
    const closed = untilClosed(c)
    c.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    const data = await closed
    expect(data).toMatch(/^HTTP\/1\.1 429/)
    expect(data.toLowerCase()).toContain('retry-after: 1')
    expect(data).toContain('"reason":"max_connections","limit":2')
    expect(srv.connections).toBe(2)
    expect(await reply(a, 'GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 200/)
    await host.service.close()
  })

  it('when intake stops, an idle keep-alive socket is closed at once and a busy one after its response', async () => {
    const { host, gate, entered } = service()
    const srv = await serve(host.service, { port: 0 })
    servers.push(srv)
    const idle = await rawSocket(srv)
    const first = await reply(idle, 'GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    expect(first).toMatch(/^HTTP\/1\.1 200/)
    expect(first.toLowerCase()).toContain('connection: keep-alive')
    const idleClosed = untilClosed(idle)
    const busy = await rawSocket(srv)
    const busyClosed = untilClosed(busy)
    busy.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n')
    await entered.promise

    const closing = host.service.close()
    expect(await idleClosed).toBe('')
    expect(busy.destroyed).toBe(false)
    gate.resolve()
    const data = await busyClosed
    expect(data).toMatch(/^HTTP\/1\.1 200/)
    expect(data.toLowerCase()).toContain('connection: close')
    expect(data).toContain('done')
    await closing
    // The listener still answers new connections (503) until its host closes it.
    const late = await rawSocket(srv)
    const lateData = untilClosed(late)
    late.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    const text = await lateData
    expect(text).toMatch(/^HTTP\/1\.1 503/)
    expect(text.toLowerCase()).toContain('connection: close')
  })
})
