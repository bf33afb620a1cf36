/**
 * Compressed uploads (issue 8, problem 4) over real sockets: object bodies are limited by the
 * object limit (or the token's maxBytes caveat) on DECODED bytes, with the ratio guard kept
 * against bombs; the absolute decompression cap is for JSON bodies only; every OverLimit says
 * which limit it hit; transfer codings other than chunked are 501.
 */
import { connect } from 'node:net'
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { addressOf, serve, type RonServer } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import { createStorageService } from '../src/index.js'
import type { StorageService, StorageServiceOptions } from '../src/index.js'
import { bytes } from './helpers.js'

const issuer = createTestIssuer()
const token = issuer.mint({ scope: 'storage:write', aud: 'storage' })
const open: { svc: StorageService; srv: RonServer }[] = []
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.srv.close()
    await o.svc.close()
  }
})

async function start(options: StorageServiceOptions = {}): Promise<RonServer> {
  const svc = await createStorageService({ auth: { keys: issuer.keys }, repair: { auto: false }, drainReadWindowMs: 0, ...options })
  const srv = await serve(svc, { port: 0 })
  open.push({ svc, srv })
  return srv
}

async function put(srv: RonServer, body: Uint8Array, encoding: string, auth = token): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(`${srv.url}/o`, { method: 'PUT', body, headers: { authorization: `Bearer ${auth}`, 'content-encoding': encoding } })
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> }
}

const ENCODERS: Record<string, (b: Uint8Array) => Uint8Array> = {
  gzip: (b) => gzipSync(b, { level: 1 }),
  deflate: (b) => deflateSync(b, { level: 1 }),
  br: (b) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } }),
}

describe('compressed object uploads', () => {
  // A small absolute (JSON) cap, to show object bodies are not held to it.
  const options: StorageServiceOptions = { http: { maxDecompressedBytes: 256 * 1024 } }

  for (const [name, encode] of Object.entries(ENCODERS)) {
    it(`${name}: stores compressible and incompressible objects decoded, beyond the JSON decompression cap`, async () => {
      const srv = await start(options)
      const zeros = new Uint8Array(1024 * 1024) // ratio ~1000:1, a legitimate file
      const noise = bytes(1024 * 1024, 42) // ratio ~1:1
      const mixed = new Uint8Array(3 * 1024 * 1024) // ratio ~1.3:1, like the 72 MB report
      mixed.set(bytes(2 * 1024 * 1024 + 300 * 1024, 9))
      for (const data of [zeros, noise, mixed]) {
        const r = await put(srv, encode(data), name)
        expect(r.status).toBe(201)
        expect(r.json).toMatchObject({ address: addressOf(data), size: data.byteLength })
      }
    })
  }

  it('stops a gzip bomb at the ratio guard: 413 with source decompression_ratio and the ratio as limit', async () => {
    const srv = await start()
    const member = gzipSync(new Uint8Array(1_000_000))
    const bomb = Buffer.concat(Array.from({ length: 100 }, () => member)) // 100 MB of zeros, ~100 KB encoded
    const r = await put(srv, bomb, 'gzip')
    expect(r.status).toBe(413)
    expect(r.json).toMatchObject({ error: { code: 'OverLimit', details: { source: 'decompression_ratio', limit: 10 } } })
  })

  it('limits decoded bytes by maxObjectBytes (413 source maxObjectBytes) and by the token caveat (source caveat)', async () => {
    const srv = await start({ maxObjectBytes: 100_000 })
    const over = gzipSync(new Uint8Array(200_000)) // 200 B on the wire, 200 kB decoded
    const r = await put(srv, over, 'gzip')
    expect(r.status).toBe(413)
    expect(r.json).toMatchObject({ error: { code: 'OverLimit', details: { source: 'maxObjectBytes', limit: 100_000 } } })
    expect(String((r.json.error as { message: string }).message)).toContain('100000')

    const capped = issuer.mint({ scope: 'storage:write', aud: 'storage', ron: { maxBytes: 50_000 } })
    const c = await put(srv, gzipSync(new Uint8Array(60_000)), 'gzip', capped)
    expect(c.status).toBe(413)
    expect(c.json).toMatchObject({ error: { code: 'OverLimit', details: { source: 'caveat', limit: 50_000 } } })
    expect((await put(srv, gzipSync(new Uint8Array(40_000)), 'gzip', capped)).status).toBe(201)
  })

  it('answers 501 NotImplemented to Transfer-Encoding: gzip, chunked instead of storing it undecoded', async () => {
    const srv = await start()
    const s = connect(srv.port, '127.0.0.1')
    let data = ''
    s.on('data', (d: Buffer) => (data += d.toString()))
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()))
    await new Promise<void>((resolve) => s.once('connect', () => resolve()))
    const payload = gzipSync(Buffer.from('hello'))
    s.write(`PUT /o HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ntransfer-encoding: gzip, chunked\r\nconnection: close\r\n\r\n`)
    s.write(`${payload.byteLength.toString(16)}\r\n`)
    s.write(payload)
    s.write('\r\n0\r\n\r\n')
    await closed
    expect(data).toMatch(/^HTTP\/1\.1 501/)
    expect(data).toContain('"code":"NotImplemented"')
  })
})
