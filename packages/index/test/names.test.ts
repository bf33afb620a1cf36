import { afterEach, describe, expect, it } from 'vitest'
import { ConflictError, InvalidReferenceError, NotFoundError } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { addr, manifestFor, settle, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

describe('names', () => {
  it('binds a name to a manifest and resolves it with the providers of its content', async () => {
    // Virtual time: the score (freshness) and the cache hit must not depend on how loaded the machine is.
    env = await setup({}, { clock: new VirtualClock(1_000_000) })
    const m = manifestFor(1)
    const ma = await env.put(m)
    await env.announcer('node-a').announce({ address: m.content, node: 'node-a', endpoint: 'http://node-a:7701', ttlSec: 60 })
    expect(await env.client.setName('docs.alice', ma)).toEqual({ name: 'docs.alice', manifestAddress: ma, previous: null, seq: 1 })
    const r = await env.anon.resolve('docs.alice')
    expect(r).toMatchObject({ key: 'docs.alice', manifestAddress: ma, manifest: m, source: 'local', ttlSec: 10 })
    // The answer carries the record this node (the name's home) signed for the binding.
    expect(r).toMatchObject({ record: { name: 'docs.alice', manifestAddress: ma, seq: 1, node: env.index.identity.id, signedAt: 1_000_000 } })
    expect(r.providers).toEqual([{ node: 'node-a', endpoint: 'http://node-a:7701', score: 1 }])
    expect((await env.anon.resolve('docs.alice')).source).toBe('cache')
  })

  it('follows the CAS rules: omitted = unconditional, null = create only, address = compare-and-set', async () => {
    env = await setup()
    const a = await env.put(manifestFor(1))
    const b = await env.put(manifestFor(2))
    await env.client.setName('n.x', a, { expectedPrevious: null })
    await expect(env.client.setName('n.x', b, { expectedPrevious: null })).rejects.toBeInstanceOf(ConflictError)
    await expect(env.client.setName('n.x', b, { expectedPrevious: b })).rejects.toMatchObject({ code: 'Conflict', details: { expected: b, actual: a } })
    expect((await env.client.setName('n.x', b, { expectedPrevious: a })).previous).toBe(a)
    expect((await env.client.setName('n.x', a)).previous).toBe(b)
    // DELETE with If-Match
    await expect(env.client.deleteName('n.x', { ifMatch: b })).rejects.toBeInstanceOf(ConflictError)
    expect(await env.client.deleteName('n.x', { ifMatch: a })).toEqual({ name: 'n.x', deleted: true, previous: a, seq: 4 })
    await expect(env.client.deleteName('n.x')).rejects.toBeInstanceOf(NotFoundError)
    await env.client.setName('n.x', a)
    expect((await env.client.deleteName('n.x')).previous).toBe(a)
  })

  it('a write invalidates the cached answer', async () => {
    env = await setup({}, { clock: new VirtualClock(1_000_000) })
    const a = await env.put(manifestFor(1))
    const b = await env.put(manifestFor(2))
    await env.client.setName('n.x', a)
    expect((await env.anon.resolve('n.x')).source).toBe('local')
    expect((await env.anon.resolve('n.x')).source).toBe('cache')
    await env.client.setName('n.x', b)
    expect(await env.anon.resolve('n.x')).toMatchObject({ manifestAddress: b, source: 'local' })
    await env.client.deleteName('n.x')
    await expect(env.anon.resolve('n.x')).rejects.toBeInstanceOf(NotFoundError)
  })

  it('refuses a manifest that is missing, not JSON or not a manifest with 422 InvalidReference', async () => {
    env = await setup()
    await expect(env.client.setName('n.x', addr('nothing'))).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'missing' } })
    const notJson = await env.put('hello')
    await expect(env.client.setName('n.x', notJson)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'not_a_manifest' } })
    const notManifest = await env.put(JSON.stringify({ content: addr(1), size: 1 }))
    await expect(env.client.setName('n.x', notManifest)).rejects.toBeInstanceOf(InvalidReferenceError)
    await expect(env.anon.resolve('n.x')).rejects.toBeInstanceOf(NotFoundError)
  })

  it('refuses a manifest whose bytes do not hash to its address, and counts it', async () => {
    env = await setup()
    const a = await env.put(manifestFor(1))
    env.storage.objects.set(a, new TextEncoder().encode(JSON.stringify(manifestFor(2))))
    await expect(env.client.setName('n.x', a)).rejects.toMatchObject({ code: 'InvalidReference', details: { reason: 'integrity' } })
    expect(await env.index.metricsText()).toMatch(/index_integrity_fail_total\{[^}]*\} 1/)
  })

  it('a storage node that stalls mid-body cannot hold a name write past storageTimeoutMs (504)', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ storageTimeoutMs: 500 }, { clock })
    const a = await env.put(manifestFor(1))
    env.storage.stall = clock
    const out = settle(env.client.setName('slow.x', a))
    await clock.advance(499)
    await clock.advance(1)
    const r = await out
    expect(r.ok ? undefined : r.error).toMatchObject({ code: 'Timeout' })
    expect(await env.index.metricsText()).toMatch(/io_timeouts_total\{op="storage"[^}]*\} 1/)
  })

  it('a busy or failing storage makes a name write a retryable 503, not a final 422 nor our own 500', async () => {
    env = await setup()
    const a = await env.put(manifestFor(1))
    const envelope = (code: string): Uint8Array => new TextEncoder().encode(JSON.stringify({ error: { code, message: 'x', retryable: code === 'Busy', corr_id: 'x', details: {} } }))
    for (const [status, code, reason] of [
      [429, 'Busy', 'storage_busy'],
      [500, 'Internal', 'storage_error'],
    ] as const) {
      env.transport.mount('storage', {
        dispatch: () =>
          Promise.resolve({
            status,
            headers: { 'content-type': 'application/json', 'retry-after': '2' },
            body: (async function* () {
              yield envelope(code)
            })(),
          }),
      })
      const res = await env.request('PUT', '/names/n.x', { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.write}` }, JSON.stringify({ manifestAddress: a }))
      expect(res.status, code).toBe(503)
      expect(res.headers['retry-after'], code).toBeDefined()
      const body = await res.json<{ error: { code: string; retryable: boolean; details: { reason: string } } }>()
      expect(body.error, code).toMatchObject({ code: 'NotReady', retryable: true, details: { reason } })
    }
    // Storage back: the same write goes through.
    env.transport.mount('storage', env.storage)
    await expect(env.client.setName('n.x', a)).resolves.toMatchObject({ manifestAddress: a })
  })

  it('needs index:write and refuses announce-only tokens', async () => {
    env = await setup()
    const a = await env.put(manifestFor(1))
    const res = await env.request('PUT', '/names/n.x', { 'content-type': 'application/json' }, JSON.stringify({ manifestAddress: a }))
    expect(res.status).toBe(401)
    const res2 = await env.request('PUT', '/names/n.x', { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.announce}` }, JSON.stringify({ manifestAddress: a }))
    expect(res2.status).toBe(403)
  })

  it('refuses malformed and reserved names, bad bodies and bad If-Match with 400', async () => {
    env = await setup()
    const a = await env.put(manifestFor(1))
    const h = { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.write}` }
    for (const name of ['Docs', '-a', 'a-', 'a..b', 'a_b', 'x'.repeat(64), 'my.localhost', 'foo.test', `${'a.'.repeat(127)}a`]) {
      const res = await env.request('PUT', `/names/${encodeURIComponent(name)}`, h, JSON.stringify({ manifestAddress: a }))
      expect(res.status, name).toBe(400)
      await res.dump()
    }
    for (const body of ['{', '[]', JSON.stringify({ manifestAddress: 'b3:zz' }), JSON.stringify({ manifestAddress: a, extra: 1 }), JSON.stringify({ manifestAddress: a, expectedPrevious: 5 })]) {
      const res = await env.request('PUT', '/names/n.x', h, body)
      expect(res.status, body).toBe(400)
      await res.dump()
    }
    const res = await env.request('DELETE', '/names/n.x', { ...h, 'if-match': '"b3:nope"' })
    expect(res.status).toBe(400)
    await res.dump()
  })
})
