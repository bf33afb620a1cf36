/**
 * A handler that returns its reply synchronously is answered within node's `'request'` event,
 * before the parser has even marked a bodiless request complete. These tests pin what that must
 * not change: pipelined requests on one keep-alive connection, early replies to uploads (linger,
 * no reset), and refusals of the pipeline that happen before any handler runs.
 */
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createHttpHandler, serve, type RonServer, type Route } from '../../src/http/index.js'

const servers: RonServer[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function start(routes: Route[]): Promise<RonServer> {
  const srv = await serve(createHttpHandler({ serviceId: 't', routes }), { port: 0 })
  servers.push(srv)
  return srv
}

/** Writes `head` on a fresh socket and resolves once `count` full responses (by content-length) arrived. */
function exchange(srv: RonServer, head: string, count: number, then?: (s: Socket) => void): Promise<{ text: string; open: boolean }> {
  return new Promise((resolve, reject) => {
    const s = connect(srv.port, '127.0.0.1', () => s.write(head))
    sockets.push(s)
    let text = ''
    const complete = (): boolean => {
      let n = 0
      let at = 0
      for (;;) {
        const end = text.indexOf('\r\n\r\n', at)
        if (end === -1) return false
        const len = /content-length: (\d+)/i.exec(text.slice(at, end))
        const next = end + 4 + Number(len?.[1] ?? 0)
        if (next > text.length) return false
        at = next
        if (++n === count) return true
      }
    }
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1')
      if (complete()) {
        then?.(s)
        resolve({ text, open: !s.destroyed && !s.readableEnded })
      }
    })
    s.once('error', reject)
    s.once('close', () => resolve({ text, open: false }))
  })
}

const hello: Route = { method: 'GET', path: '/hello', handler: (ctx) => ({ status: 200, json: { hello: ctx.corrId } }) }

describe('synchronous replies over real sockets', () => {
  it('answers three pipelined bodiless GETs in order on one keep-alive connection', async () => {
    const srv = await start([hello])
    const head = ['a', 'b', 'c'].map((id) => `GET /hello HTTP/1.1\r\nhost: x\r\nx-corr-id: ${id}\r\n\r\n`).join('')
    const r = await exchange(srv, head, 3)
    const bodies = [...r.text.matchAll(/\{"hello":"(\w)"\}/g)].map((m) => m[1])
    expect(bodies).toEqual(['a', 'b', 'c'])
    expect(r.text).not.toMatch(/connection: close/i)
    expect(r.open).toBe(true)
  })

  it('a GET with an explicit zero content-length is bodiless too: the next request on the connection is answered', async () => {
    const srv = await start([hello])
    const head = 'GET /hello HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nx-corr-id: a\r\n\r\nGET /hello HTTP/1.1\r\nhost: x\r\nx-corr-id: b\r\n\r\n'
    const r = await exchange(srv, head, 2)
    expect([...r.text.matchAll(/\{"hello":"(\w)"\}/g)].map((m) => m[1])).toEqual(['a', 'b'])
  })

  it('a synchronous reply to an upload it never reads still lingers: the rest of the body is discarded and the connection serves the next request', async () => {
    let puts = 0
    const srv = await start([
      hello,
      {
        method: 'PUT',
        path: '/ignore',
        public: true,
        handler: () => {
          puts++
          return { status: 202 }
        },
      },
    ])
    // The body arrives in two writes after the reply was sent; then a second request follows.
    const body = 'x'.repeat(64 * 1024)
    const r = await exchange(srv, `PUT /ignore HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length * 2}\r\n\r\n${body}`, 1, (s) => {
      s.write(body)
      s.write('GET /hello HTTP/1.1\r\nhost: x\r\nx-corr-id: next\r\n\r\n')
    })
    expect(r.text.startsWith('HTTP/1.1 202')).toBe(true)
    expect(puts).toBe(1)
    const s = sockets.at(-1)!
    const after = await new Promise<string>((resolve) => {
      let text = ''
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1')
        if (text.includes('{"hello":"next"}')) resolve(text)
      })
    })
    expect(after.startsWith('HTTP/1.1 200')).toBe(true)
  })

  it('a synchronous handler that throws, and one that returns an invalid status, answer 500 with the envelope', async () => {
    const srv = await start([
      {
        method: 'GET',
        path: '/throws',
        handler: () => {
          throw new Error('boom')
        },
      },
      { method: 'GET', path: '/bad', handler: () => ({ status: 42 }) },
    ])
    const r = await exchange(srv, 'GET /throws HTTP/1.1\r\nhost: x\r\n\r\nGET /bad HTTP/1.1\r\nhost: x\r\n\r\n', 2)
    expect(r.text.match(/HTTP\/1.1 500/g)).toHaveLength(2)
    expect(r.text.match(/"code":"Internal"/g)).toHaveLength(2)
  })
})

describe('request headers the pipeline reads itself', () => {
  it('echoes X-Corr-ID in any case, and generates one when the header is repeated (node joins repeats with ", ")', async () => {
    const srv = await start([hello])
    const r = await exchange(
      srv,
      'GET /hello HTTP/1.1\r\nhost: x\r\nX-Corr-ID: Mixed.1\r\n\r\nGET /hello HTTP/1.1\r\nhost: x\r\nx-corr-id: a\r\nx-corr-id: b\r\n\r\n',
      2,
    )
    const ids = [...r.text.matchAll(/x-corr-id: (\S+)/g)].map((m) => m[1])
    expect(ids[0]).toBe('Mixed.1')
    expect(ids[1]).toMatch(/^[0-9a-z]{6}-[0-9a-z]{1,5}$/)
  })

  it('a chunked upload answered synchronously before it was read still lingers and keeps the connection', async () => {
    const srv = await start([hello, { method: 'PUT', path: '/ignore', public: true, handler: () => ({ status: 202 }) }])
    const chunk = `${(32 * 1024).toString(16)}\r\n${'y'.repeat(32 * 1024)}\r\n`
    const r = await exchange(srv, `PUT /ignore HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n${chunk}`, 1, (s) => {
      s.write(`${chunk}0\r\n\r\nGET /hello HTTP/1.1\r\nhost: x\r\nx-corr-id: after\r\n\r\n`)
    })
    expect(r.text.startsWith('HTTP/1.1 202')).toBe(true)
    const s = sockets.at(-1)!
    const after = await new Promise<string>((resolve) => {
      let text = ''
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1')
        if (text.includes('{"hello":"after"}')) resolve(text)
      })
    })
    expect(after.startsWith('HTTP/1.1 200')).toBe(true)
  })

  it('CORS headers from the cors hook go out once, and a reply header of the same name (any case) wins', async () => {
    const h = createHttpHandler({
      serviceId: 't',
      routes: [
        hello,
        { method: 'GET', path: '/own', handler: () => ({ status: 200, headers: { Vary: 'Accept' }, body: 'x' }) },
      ],
      hooks: { cors: (method, origin) => ({ 'access-control-allow-origin': origin, vary: 'Origin', 'x-method': method }) },
    })
    const srv = await serve(h, { port: 0 })
    servers.push(srv)
    const r = await exchange(
      srv,
      'GET /hello HTTP/1.1\r\nhost: x\r\nOrigin: https://a.example\r\n\r\nGET /own HTTP/1.1\r\nhost: x\r\norigin: https://b.example\r\n\r\nGET /hello HTTP/1.1\r\nhost: x\r\n\r\n',
      3,
    )
    const [first, second, third] = r.text.split(/(?=HTTP\/1\.1 )/)
    expect(first).toContain('access-control-allow-origin: https://a.example\r\nvary: Origin\r\nx-method: GET\r\n')
    expect(second).toContain('access-control-allow-origin: https://b.example')
    expect(second!.match(/vary:/gi)).toHaveLength(1)
    expect(second).toContain('Vary: Accept')
    expect(third).not.toContain('access-control')
  })

  it('a frozen headers object reused across replies is written byte for byte like a mutable one, each reply with its own corr-id and length', async () => {
    const frozen = Object.freeze({ 'content-type': 'application/json', 'cache-control': 'no-cache', etag: '"v1"', 'set-cookie': Object.freeze(['a=1', 'b=2']) })
    const frozen304 = Object.freeze({ 'cache-control': 'no-cache', etag: '"v1"' })
    // A mutable object changed between replies: its current values go out, never a stale copy.
    const mutable: Record<string, string> = { 'content-type': 'application/json', etag: '"m1"' }
    let n = 0
    const h = createHttpHandler({
      serviceId: 't',
      routes: [
        { method: 'GET', path: '/frozen', handler: () => ({ status: 200, headers: frozen, body: `{"n":${++n}}` }) },
        { method: 'GET', path: '/copy', handler: () => ({ status: 200, headers: { ...frozen }, body: `{"n":${++n}}` }) },
        { method: 'GET', path: '/304', handler: () => ({ status: 304, headers: frozen304 }) },
        { method: 'GET', path: '/mutable', handler: () => ({ status: 200, headers: mutable, body: 'm' }) },
      ],
      hooks: { cors: (_method, origin) => ({ 'access-control-allow-origin': origin, etag: 'never' }) },
    })
    const srv = await serve(h, { port: 0 })
    servers.push(srv)
    const get = (path: string, id: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nhost: x\r\nx-corr-id: ${id}\r\n${extra}\r\n`
    const first = await exchange(srv, get('/frozen', 'a') + get('/frozen', 'b') + get('/copy', 'c') + get('/304', 'd'), 4)
    mutable.etag = '"m2"'
    const second = await exchange(srv, get('/mutable', 'e') + get('/frozen', 'f', 'origin: https://o.example\r\n'), 2)
    const heads = [...first.text.split(/(?=HTTP\/1\.1 )/), ...second.text.split(/(?=HTTP\/1\.1 )/)].map((r) => r.slice(0, r.indexOf('\r\n\r\n') + 4).replace(/\r\nDate: [^\r]*/, ''))
    const own = 'content-type: application/json\r\ncache-control: no-cache\r\netag: "v1"\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n'
    const tail = 'Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n'
    expect(heads).toEqual([
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: a\r\ncontent-length: 7\r\n${tail}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: b\r\ncontent-length: 7\r\n${tail}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: c\r\ncontent-length: 7\r\n${tail}`,
      `HTTP/1.1 304 Not Modified\r\ncache-control: no-cache\r\netag: "v1"\r\nx-corr-id: d\r\n${tail}`,
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\netag: "m2"\r\nx-corr-id: e\r\ncontent-length: 1\r\n${tail}`,
      // CORS headers first; the reply's own ETag wins over the hook's.
      `HTTP/1.1 200 OK\r\naccess-control-allow-origin: https://o.example\r\n${own}x-corr-id: f\r\ncontent-length: 7\r\n${tail}`,
    ])
  })

  it('string bodies go out as their UTF-8 bytes with that length, ASCII ones (written as latin1) and others alike', async () => {
    // 'é' (U+00E9) is one byte in latin1 but two in UTF-8: a body with it must not take the latin1 write.
    const bodies = ['{"plain":"ascii"}', '{"latin":"é"}', '{"emoji":"😀"}', '{"lone":"\ud800"}', 'ÿ']
    const srv = await start(bodies.map((body, i) => ({ method: 'GET', path: `/b${i}`, handler: () => ({ status: 200, headers: { 'content-type': 'text/plain' }, body }) })))
    const json = await start([{ method: 'GET', path: '/j', handler: (ctx) => ({ status: 200, json: { s: ctx.query.get('s') } }) }])
    for (const [i, body] of bodies.entries()) {
      const r = await fetch(`${srv.url}/b${i}`)
      const bytes = Buffer.from(await r.arrayBuffer())
      expect(bytes.equals(Buffer.from(body, 'utf8'))).toBe(true)
      expect(r.headers.get('content-length')).toBe(String(bytes.length))
    }
    for (const s of ['ascii', 'é', '😀', 'ÿ~', '\u0001']) {
      const r = await fetch(`${json.url}/j?s=${encodeURIComponent(s)}`)
      const bytes = Buffer.from(await r.arrayBuffer())
      expect(bytes.equals(Buffer.from(JSON.stringify({ s }), 'utf8'))).toBe(true)
      expect(r.headers.get('content-length')).toBe(String(bytes.length))
    }
  })
})

describe('string reply bodies', () => {
  it('a frozen reply handed out again and again goes out byte for byte like a fresh copy, each time with its own corr-id', async () => {
    // The node writer works out a frozen reply's header list and length once (the registry's
    // cached HEAD): none of that may leak into another reply, a HEAD, or a cross-origin request.
    const body = '{"v":"é1"}' // not ASCII: 11 bytes in 10 characters
    const a = Object.freeze({ status: 200, headers: Object.freeze({ 'content-type': 'application/json', etag: '"v1"', 'set-cookie': Object.freeze(['a=1', 'b=2']) }), body })
    const b = Object.freeze({ status: 201, headers: Object.freeze({ 'content-type': 'text/plain' }), body: 'bee' })
    // Frozen, but with headers that are not: their current values go out.
    const looseHeaders: Record<string, string> = { 'content-type': 'text/plain' }
    const loose = Object.freeze({ status: 200, headers: looseHeaders, body: 'x' })
    const h = createHttpHandler({
      serviceId: 't',
      routes: [
        { method: 'GET', path: '/a', handler: () => a },
        { method: 'GET', path: '/b', handler: () => b },
        { method: 'GET', path: '/copy', handler: () => ({ ...a }) },
        { method: 'GET', path: '/loose', handler: () => loose },
      ],
      hooks: { cors: (_method, origin) => ({ 'access-control-allow-origin': origin }) },
    })
    const srv = await serve(h, { port: 0 })
    servers.push(srv)
    const get = (path: string, id: string, extra = '', method = 'GET'): string => `${method} ${path} HTTP/1.1\r\nhost: x\r\nx-corr-id: ${id}\r\n${extra}\r\n`
    const first = await exchange(srv, get('/a', 'a1') + get('/b', 'b2') + get('/a', 'a3') + get('/copy', 'c4') + get('/a', 'a5', 'origin: https://o.example\r\n') + get('/loose', 'l6'), 6)
    looseHeaders['content-type'] = 'text/html'
    const second = await exchange(srv, get('/loose', 'l7') + get('/a', 'a8') + get('/a', 'h9', 'connection: close\r\n', 'HEAD'), 3)
    const replies = [...first.text.split(/(?=HTTP\/1\.1 )/), ...second.text.split(/(?=HTTP\/1\.1 )/)].map((r) => r.replace(/\r\nDate: [^\r]*/, ''))
    const own = 'content-type: application/json\r\netag: "v1"\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n'
    const tail = 'Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n'
    const wire = Buffer.from(body, 'utf8').toString('latin1')
    expect(replies).toEqual([
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: a1\r\ncontent-length: 11\r\n${tail}${wire}`,
      `HTTP/1.1 201 Created\r\ncontent-type: text/plain\r\nx-corr-id: b2\r\ncontent-length: 3\r\n${tail}bee`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: a3\r\ncontent-length: 11\r\n${tail}${wire}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: c4\r\ncontent-length: 11\r\n${tail}${wire}`,
      `HTTP/1.1 200 OK\r\naccess-control-allow-origin: https://o.example\r\n${own}x-corr-id: a5\r\ncontent-length: 11\r\n${tail}${wire}`,
      `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-corr-id: l6\r\ncontent-length: 1\r\n${tail}x`,
      `HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nx-corr-id: l7\r\ncontent-length: 1\r\n${tail}x`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: a8\r\ncontent-length: 11\r\n${tail}${wire}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: h9\r\ncontent-length: 11\r\nConnection: close\r\n\r\n`,
    ])
  })

  it('content-length and bytes are right for a cached string reply and for others of the same length in between', async () => {
    // One reply object handed out again and again (as the registry's HEAD is), and fresh strings
    // with the same number of characters but other UTF-8 lengths, interleaved.
    const cached = { status: 200, headers: { 'content-type': 'text/plain' }, body: 'abcd' }
    const bodies = ['abcd', 'ééé€', 'a\u00e9cd', 'x'.repeat(20_000) + 'é', 'x'.repeat(20_000) + 'é']
    let i = 0
    const srv = await start([
      { method: 'GET', path: '/cached', public: true, handler: () => cached },
      { method: 'GET', path: '/other', public: true, handler: () => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: `${bodies[i++ % bodies.length]}` }) },
    ])
    for (let round = 0; round < 2 * bodies.length; round++) {
      for (const path of ['/cached', '/other', '/cached']) {
        const r = await fetch(`http://127.0.0.1:${srv.port}${path}`)
        const bytes = Buffer.from(await r.arrayBuffer())
        expect(Number(r.headers.get('content-length'))).toBe(bytes.length)
        const expected = path === '/cached' ? 'abcd' : bodies[(i - 1) % bodies.length]!
        expect(bytes.toString('utf8')).toBe(expected)
        expect(bytes.length).toBe(Buffer.byteLength(expected))
      }
    }
  })
})

describe('byte reply bodies', () => {
  it('a frozen reply with a byte body goes out byte for byte like a fresh copy each time, with its own corr-id and the current length', async () => {
    // The node writer works out a frozen reply's header list once (the registry's full tiles): the
    // bytes are the array's as they are at each write, the length its length then.
    const bytes = new Uint8Array(300).map((_, i) => i & 0xff)
    const headers = Object.freeze({ 'content-type': 'application/octet-stream', 'cache-control': 'public, max-age=31536000, immutable' })
    const tile = Object.freeze({ status: 200, headers, body: bytes })
    // Over a resizable buffer: its length follows the buffer's.
    // (ES2024's resizable ArrayBuffer: not in this project's lib typings.)
    const Resizable = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer & { resize(length: number): void }
    const resizable = new Resizable(4, { maxByteLength: 8 })
    const growing = Object.freeze({ status: 200, headers, body: new Uint8Array(resizable).fill(0x61) })
    const other = Object.freeze({ status: 200, headers: Object.freeze({ 'content-type': 'text/plain' }), body: Buffer.from('other') })
    const h = createHttpHandler({
      serviceId: 't',
      routes: [
        { method: 'GET', path: '/tile', handler: () => tile },
        { method: 'GET', path: '/copy', handler: () => ({ ...tile, headers: { ...headers } }) },
        { method: 'GET', path: '/growing', handler: () => growing },
        { method: 'GET', path: '/other', handler: () => other },
      ],
      hooks: { cors: (_method, origin) => ({ 'access-control-allow-origin': origin }) },
    })
    const srv = await serve(h, { port: 0 })
    servers.push(srv)
    const get = (path: string, id: string, extra = '', method = 'GET'): string => `${method} ${path} HTTP/1.1\r\nhost: x\r\nx-corr-id: ${id}\r\n${extra}\r\n`
    const first = await exchange(srv, get('/tile', 't1') + get('/tile', 't2') + get('/other', 'o3') + get('/tile', 't4', 'origin: https://o.example\r\n') + get('/copy', 'c5') + get('/growing', 'g6'), 6)
    bytes[0] = 0xff
    resizable.resize(6)
    growing.body.fill(0x62)
    const second = await exchange(srv, get('/tile', 't7') + get('/growing', 'g8') + get('/tile', 'h9', 'connection: close\r\n', 'HEAD'), 3)
    const replies = [...first.text.split(/(?=HTTP\/1\.1 )/), ...second.text.split(/(?=HTTP\/1\.1 )/)].map((r) => r.replace(/\r\nDate: [^\r]*/, ''))
    const own = 'content-type: application/octet-stream\r\ncache-control: public, max-age=31536000, immutable\r\n'
    const tail = 'Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n'
    const before = Buffer.from(new Uint8Array(300).map((_, i) => i & 0xff)).toString('latin1')
    const after = `\u00ff${before.slice(1)}`
    expect(replies).toEqual([
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: t1\r\ncontent-length: 300\r\n${tail}${before}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: t2\r\ncontent-length: 300\r\n${tail}${before}`,
      `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-corr-id: o3\r\ncontent-length: 5\r\n${tail}other`,
      `HTTP/1.1 200 OK\r\naccess-control-allow-origin: https://o.example\r\n${own}x-corr-id: t4\r\ncontent-length: 300\r\n${tail}${before}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: c5\r\ncontent-length: 300\r\n${tail}${before}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: g6\r\ncontent-length: 4\r\n${tail}aaaa`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: t7\r\ncontent-length: 300\r\n${tail}${after}`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: g8\r\ncontent-length: 6\r\n${tail}bbbbbb`,
      `HTTP/1.1 200 OK\r\n${own}x-corr-id: h9\r\ncontent-length: 300\r\nConnection: close\r\n\r\n`,
    ])
  })
})
