import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { createHttpHandler, serve, type RonServer, type Route, type HttpLimits } from '../../src/http/index.js'
import { VirtualClock } from '../../src/testing/index.js'
import { expectEnvelope } from './helpers.js'

const servers: RonServer[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

function deferred<T = void>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

async function start(routes: Route[], limits: HttpLimits = {}, opts: Parameters<typeof serve>[1] = {}) {
  const h = createHttpHandler({ serviceId: 't', routes, limits })
  const srv = await serve(h, { port: 0, ...opts })
  servers.push(srv)
  return srv
}

function rawSocket(srv: RonServer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(srv.port, '127.0.0.1', () => resolve(s))
    s.once('error', reject)
    sockets.push(s)
  })
}

/** Resolves with everything the server sent once it closed the socket. */
function untilClosed(s: Socket): Promise<string> {
  let data = ''
  s.on('data', (d: Buffer) => (data += d.toString()))
  return new Promise((resolve) => {
    if (s.destroyed) resolve(data)
    s.once('close', () => resolve(data))
  })
}

const sizeRoute: Route = {
  method: 'POST',
  path: '/size',
  public: true,
  bodyLimit: 1024,
  handler: async (ctx) => {
    let n = 0
    for await (const c of ctx.stream()) n += c.byteLength
    return { status: 200, json: { n } }
  },
}

describe('serve: body limits over real sockets', () => {
  it('rejects a Content-Length over the cap with 413 and the envelope', async () => {
    const srv = await start([sizeRoute])
    const res = await request(`${srv.url}/size`, { method: 'POST', body: Buffer.alloc(2048), headers: { 'x-corr-id': 'cap-1' } })
    expect(res.statusCode).toBe(413)
    expect(res.headers['x-corr-id']).toBe('cap-1')
    expect(res.headers['content-type']).toBe('application/json')
    expectEnvelope(await res.body.json(), 'OverLimit', 'cap-1')
  })

  it('rejects a chunked (streamed) body that grows over the cap with 413', async () => {
    const srv = await start([sizeRoute])
    async function* chunks() {
      for (let i = 0; i < 4; i++) yield await Promise.resolve(Buffer.alloc(400))
    }
    const res = await request(`${srv.url}/size`, { method: 'POST', body: Readable.from(chunks()) })
    expect(res.headers['content-length']).toBeDefined()
    expect(res.statusCode).toBe(413)
    expectEnvelope(await res.body.json(), 'OverLimit')
  })

  it('accepts a body under the cap', async () => {
    const srv = await start([sizeRoute])
    const res = await request(`${srv.url}/size`, { method: 'POST', body: Buffer.alloc(1000) })
    expect(await res.body.json()).toEqual({ n: 1000 })
  })

  it('stops a gzip bomb (50 MB of zeros) at the ratio cap without inflating it', async () => {
    let decoded = 0
    // 50 gzip members of 1 MB of zeros each: a valid gzip stream of 50 MB of zeros, built cheaply.
    const member = gzipSync(Buffer.alloc(1_000_000))
    const bomb = Buffer.concat(Array.from({ length: 50 }, () => member))
    const route: Route = {
      method: 'POST',
      path: '/bomb',
      public: true,
      bodyLimit: 512 * 1024 * 1024,
      handler: async (ctx) => {
        for await (const c of ctx.stream()) decoded += c.byteLength
        return { status: 200, json: { decoded } }
      },
    }
    const srv = await start([route])
    const res = await request(`${srv.url}/bomb`, { method: 'POST', body: bomb, headers: { 'content-encoding': 'gzip' } })
    expect(res.statusCode).toBe(413)
    const e = expectEnvelope(await res.body.json(), 'OverLimit')
    expect(e.details).toMatchObject({ source: 'decompression_ratio', limit: 10 })
    // ratio 10 x ~50 KB encoded + 64 KiB slack, plus at most a zlib chunk of read-ahead
    expect(decoded).toBeLessThan(bomb.byteLength * 10 + 64 * 1024 + 1)
    expect(decoded).toBeLessThan(2 * 1024 * 1024)
  })

  it('applies the absolute decompressed cap', async () => {
    const route: Route = { ...sizeRoute, path: '/abs', bodyLimit: 1e9 }
    const srv = await start([route], { maxDecompressedBytes: 100_000, decompressionRatio: 1e6 })
    const res = await request(`${srv.url}/abs`, { method: 'POST', body: gzipSync(Buffer.alloc(1_000_000)), headers: { 'content-encoding': 'gzip' } })
    expect(res.statusCode).toBe(413)
    expect(expectEnvelope(await res.body.json(), 'OverLimit').details).toMatchObject({ source: 'decompressed_size', limit: 100_000 })
  })

  it('rejects an unknown Content-Encoding with 415', async () => {
    const srv = await start([sizeRoute])
    const res = await request(`${srv.url}/size`, { method: 'POST', body: 'x', headers: { 'content-encoding': 'compress' } })
    expect(res.statusCode).toBe(415)
    expectEnvelope(await res.body.json(), 'UnsupportedMediaType')
  })

  it('decodes br and deflate bodies', async () => {
    const { brotliCompressSync, deflateSync } = await import('node:zlib')
    const srv = await start([sizeRoute])
    for (const [enc, buf] of [['br', brotliCompressSync(Buffer.alloc(900))], ['deflate', deflateSync(Buffer.alloc(900))]] as const) {
      const res = await request(`${srv.url}/size`, { method: 'POST', body: buf, headers: { 'content-encoding': enc } })
      expect(await res.body.json()).toEqual({ n: 900 })
    }
  })
})

describe('serve: errors, HEAD, corr-id over sockets', () => {
  const hello: Route = { method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) }

  it('404 and 405 carry the envelope, Allow and the echoed corr-id', async () => {
    const srv = await start([hello])
    const nf = await request(`${srv.url}/nope`, { headers: { 'x-corr-id': 'c-404' } })
    expect(nf.statusCode).toBe(404)
    expect(nf.headers['x-corr-id']).toBe('c-404')
    expectEnvelope(await nf.body.json(), 'NotFound', 'c-404')
    const na = await request(`${srv.url}/hello`, { method: 'POST', body: '' })
    expect(na.statusCode).toBe(405)
    expect(na.headers.allow).toBe('GET, HEAD')
    expectEnvelope(await na.body.json(), 'MethodNotAllowed', na.headers['x-corr-id'] as string)
  })

  it('HEAD on a GET route keeps content-length and sends no body', async () => {
    const srv = await start([hello])
    const res = await request(`${srv.url}/hello`, { method: 'HEAD' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-length']).toBe(String(JSON.stringify({ hello: 'world' }).length))
    expect((await res.body.arrayBuffer()).byteLength).toBe(0)
  })

  it('rejects a port in use with EADDRINUSE naming the port', async () => {
    const srv = await start([hello])
    const h = createHttpHandler({ serviceId: 't', routes: [hello] })
    const err: unknown = await serve(h, { port: srv.port }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((err as { code?: string }).code).toBe('EADDRINUSE')
    expect((err as Error).message).toContain(String(srv.port))
  })
})

describe('serve: slow clients, per-IP cap, graceful close', () => {
  it('times out a client that stalls mid-body and releases its socket', async () => {
    const srv = await start([sizeRoute], { readTimeoutMs: 200 })
    const s = await rawSocket(srv)
    const closed = untilClosed(s)
    s.write('POST /size HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\nx-corr-id: slow-1\r\n\r\n0123456789')
    const data = await closed
    expect(data).toMatch(/^HTTP\/1\.1 408/)
    expect(data).toContain('x-corr-id: slow-1')
    expect(data).toContain('"code":"RequestTimeout"')
    expect(srv.connections).toBe(0)
  })

  it('times out a client that stalls in the headers', async () => {
    const srv = await start([sizeRoute], {}, { readTimeoutMs: 200 })
    const s = await rawSocket(srv)
    const closed = untilClosed(s)
    s.write('GET /size HTTP/1.1\r\nhost: x\r\n')
    await closed
    expect(s.destroyed).toBe(true)
  })

  it('answers the third socket from one IP with 429 Busy per_ip, Retry-After and the envelope when maxConnectionsPerIp is 2', async () => {
    const srv = await start([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, body: 'hi' }) }], {}, { maxConnectionsPerIp: 2 })
    const a = await rawSocket(srv)
    await rawSocket(srv)
    const c = await rawSocket(srv)
    const closed = untilClosed(c)
    c.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    const data = await closed
    expect(data).toMatch(/^HTTP\/1\.1 429/)
    expect(data.toLowerCase()).toContain('retry-after: 1')
    const body = JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)) as unknown
    expect(body).toMatchObject({ error: { code: 'Busy', retryable: true, details: { reason: 'per_ip', limit: 2 } } })
    expect(srv.connections).toBe(2)
    // the first two still work
    const reply = new Promise<string>((resolve) => a.once('data', (d: Buffer) => resolve(d.toString())))
    a.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    expect(await reply).toMatch(/^HTTP\/1\.1 200/)
  })

  it('adopt() applies a policy given after start: its per-IP cap, header timeout and intake stop', async () => {
    const srv = await start([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, body: 'hi' }) }])
    const intake = new AbortController()
    srv.adopt({ readTimeoutMs: 1234, idleTimeoutMs: 4321, maxConnections: 100, maxConnectionsPerIp: 1, intakeStopped: intake.signal })
    expect(srv.server.headersTimeout).toBe(1234)
    // Idle sockets are the sweep's (below), never a keep-alive timer of node's per response.
    expect(srv.server.keepAliveTimeout).toBe(0)
    const a = await rawSocket(srv)
    const b = await rawSocket(srv)
    const closed = untilClosed(b)
    b.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    expect(await closed).toMatch(/^HTTP\/1\.1 429/)
    // The socket within the cap is served and kept alive; once intake stops, it is closed.
    const reply = new Promise<string>((resolve) => a.once('data', (d: Buffer) => resolve(d.toString())))
    a.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    expect(await reply).toMatch(/^HTTP\/1\.1 200/)
    expect(a.destroyed).toBe(false)
    const aClosed = untilClosed(a)
    intake.abort()
    await aClosed
    expect(srv.connections).toBe(0)
  })

  it('close() lets in-flight requests finish, refuses new connections, and is idempotent', async () => {
    const gate = deferred()
    const entered = deferred()
    const srv = await start([
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
    const inflight = request(`${srv.url}/slow`)
    await entered.promise
    const closing = srv.close()
    expect(srv.close()).toBe(closing)
    await expect(request(`${srv.url}/slow`)).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    gate.resolve()
    const res = await inflight
    expect(res.statusCode).toBe(200)
    expect(await res.body.text()).toBe('done')
    await closing
    expect(srv.connections).toBe(0)
  })

  it('aborting the serve signal closes the server', async () => {
    const ac = new AbortController()
    const srv = await start([sizeRoute], {}, { signal: ac.signal })
    const closed = new Promise<void>((resolve) => srv.server.once('close', () => resolve()))
    ac.abort()
    await closed
    expect(srv.server.listening).toBe(false)
  })

  it('close() destroys a straggler past the drain deadline and aborts its signal', async () => {
    const aborted = deferred<unknown>()
    const entered = deferred()
    const srv = await start(
      [
        {
          method: 'GET',
          path: '/hang',
          handler: (ctx) =>
            new Promise((_resolve, reject) => {
              entered.resolve()
              ctx.signal.addEventListener('abort', () => {
                aborted.resolve(ctx.signal.reason)
                reject(ctx.signal.reason as Error)
              })
            }),
        },
      ],
      {},
      { drainDeadlineMs: 100 },
    )
    const inflight = request(`${srv.url}/hang`).then(
      () => 'completed',
      () => 'failed',
    )
    await entered.promise
    await srv.close()
    expect(await inflight).toBe('failed')
    expect(await aborted.promise).toMatchObject({ code: 'Canceled' })
  })
})

describe('serve: streaming replies', () => {
  it('respects backpressure and calls the iterator return() when the client goes away', async () => {
    let produced = 0
    let pulledWhileFull = 0
    let serverRes: ServerResponse | undefined
    const blocked = deferred()
    const returned = deferred()
    const chunk = Buffer.alloc(64 * 1024, 1)
    const body: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]() {
        return {
          next: () => {
            // Backpressure: never asked for more while the response's buffer is over its mark.
            if (serverRes?.writableNeedDrain === true) pulledWhileFull++
            produced++
            return Promise.resolve({ done: false, value: chunk })
          },
          return: () => {
            returned.resolve()
            return Promise.resolve({ done: true, value: undefined })
          },
        }
      },
    }
    const srv = await start([{ method: 'GET', path: '/inf', handler: () => ({ status: 200, body }) }])
    // Runs after serve's own listener, before anything is written: see every write's result.
    srv.server.on('request', (_req: IncomingMessage, r: ServerResponse) => {
      serverRes = r
      const write = r.write.bind(r) as (chunk: unknown) => boolean
      r.write = ((c: unknown) => {
        const ok = write(c)
        if (!ok) blocked.resolve()
        return ok
      }) as typeof r.write
    })
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const r = httpRequest(`${srv.url}/inf`, resolve)
      r.once('error', reject)
      r.end()
    })
    expect(res.statusCode).toBe(200)
    res.pause()
    // Nobody reads, so the socket fills and a write reports a full buffer.
    await blocked.promise
    res.destroy()
    await returned.promise
    expect(pulledWhileFull).toBe(0)
    // Socket buffers on loopback hold a few MB at most; without backpressure this would be unbounded.
    expect(produced * chunk.byteLength).toBeLessThan(64 * 1024 * 1024)
  })

  it('destroys the response when the iterator throws mid-stream (truncation, never wrong bytes)', async () => {
    async function* broken() {
      yield await Promise.resolve(Buffer.from('partial'))
      throw new Error('disk gone')
    }
    const srv = await start([{ method: 'GET', path: '/broken', handler: () => ({ status: 200, body: broken() }) }])
    const res = await request(`${srv.url}/broken`)
    expect(res.statusCode).toBe(200)
    await expect(res.body.text()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' })
  })

  it('destroys a response whose client stops reading past writeTimeoutMs and counts it', async () => {
    const counted: string[] = []
    const returned = deferred()
    const chunk = Buffer.alloc(64 * 1024, 2)
    const body: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.resolve({ done: false, value: chunk }),
        return: () => {
          returned.resolve()
          return Promise.resolve({ done: true, value: undefined })
        },
      }),
    }
    const h = createHttpHandler({
      serviceId: 't',
      routes: [{ method: 'GET', path: '/inf', handler: () => ({ status: 200, body }) }],
      limits: { writeTimeoutMs: 100 },
      metrics: { inc: (name, labels) => counted.push(`${name}:${labels?.op}`), set: () => {}, observe: () => {} },
    })
    const srv = await serve(h, { port: 0 })
    servers.push(srv)
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const r = httpRequest(`${srv.url}/inf`, resolve)
      r.once('error', reject)
      r.end()
    })
    res.pause()
    res.on('error', () => {})
    await returned.promise
    expect(counted).toContain('io_timeouts_total:write')
    res.destroy()
  })
})

describe('serve: handler mistakes', () => {
  it('an invalid reply header becomes a clean 500 envelope', async () => {
    const srv = await start([{ method: 'GET', path: '/bad', handler: () => ({ status: 200, headers: { 'x-bad': 'a\nb' }, body: 'x' }) }])
    const res = await request(`${srv.url}/bad`)
    expect(res.statusCode).toBe(500)
    expect(res.headers['x-bad']).toBeUndefined()
    expectEnvelope(await res.body.json(), 'Internal', res.headers['x-corr-id'] as string)
  })
})

describe('serve: socket inactivity (idleTimeoutMs)', () => {
  const settleIo = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
  }
  /** One `GET /hello` on a fresh keep-alive socket: the socket, its close, and the reply as read. */
  const helloOnce = async (srv: RonServer): Promise<{ s: Socket; closed: Promise<string>; head: string }> => {
    const s = await rawSocket(srv)
    const closed = untilClosed(s)
    const reply = new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString())))
    s.write('GET /hello HTTP/1.1\r\nHost: x\r\n\r\n')
    return { s, closed, head: await reply }
  }

  it('destroys a socket whose request moved no byte for idleTimeoutMs, not before; close stops the sweep', async () => {
    const clock = new VirtualClock(0)
    const entered = deferred()
    const never = deferred()
    const srv = await start([{ method: 'GET', path: '/hang', public: true, handler: async () => (entered.resolve(), await never.promise, { status: 200, json: {} }) }], {}, { clock, idleTimeoutMs: 1000 })
    const s = await rawSocket(srv)
    const closed = untilClosed(s)
    s.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n')
    await entered.promise
    await clock.advance(1000)
    await settleIo()
    expect(s.destroyed).toBe(false)
    expect(srv.connections).toBe(1)
    // Swept every quarter of the timeout: closed within 1.25× of it.
    await clock.advance(300)
    expect(await closed).toBe('')
    never.resolve()
    await srv.close()
    expect(clock.pending).toBe(0)
  })

  it('closes an idle keep-alive socket after its response by the sweep, no timer per response; the Keep-Alive hint stays', async () => {
    const clock = new VirtualClock(0)
    const srv = await start([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, body: 'hi' }) }], {}, { clock, idleTimeoutMs: 1000 })
    const { s, closed, head } = await helloOnce(srv)
    expect(head).toMatch(/^HTTP\/1\.1 200/)
    expect(head.toLowerCase()).toContain('connection: keep-alive')
    // Clients still learn the idle timeout (in seconds) and drop the socket before the sweep.
    expect(head.toLowerCase()).toContain('keep-alive: timeout=1\r\n')
    expect(srv.server.keepAliveTimeout).toBe(0)
    // Kept for idleTimeoutMs after its last byte…
    await clock.advance(1000)
    await settleIo()
    expect(s.destroyed).toBe(false)
    expect(srv.connections).toBe(1)
    // …and closed within 1.25× of it (the sweep runs every quarter of the timeout).
    await clock.advance(300)
    await closed
    expect(srv.connections).toBe(0)
  })

  it('adopt() moves the idle timeout of the sweep', async () => {
    const clock = new VirtualClock(0)
    const srv = await start([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, body: 'hi' }) }], {}, { clock })
    srv.adopt({ readTimeoutMs: 5000, idleTimeoutMs: 400, maxConnections: 100, maxConnectionsPerIp: 10, intakeStopped: new AbortController().signal })
    const { s, closed, head } = await helloOnce(srv)
    expect(head).toMatch(/^HTTP\/1\.1 200/)
    // The hint follows too (whole seconds: under one, clients are told not to reuse the socket).
    expect(head.toLowerCase()).toContain('keep-alive: timeout=0\r\n')
    // The sweep armed at start (every 5 s for the default 60 s) hands over to one every 100 ms.
    await clock.advance(5000)
    await settleIo()
    for (let t = 0; t < 500 && !s.destroyed; t += 100) {
      await clock.advance(100)
      await settleIo()
    }
    await closed
    expect(srv.connections).toBe(0)
  })

  it('keeps a socket whose response keeps moving bytes, for many times idleTimeoutMs', async () => {
    const clock = new VirtualClock(0)
    let stop = false
    const chunk = new TextEncoder().encode('x')
    const body = async function* (): AsyncGenerator<Uint8Array> {
      while (!stop) {
        await clock.sleep(400)
        yield chunk
      }
    }
    const srv = await start([{ method: 'GET', path: '/drip', public: true, handler: () => ({ status: 200, body: body() }) }], {}, { clock, idleTimeoutMs: 1000 })
    const s = await rawSocket(srv)
    let received = 0
    s.on('data', (d: Buffer) => (received += d.length))
    s.write('GET /drip HTTP/1.1\r\nHost: x\r\n\r\n')
    await settleIo()
    for (let t = 0; t < 5000; t += 100) {
      await clock.advance(100)
      await settleIo()
    }
    expect(s.destroyed).toBe(false)
    expect(srv.connections).toBe(1)
    expect(received).toBeGreaterThan(0)
    stop = true
  })
})

describe('JSON and string replies on the wire', () => {
  it('sends a JSON reply with non-ASCII text as UTF-8, with its length in bytes', async () => {
    const value = { text: 'héllo wörld ✓ 𝄞', bytes: 'ÿ\u0000\u00ff' }
    const srv = await start([{ method: 'GET', path: '/json', handler: () => ({ status: 200, json: value }) }])
    const res = await request(`${srv.url}/json`)
    const raw = Buffer.from(await res.body.arrayBuffer())
    expect(res.headers['content-type']).toBe('application/json')
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(value))))
    expect(raw.equals(Buffer.from(JSON.stringify(value), 'utf8'))).toBe(true)
    expect(res.headers['x-corr-id']).toMatch(/^[a-z0-9]{6}-[a-z0-9]+$/)
  })

  it('answers a string body (not json) as UTF-8 bytes, not latin1', async () => {
    const srv = await start([{ method: 'GET', path: '/text', handler: () => ({ status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'ça ✓' }) }])
    const res = await request(`${srv.url}/text`)
    expect(Buffer.from(await res.body.arrayBuffer()).equals(Buffer.from('ça ✓', 'utf8'))).toBe(true)
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength('ça ✓')))
  })
})

describe('reply bodies on the wire', () => {
  // Byte bodies of every size, small (one packet with the head) to several writes, must arrive
  // byte for byte: every byte value, the view's bytes and not its buffer's, GET and HEAD.
  const sizes = [0, 1, 255, 256, 257, 1024, 4095, 4096, 4097, 8192, 65_536]
  const bodyOf = (n: number): Uint8Array => {
    const b = new Uint8Array(n)
    // Every byte value in every 256-byte window, in an order that is not the identity.
    for (let i = 0; i < n; i++) b[i] = (i * 167 + 13) & 0xff
    return b
  }

  it('sends every byte value of a byte body exactly, from an offset view, with its Content-Length, GET and HEAD', async () => {
    const srv = await start(
      sizes.map((n) => {
        // An offset view into a larger buffer whose other bytes differ: the view's bytes go out, not its buffer's.
        const framed = new Uint8Array(n + 8).fill(0xee)
        framed.set(bodyOf(n), 4)
        return { method: 'GET', path: `/bytes/${n}`, handler: () => ({ status: 200, headers: { 'content-type': 'application/octet-stream' }, body: framed.subarray(4, 4 + n) }) } satisfies Route
      }),
    )
    for (const n of sizes) {
      const res = await request(`${srv.url}/bytes/${n}`)
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-length']).toBe(String(n))
      const got = new Uint8Array(await res.body.arrayBuffer())
      expect(got.byteLength, `length of ${n}`).toBe(n)
      expect(Buffer.compare(got, bodyOf(n)), `body of ${n} bytes`).toBe(0)
      const head = await request(`${srv.url}/bytes/${n}`, { method: 'HEAD' })
      expect(head.headers['content-length']).toBe(String(n))
      expect((await head.body.arrayBuffer()).byteLength).toBe(0)
    }
  })

  it('keeps the connection framed: byte bodies of every size back to back on one keep-alive socket', async () => {
    const srv = await start(sizes.map((n) => ({ method: 'GET', path: `/bytes/${n}`, handler: () => ({ status: 200, body: bodyOf(n) }) }) satisfies Route))
    const s = await rawSocket(srv)
    let data = Buffer.alloc(0)
    s.on('data', (d: Buffer) => (data = Buffer.concat([data, d])))
    const expected = sizes.reduce((sum, n) => sum + n, 0)
    const done = new Promise<void>((resolve) => {
      const check = (): void => {
        // Split the stream into responses by their Content-Length; done once all arrived.
        let at = 0
        let bodies = 0
        for (let i = 0; i < sizes.length; i++) {
          const end = data.indexOf('\r\n\r\n', at)
          if (end === -1) return
          const len = Number(/content-length: (\d+)/i.exec(data.subarray(at, end).toString('latin1'))![1])
          if (data.length < end + 4 + len) return
          bodies += len
          at = end + 4 + len
        }
        if (bodies === expected) resolve()
      }
      s.on('data', check)
    })
    s.write(sizes.map((n) => `GET /bytes/${n} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''))
    await done
    let at = 0
    for (const n of sizes) {
      const end = data.indexOf('\r\n\r\n', at)
      expect(data.subarray(at, end).toString('latin1')).toMatch(/^HTTP\/1\.1 200/)
      expect(Buffer.compare(data.subarray(end + 4, end + 4 + n), bodyOf(n)), `body of ${n} bytes`).toBe(0)
      at = end + 4 + n
    }
    expect(at).toBe(data.length)
  })
})

describe('serve: sockets over the per-IP cap', () => {
  it('refuses every socket over the cap, also after an earlier refused one closed, and serves again once under it', async () => {
    const srv = await start([{ method: 'GET', path: '/hello', handler: () => ({ status: 200, body: 'hi' }) }], {}, { maxConnectionsPerIp: 1 })
    const a = await rawSocket(srv)
    for (let i = 0; i < 2; i++) {
      const over = await rawSocket(srv)
      const closed = untilClosed(over)
      over.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
      const data = await closed
      expect(data, `refused socket ${i}`).toMatch(/^HTTP\/1\.1 429/)
      expect(data).toContain('"reason":"per_ip"')
    }
    const aClosed = untilClosed(a)
    a.end()
    await aClosed
    // Back under the cap: a new socket is served, not answered 429.
    const b = await rawSocket(srv)
    const reply = new Promise<string>((resolve) => b.once('data', (d: Buffer) => resolve(d.toString())))
    b.write('GET /hello HTTP/1.1\r\nhost: x\r\n\r\n')
    expect(await reply).toMatch(/^HTTP\/1\.1 200/)
  })
})
