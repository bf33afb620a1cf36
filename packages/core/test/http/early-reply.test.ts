import { connect } from 'node:net'
import { Readable } from 'node:stream'
import { Pool } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../src/http/handler.js'
import { serve, type RonServer } from '../../src/http/serve.js'

let server: RonServer | undefined
let pool: Pool | undefined
afterEach(async () => {
  await pool?.close()
  await server?.close()
  server = pool = undefined
})

function upload(bytes: number): Readable {
  const piece = Buffer.alloc(64 * 1024, 7)
  let sent = 0
  return new Readable({
    read() {
      if (sent >= bytes) return void this.push(null)
      sent += piece.length
      this.push(piece)
    },
  })
}

/** Sends a request head and `bodyBytes` of a larger declared body, then reads whatever comes back. */
function rawUpload(port: number, bodyBytes: number): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1')
    let text = ''
    sock.on('data', (d) => (text += d.toString('latin1')))
    sock.on('error', (e) => resolve({ text, error: (e as NodeJS.ErrnoException).code ?? e.message }))
    sock.on('close', () => resolve({ text }))
    sock.write(`PUT /scoped HTTP/1.1\r\nhost: x\r\ncontent-length: ${bodyBytes * 4}\r\n\r\n`)
    sock.write(Buffer.alloc(bodyBytes, 1))
    // Stop sending without finishing once the reply starts arriving: the server must deliver its
    // reply while the client is still mid-upload, and linger instead of resetting.
    sock.once('data', () => sock.end())
  })
}

describe('early replies to uploads', () => {
  it('regression: a reply before the body was read lingers instead of closing on unread input (client gets no EPIPE/reset)', async () => {
    const handler = createHttpHandler({
      serviceId: 't',
      routes: [{ method: 'PUT', path: '/scoped', scope: 'x:write', bodyLimit: Infinity, handler: () => ({ status: 201 }) }],
    })
    server = await serve(handler, { port: 0 })
    const r = await rawUpload(server.port, 4 * 1024 * 1024)
    expect(r.text.startsWith('HTTP/1.1 401')).toBe(true)
    // With 'connection: close' the server shut the socket while the client was still writing:
    // the client got EPIPE, which undici reports as a socket error instead of the 401.
    expect(r.error).toBeUndefined()
  })


  it('a client still uploading reads the 401/413 reply, not a connection reset (20 tries each, 32 MiB uploads)', async () => {
    const handler = createHttpHandler({
      serviceId: 't',
      routes: [
        { method: 'PUT', path: '/scoped', scope: 'x:write', bodyLimit: Infinity, handler: () => ({ status: 201 }) },
        {
          method: 'PUT',
          path: '/capped',
          public: true,
          bodyLimit: 256 * 1024,
          handler: async (ctx) => ({ status: 201, body: await ctx.bytes() }),
        },
      ],
    })
    server = await serve(handler, { port: 0 })
    pool = new Pool(server.url, { connections: 4 })
    const statuses: number[] = []
    for (let i = 0; i < 20; i++) {
      for (const [path, expected] of [['/scoped', 'Unauthorized'], ['/capped', 'OverLimit']] as const) {
        // No content-length: the server cannot refuse by header and must reply mid-upload.
        const res = await pool.request({ method: 'PUT', path, body: upload(32 * 1024 * 1024) })
        const body = (await res.body.json()) as { error: { code: string } }
        expect(body.error.code).toBe(expected)
        statuses.push(res.statusCode)
      }
    }
    expect(new Set(statuses)).toEqual(new Set([401, 413]))
  })
})

describe('buffered bodies over real sockets', () => {
  it('a client that disconnects mid-JSON-body makes ctx.json() reject with Canceled; a whole body sent in two chunks is read', async () => {
    let entered!: () => void
    const inHandler = new Promise<void>((r) => (entered = r))
    let seen!: (v: unknown) => void
    const outcome = new Promise<unknown>((r) => (seen = r))
    const handler = createHttpHandler({
      serviceId: 't',
      routes: [
        {
          method: 'POST',
          path: '/j',
          public: true,
          handler: async (ctx) => {
            entered()
            try {
              const v = await ctx.json({ parse: (x: unknown) => x })
              seen(v)
              return { status: 200, json: v }
            } catch (e) {
              seen(e)
              throw e
            }
          },
        },
      ],
    })
    server = await serve(handler, { port: 0 })
    const sock = connect(server.port, '127.0.0.1')
    sock.on('error', () => {})
    sock.write('POST /j HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"half":')
    await inHandler
    sock.destroy()
    expect(await outcome).toMatchObject({ code: 'Canceled' })

    pool = new Pool(server.url)
    const r = await pool.request({ method: 'POST', path: '/j', headers: { 'content-type': 'application/json' }, body: Readable.from([Buffer.from('{"whole":'), Buffer.from('true}')]) })
    expect(r.statusCode).toBe(200)
    expect(await r.body.json()).toEqual({ whole: true })
  })
})
