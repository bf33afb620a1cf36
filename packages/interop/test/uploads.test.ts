import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, collectBytes } from '@ron/core'
import { checkPatternStream, patternStream } from '@ron/core/testing'
import { MemoryAuditSink, rechunk } from '../src/index.js'
import { API_KEY, readJson, system, type System } from './helpers.js'

let sys: System | undefined
afterEach(async () => {
  await sys?.close()
  sys = undefined
})

const KiB = 1024
const MiB = 1024 * KiB

describe('POST /put', () => {
  it('trades the API key for a ≤ 60 s storage:write capability with a maxBytes caveat and stores the body', async () => {
    sys = await system({ apiKeys: [{ client: 'alice', keyHash: (await import('../src/index.js')).hashApiKey(API_KEY), maxBytes: 4096 }] })
    const body = new TextEncoder().encode('hello from the outside')
    const res = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, body)
    expect(res.status).toBe(201)
    const out = await readJson<{ address: string; size: number }>(res)
    expect(out).toEqual({ address: addressOf(body), size: body.byteLength })
    // Attenuated from interop's own storage:write token (never issued): one audience, ≤ 60 s, the client's limit.
    expect(sys.issued).toEqual([{ parentSub: 'node:test', aud: ['storage'], scope: ['storage:write'], ttlSec: 60, caveats: { maxBytes: 4096 } }])
    await sys.clock.flush()
    const [event] = (sys.interop.auditSink as MemoryAuditSink).events()
    expect(event).toMatchObject({ kind: 'put', client: 'alice', decision: 'accept', payloadB3: addressOf(body), capabilityId: 'jti-1-…' })
    // Reads come back from this node's storage, verified; index is asked only when it lacks them.
    const got = await sys.request('GET', `/o/${out.address}`, { 'x-corr-id': 'read-corr-1' })
    expect(got.status).toBe(200)
    expect(sys.slow.readCorrIds).toEqual(['read-corr-1']) // the correlation id travels downstream
    const head = await sys.request('HEAD', `/o/${out.address}`)
    expect(head.status).toBe(200)
    expect(head.headers['content-length']).toBe(String(body.byteLength))
    expect(head.headers.etag).toBe(`"${out.address}"`)
    expect((await collectBytes(head.body)).byteLength).toBe(0)
    expect(new TextDecoder().decode(await collectBytes(got.body))).toBe('hello from the outside')
    expect(sys.resolves).toEqual([])
  })

  it('streams a 3 MiB upload to storage in 64 KiB chunks, never holding it whole', async () => {
    sys = await system()
    const res = await sys.request('POST', '/put', { 'x-api-key': API_KEY, 'content-length': String(3 * MiB) }, patternStream(3 * MiB, 10_000))
    expect(res.status).toBe(201)
    const { address, size } = await readJson<{ address: string; size: number }>(res)
    expect(size).toBe(3 * MiB)
    // Storage received 64 KiB chunks (the client sent 10 000-byte ones).
    const chunks = sys.slow.putChunks
    expect(chunks.length).toBe(Math.ceil((3 * MiB) / (64 * KiB)))
    expect(chunks.every((n) => n === 64 * KiB)).toBe(true)
    const got = await sys.request('GET', `/o/${address}`)
    expect(await checkPatternStream(got.body)).toMatchObject({ bytes: 3 * MiB, intact: true })
  })

  it('refuses a missing or unknown API key with 401, and a declared size over the limit with 413', async () => {
    sys = await system({ uploads: { maxBytes: 1000 } })
    const missing = await sys.request('POST', '/put', {}, 'x')
    expect(missing.status).toBe(401)
    expect(await readJson(missing)).toMatchObject({ error: { details: { reason: 'missing' } } })
    const unknown = await sys.request('POST', '/put', { 'x-api-key': 'nope' }, 'x')
    expect(unknown.status).toBe(401)
    const big = await sys.request('POST', '/put', { 'x-api-key': API_KEY, 'content-length': '2000' }, new Uint8Array(2000))
    expect(big.status).toBe(413)
    expect(sys.issued).toEqual([])
  })

  it('honours X-Expect-Address: a mismatch is 422 IntegrityFailed and nothing is kept under either address; a match is stored', async () => {
    sys = await system()
    const body = new TextEncoder().encode('the bytes the client meant')
    const other = addressOf(new TextEncoder().encode('some other bytes'))
    const res = await sys.request('POST', '/put', { 'x-api-key': API_KEY, 'x-expect-address': other }, body)
    expect(res.status).toBe(422)
    expect(await readJson(res)).toMatchObject({ error: { code: 'IntegrityFailed' } })
    expect(await sys.storage.store.stat(addressOf(body))).toBeUndefined()
    expect(await sys.storage.store.stat(other)).toBeUndefined()
    expect((await sys.request('GET', `/o/${addressOf(body)}`)).status).toBe(404)
    await sys.clock.flush()
    expect((sys.interop.auditSink as MemoryAuditSink).events().at(-1)).toMatchObject({ kind: 'put', decision: 'deny', reason: 'IntegrityFailed' })

    const ok = await sys.request('POST', '/put', { 'x-api-key': API_KEY, 'x-expect-address': addressOf(body) }, body)
    expect(ok.status).toBe(201)
    expect(await readJson(ok)).toEqual({ address: addressOf(body), size: body.byteLength })
  })

  it('refuses a malformed X-Expect-Address with 400 naming the header, before asking for a capability', async () => {
    sys = await system()
    const res = await sys.request('POST', '/put', { 'x-api-key': API_KEY, 'x-expect-address': 'b3:not-an-address' }, 'x')
    expect(res.status).toBe(400)
    expect(await readJson(res)).toMatchObject({ error: { code: 'Malformed', details: { field: 'X-Expect-Address' } } })
    expect(sys.issued).toHaveLength(0)
  })

  it('refusals before any work (missing or unknown API key, declared size over the limit) are audited as deny, without the key', async () => {
    sys = await system({ uploads: { maxBytes: 1000 } })
    await sys.request('POST', '/put', { 'x-corr-id': 'no-key' }, 'x')
    await sys.request('POST', '/put', { 'x-api-key': 'ronk_guess_1', 'x-corr-id': 'bad-key' }, 'x')
    await sys.request('POST', '/put', { 'x-api-key': API_KEY, 'x-corr-id': 'too-big', 'content-length': '2000' }, new Uint8Array(2000))
    await sys.clock.flush()
    const events = (sys.interop.auditSink as MemoryAuditSink).events()
    expect(events.map((e) => [e.requestId, e.decision, e.reason, e.client])).toEqual([
      ['no-key', 'deny', 'missing', undefined],
      ['bad-key', 'deny', 'bad_signature', undefined],
      ['too-big', 'deny', 'OverLimit', 'alice'],
    ])
    expect(JSON.stringify(events)).not.toContain('ronk_')
  })

  it('passport unavailable: 503 NotReady, nothing stored', async () => {
    sys = await system({}, { withPassport: false })
    const res = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
    expect(res.status).toBe(503)
    expect(await readJson(res)).toMatchObject({ error: { code: 'NotReady' } })
  })

  it('storage failing (500) or refusing the capability (401, 403) is a 503 NotReady to the client, never a 500 or a misleading 401', async () => {
    sys = await system({ retry: { tries: 1 } })
    sys.slow.failPuts = true
    const failed = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
    expect(failed.status).toBe(503)
    expect(await readJson(failed)).toMatchObject({ error: { code: 'NotReady', details: { upstream: 'storage', code: 'Internal' } } })
    sys.slow.failPuts = false
    for (const status of [401, 403] as const) {
      sys.slow.refusePuts = status
      const refused = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
      expect(refused.status).toBe(503)
      expect(await readJson(refused)).toMatchObject({ error: { code: 'NotReady', details: { upstream: 'storage' } } })
    }
    sys.slow.refusePuts = undefined
    // Passport answering 500 is the same: interop's upstream is down, not the client's fault.
    sys.transport.mount('passport', { dispatch: () => Promise.resolve({ status: 500, headers: { 'content-type': 'application/json' }, body: (async function* () { yield new TextEncoder().encode('{"error":{"code":"Internal","message":"kms","retryable":false,"corr_id":"x","details":{}}}') })() }) })
    const noPassport = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
    expect(noPassport.status).toBe(503)
    expect(await readJson(noPassport)).toMatchObject({ error: { code: 'NotReady', details: { upstream: 'passport' } } })
  })

  it('storage answering the upload 2xx without JSON is a 503 NotReady, never a 500', async () => {
    sys = await system()
    sys.transport.mount('storage', { dispatch: () => Promise.resolve({ status: 201, headers: { 'content-type': 'text/html' }, body: (async function* () { yield new TextEncoder().encode('<html>proxy</html>') })() }) })
    const res = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
    expect(res.status).toBe(503)
    expect(await readJson(res)).toMatchObject({ error: { code: 'NotReady', details: { upstream: 'storage' } } })
  })

  it('GET /o with storage answering 500 is a 503 NotReady, never a 500', async () => {
    sys = await system({ retry: { tries: 1 } })
    const put = await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'kept')
    const { address } = await readJson<{ address: string }>(put)
    sys.slow.failGets = true
    const res = await sys.request('GET', `/o/${address}`)
    expect(res.status).toBe(503)
    expect(await readJson(res)).toMatchObject({ error: { code: 'NotReady', details: { upstream: 'storage', code: 'Internal' } } })
  })

  it('GET /o of an unknown address is 404, a bad address 400', async () => {
    sys = await system()
    expect((await sys.request('GET', `/o/${addressOf(new Uint8Array([9]))}`)).status).toBe(404)
    expect((await sys.request('GET', '/o/b3:nothex')).status).toBe(400)
  })
})

describe('slow clients', () => {
  it('one client cannot hold more than maxConcurrentPerClient uploads: the next one is 429 Busy', async () => {
    sys = await system({ uploads: { maxConcurrentPerClient: 1 } })
    const s = sys
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    async function* slowBody(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(10)
      await gate
      yield new Uint8Array(10)
    }
    const first = s.request('POST', '/put', { 'x-api-key': API_KEY }, slowBody())
    await s.clock.flush()
    const second = await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'x')
    expect(second.status).toBe(429)
    expect(await readJson(second)).toMatchObject({ error: { code: 'Busy', details: { reason: 'per_client' } } })
    release()
    expect((await first).status).toBe(201)
    expect((await s.request('POST', '/put', { 'x-api-key': API_KEY }, 'y')).status).toBe(201)
  })
})

describe('rechunk', () => {
  it('yields fixed-size chunks whatever the input sizes, holding at most two', async () => {
    async function* src(): AsyncGenerator<Uint8Array> {
      for (const n of [1, 70_000, 3, 200_000, 5, 65_536, 10]) yield new Uint8Array(n).fill(n % 256)
    }
    let pulled = 0
    const sizes: number[] = []
    let total = 0
    for await (const c of rechunk(src(), 64 * KiB)) {
      pulled++
      sizes.push(c.byteLength)
      total += c.byteLength
    }
    expect(total).toBe(1 + 70_000 + 3 + 200_000 + 5 + 65_536 + 10)
    expect(sizes.slice(0, -1).every((s) => s === 64 * KiB)).toBe(true)
    expect(sizes.at(-1)).toBeLessThanOrEqual(64 * KiB)
    expect(pulled).toBe(sizes.length)
  })
})

describe('upload capability reuse', () => {
  it("a client's uploads share one capability for two thirds of its life, then a fresh one is issued", async () => {
    sys = await system()
    for (const text of ['one', 'two', 'three']) expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, text)).status).toBe(201)
    expect(sys.issued).toHaveLength(1)
    await sys.clock.advance(39_000) // 60 s capability: still inside its first 40 s
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'four')).status).toBe(201)
    expect(sys.issued).toHaveLength(1)
    await sys.clock.advance(2_000) // past 40 s: renewed, never used near its expiry
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'five')).status).toBe(201)
    expect(sys.issued).toHaveLength(2)
  })

  it('storage refusing the capability (401/403) drops it: the next upload gets a fresh one', async () => {
    sys = await system({ retry: { tries: 1 } })
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'ok')).status).toBe(201)
    sys.slow.refusePuts = 403
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'refused')).status).toBe(503)
    sys.slow.refusePuts = undefined
    expect(sys.issued).toHaveLength(1)
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'again')).status).toBe(201)
    expect(sys.issued).toHaveLength(2)
  })

  it('a reload drops every kept capability (limits or clients may have changed)', async () => {
    sys = await system()
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'a')).status).toBe(201)
    const { hashApiKey } = await import('../src/index.js')
    await sys.interop.reload({ apiKeys: [{ client: 'alice', keyHash: hashApiKey(API_KEY), maxBytes: 4096 }] })
    expect((await sys.request('POST', '/put', { 'x-api-key': API_KEY }, 'b')).status).toBe(201)
    expect(sys.issued).toHaveLength(2)
    expect(sys.issued[1]).toMatchObject({ caveats: { maxBytes: 4096 } })
  })
})
