 
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { IntegrityFailedError, isRonError } from '@ron/core'
import type { Transport, TransportResponse } from '@ron/core'
import { createStorageClient } from '../src/index.js'
import { addressOfBytes, bytes, cluster, readAll, tempDir, type Cluster } from './helpers.js'

const text = (b: Uint8Array): string => new TextDecoder().decode(b)

describe('storage routes over MemoryTransport', () => {
  let c: Cluster
  beforeEach(async () => {
    c = await cluster(['storage'], () => ({ chunkSize: 1024, maxObjectBytes: 64 * 1024 }))
  })
  afterEach(async () => {
    await c.close()
  })

  it('PUT answers 201 for a new object and 200 for an existing one, GET returns the bytes with caching headers', async () => {
    const data = bytes(5000)
    const first = await c.request('storage', 'PUT', '/o', { authorization: `Bearer ${c.tokens.write}` }, data)
    expect(first.status).toBe(201)
    const body = await first.json<{ address: string; size: number }>()
    expect(body).toMatchObject({ address: addressOfBytes(data), size: 5000 })
    const again = await c.request('storage', 'POST', '/o', { authorization: `Bearer ${c.tokens.write}` }, data)
    expect(again.status).toBe(200)
    await again.dump()

    const get = await c.request('storage', 'GET', `/o/${body.address}`)
    expect(get.status).toBe(200)
    expect(get.headers.etag).toBe(`"${body.address}"`)
    expect(get.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(get.headers['accept-ranges']).toBe('bytes')
    expect(get.headers.vary).toBe('Accept-Encoding')
    expect(get.headers['content-length']).toBe('5000')
    expect(await get.bytes()).toEqual(data)
  })

  it('PUT of an in-process body that reuses its buffer stores and addresses the bytes as they were yielded', async () => {
    // Only a stream's (a socket's) pieces are handed to the store without a copy; a generator
    // that overwrites its buffer once the piece was taken must not change what is stored.
    const parts = [bytes(20_000, 1), bytes(30_000, 2), bytes(9_000, 3)]
    const reused = new Uint8Array(30_000)
    async function* body(): AsyncGenerator<Uint8Array> {
      for (const p of parts) {
        reused.set(p)
        yield reused.subarray(0, p.length)
        reused.fill(0xee)
      }
    }
    const whole = new Uint8Array(Buffer.concat(parts))
    // On disk: the filesystem backend is the one that can write pieces without copying them.
    const { dir, cleanup } = await tempDir()
    const fs = await cluster(['storage'], () => ({ dataDir: dir, chunkSize: 1024 }))
    try {
      const res = await fs.transport.request('storage', { method: 'PUT', path: '/o', headers: { authorization: `Bearer ${fs.tokens.write}` }, body: body() })
      expect(res.status).toBe(201)
      const { address } = await res.json<{ address: string }>()
      expect(address).toBe(addressOfBytes(whole))
      expect(await fs.node().client.getBytes(address as never)).toEqual(whole)
    } finally {
      await fs.close()
      await cleanup()
    }
  })

  it('HEAD gives the length and no body', async () => {
    const { address } = await c.node().client.put(bytes(3000))
    const res = await c.request('storage', 'HEAD', `/o/${address}`)
    expect(res.status).toBe(200)
    expect(res.headers['content-length']).toBe('3000')
    expect((await res.bytes()).byteLength).toBe(0)
    expect(await c.node().anon.head(address)).toEqual({ size: 3000 })
  })

  it('answers 304 to a matching If-None-Match (exact, weak, in a list, and *) and 200 otherwise', async () => {
    const { address } = await c.node().client.put('conditional')
    for (const inm of [`"${address}"`, `W/"${address}"`, `"b3:${'0'.repeat(64)}", "${address}"`, '*']) {
      const res = await c.request('storage', 'GET', `/o/${address}`, { 'if-none-match': inm })
      expect(res.status, inm).toBe(304)
      expect(res.headers.etag).toBe(`"${address}"`)
      expect((await res.bytes()).byteLength).toBe(0)
    }
    const miss = await c.request('storage', 'GET', `/o/${address}`, { 'if-none-match': `"b3:${'1'.repeat(64)}"` })
    expect(miss.status).toBe(200)
    expect(text(await miss.bytes())).toBe('conditional')
  })

  it('serves every single-range form with 206 and Content-Range', async () => {
    const data = bytes(4000, 7)
    const { address } = await c.node().client.put(data)
    const cases: [string, number, number][] = [
      ['bytes=0-0', 0, 0],
      ['bytes=3999-3999', 3999, 3999],
      ['bytes=-1', 3999, 3999],
      ['bytes=1000-', 1000, 3999],
      ['bytes=1020-1030', 1020, 1030],
      ['bytes=3990-999999', 3990, 3999],
      ['bytes=-5000', 0, 3999],
    ]
    for (const [range, start, end] of cases) {
      const res = await c.request('storage', 'GET', `/o/${address}`, { range })
      expect(res.status, range).toBe(206)
      expect(res.headers['content-range'], range).toBe(`bytes ${start}-${end}/4000`)
      expect(res.headers['content-length'], range).toBe(String(end - start + 1))
      expect(await res.bytes(), range).toEqual(data.subarray(start, end + 1))
    }
  })

  it('answers 416 with Content-Range bytes */size for unsatisfiable ranges, also on an empty object', async () => {
    const { address } = await c.node().client.put(bytes(100))
    for (const range of ['bytes=100-', 'bytes=500-600', 'bytes=-0']) {
      const res = await c.request('storage', 'GET', `/o/${address}`, { range })
      expect(res.status, range).toBe(416)
      expect(res.headers['content-range']).toBe('bytes */100')
      expect((await res.json<{ error: { code: string } }>()).error.code).toBe('RangeNotSatisfiable')
    }
    const empty = await c.node().client.put(new Uint8Array(0))
    expect(empty.size).toBe(0)
    const res = await c.request('storage', 'GET', `/o/${empty.address}`, { range: 'bytes=0-0' })
    expect(res.status).toBe(416)
    expect(res.headers['content-range']).toBe('bytes */0')
    await res.dump()
    const whole = await c.request('storage', 'GET', `/o/${empty.address}`)
    expect(whole.status).toBe(200)
    expect(whole.headers['content-length']).toBe('0')
    expect((await whole.bytes()).byteLength).toBe(0)
  })

  it('ignores a syntactically invalid Range and serves the whole object', async () => {
    const { address } = await c.node().client.put(bytes(50))
    const res = await c.request('storage', 'GET', `/o/${address}`, { range: 'pages=1-2' })
    expect(res.status).toBe(200)
    expect((await res.bytes()).byteLength).toBe(50)
  })

  it('serves several ranges as multipart/byteranges with an exact content-length', async () => {
    const data = bytes(3000, 3)
    const { address } = await c.node().client.put(data)
    const res = await c.request('storage', 'GET', `/o/${address}`, { range: 'bytes=0-9,2000-2009' })
    expect(res.status).toBe(206)
    const ct = res.headers['content-type']!
    expect(ct).toMatch(/^multipart\/byteranges; boundary=/)
    const boundary = ct.split('boundary=')[1]!
    const body = await res.bytes()
    expect(String(body.byteLength)).toBe(res.headers['content-length'])
    const s = Buffer.from(body).toString('latin1')
    const parts = s.split(`--${boundary}`).slice(1, -1)
    expect(parts).toHaveLength(2)
    expect(parts[0]).toContain('content-range: bytes 0-9/3000')
    expect(parts[1]).toContain('content-range: bytes 2000-2009/3000')
    const payload = (p: string): string => p.slice(p.indexOf('\r\n\r\n') + 4, p.length - 2)
    expect(payload(parts[0]!)).toBe(Buffer.from(data.subarray(0, 10)).toString('latin1'))
    expect(payload(parts[1]!)).toBe(Buffer.from(data.subarray(2000, 2010)).toString('latin1'))
    expect(s.endsWith(`--${boundary}--\r\n`)).toBe(true)
  })

  it('rejects malformed addresses with 400 Malformed and unknown ones with 404', async () => {
    for (const bad of ['xyz', `b3:${'A'.repeat(64)}`, `b3:${'0'.repeat(63)}`, `sha256:${'0'.repeat(64)}`]) {
      const res = await c.request('storage', 'GET', `/o/${bad}`)
      expect(res.status, bad).toBe(400)
      const env = await res.json<{ error: { code: string; corr_id: string; retryable: boolean } }>()
      expect(env.error.code).toBe('Malformed')
      expect(env.error.retryable).toBe(false)
      expect(env.error.corr_id).toBe(res.headers['x-corr-id'])
    }
    const res = await c.request('storage', 'GET', `/o/b3:${'0'.repeat(64)}`)
    expect(res.status).toBe(404)
    expect((await res.json<{ error: { code: string } }>()).error.code).toBe('NotFound')
  })

  it('refuses a body that does not match X-Expect-Address with 422 and keeps nothing', async () => {
    const data = bytes(2000)
    const wrong = addressOfBytes(bytes(10))
    const res = await c.request('storage', 'PUT', '/o', { authorization: `Bearer ${c.tokens.write}`, 'x-expect-address': wrong }, data)
    expect(res.status).toBe(422)
    expect((await res.json<{ error: { code: string } }>()).error.code).toBe('IntegrityFailed')
    expect(await c.node().anon.head(addressOfBytes(data))).toBeUndefined()
    const ok = await c.node().client.put(data, { expect: addressOfBytes(data) })
    expect(ok.created).toBe(true)
    const bad = await c.request('storage', 'PUT', '/o', { authorization: `Bearer ${c.tokens.write}`, 'x-expect-address': 'nope' }, data)
    expect(bad.status).toBe(400)
    await bad.dump()
  })

  it('requires storage:write to put: 401 without a token, 403 with a read-only token', async () => {
    const none = await c.request('storage', 'PUT', '/o', {}, 'x')
    expect(none.status).toBe(401)
    await none.dump()
    const ro = await c.request('storage', 'PUT', '/o', { authorization: `Bearer ${c.tokens.read}` }, 'x')
    expect(ro.status).toBe(403)
    await ro.dump()
  })

  it('answers 413 over maxObjectBytes, by Content-Length and while streaming, and over a maxBytes caveat', async () => {
    const big = bytes(64 * 1024 + 1)
    const declared = await c.request('storage', 'PUT', '/o', { authorization: `Bearer ${c.tokens.write}`, 'content-length': String(big.byteLength) }, big)
    expect(declared.status).toBe(413)
    expect((await declared.json<{ error: { code: string } }>()).error.code).toBe('OverLimit')
    async function* stream(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 70; i++) yield bytes(1024, i + 1)
    }
    await expect(c.node().client.put(stream())).rejects.toMatchObject({ code: 'OverLimit' })
    const capped = c.issuer.mint({ scope: 'storage:write', aud: 'storage', ron: { maxBytes: 100 } })
    const client = createStorageClient(c.transport, { target: 'storage', token: capped })
    await expect(client.put(bytes(101))).rejects.toMatchObject({ code: 'OverLimit', details: { source: 'caveat', limit: 100 } })
    await expect(client.put(bytes(100))).resolves.toMatchObject({ size: 100 })
    let n = 0
    for await (const _ of c.node().svc.store.list()) n++
    expect(n).toBe(1)
  })

  it('lets concurrent puts of the same object all succeed with exactly one 201', async () => {
    const data = bytes(20_000, 9)
    const results = await Promise.all(Array.from({ length: 6 }, () => c.node().client.put(data)))
    expect(new Set(results.map((r) => r.address)).size).toBe(1)
    expect(results.filter((r) => r.created)).toHaveLength(1)
    expect(await c.node().anon.getBytes(results[0]!.address)).toEqual(data)
  })

  it('requires storage:admin to delete; deletes once, then 404', async () => {
    const { address } = await c.node().client.put('to delete')
    await expect(c.node().client.delete(address)).rejects.toMatchObject({ code: 'Forbidden' })
    expect(await c.node().admin.delete(address)).toBe(true)
    expect(await c.node().admin.delete(address)).toBe(false)
    expect(await c.node().anon.head(address)).toBeUndefined()
  })

  it('refuses to delete a pinned object with 409 until it is unpinned; pinning a missing object is 404', async () => {
    const { address } = await c.node().client.put('pinned')
    await c.node().client.pin(address)
    await c.node().client.pin(address)
    await expect(c.node().admin.delete(address)).rejects.toMatchObject({ code: 'Conflict', details: { reason: 'pinned' } })
    expect((await c.node().anon.status(address)).pinned).toBe(true)
    await c.node().client.unpin(address)
    expect(await c.node().admin.delete(address)).toBe(true)
    await expect(c.node().client.pin(address)).rejects.toMatchObject({ code: 'NotFound' })
  })

  it('reports status: size, chunk health, placement and replicas', async () => {
    const { address } = await c.node().client.put(bytes(5000))
    const st = await c.node().anon.status(address)
    expect(st).toMatchObject({ address, size: 5000, pinned: false, local: { present: true, ok: true, badChunks: [] }, placement: ['storage'] })
    expect(st.replicas).toEqual([{ node: 'storage', present: true }])
    await expect(c.node().anon.status(`b3:${'2'.repeat(64)}`)).rejects.toMatchObject({ code: 'NotFound' })
  })

  it('needs storage:admin for the repair plan', async () => {
    await expect(c.node().client.repairPlan()).rejects.toMatchObject({ code: 'Forbidden' })
    const plan = await c.node().admin.repairPlan({ dryRun: true })
    expect(plan).toMatchObject({ node: 'storage', dryRun: true, items: [] })
  })

  it('serves the client range API and verifies whole-object reads', async () => {
    const data = bytes(9000, 4)
    const { address } = await c.node().client.put(data)
    const part = await c.node().anon.get(address, { range: { start: 10, end: 19 } })
    expect(part.status).toBe(206)
    expect(part.totalSize).toBe(9000)
    expect(await readAll(part.body)).toEqual(data.subarray(10, 20))
    const suffix = await c.node().anon.get(address, { range: { suffix: 3 } })
    expect(await readAll(suffix.body)).toEqual(data.subarray(8997))
  })
})

describe('storage with publicReads: false', () => {
  it('requires storage:read for GET', async () => {
    const c = await cluster(['storage'], () => ({ publicReads: false }))
    try {
      const { address } = await c.node().client.put('secret')
      const res = await c.request('storage', 'GET', `/o/${address}`)
      expect(res.status).toBe(401)
      await res.dump()
      expect(text(await c.node().client.getBytes(address))).toBe('secret')
    } finally {
      await c.close()
    }
  })
})

describe('storage client', () => {
  it('throws IntegrityFailedError at the end of a whole-object read whose bytes do not match', async () => {
    const good = bytes(100)
    const address = addressOfBytes(good)
    const lying: Transport = {
      request(): Promise<TransportResponse> {
        const body = (async function* () {
          yield bytes(100, 2)
        })()
        return Promise.resolve({
          status: 200,
          headers: { 'content-length': '100' },
          body,
          bytes: () => readAll(body),
          text: async () => '',
          json: async <T,>() => ({}) as T,
          dump: async () => {},
        })
      },
      close: async () => {},
    }
    const client = createStorageClient(lying)
    const err = await client.getBytes(address).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(IntegrityFailedError)
    expect(isRonError(err, 'IntegrityFailed')).toBe(true)
  })
})
