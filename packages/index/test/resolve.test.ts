import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { NotFoundError } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { addr, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

describe('resolve sources and the provider set', () => {
  it('an address resolves from the local table, then from the cache, until its TTL passes', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({}, { clock })
    const a = addr(1)
    await env.announcer('n1').announce({ address: a, node: 'n1', endpoint: 'http://n1:7701', ttlSec: 60 })
    expect(await env.anon.resolve(a)).toEqual({ key: a, providers: [{ node: 'n1', endpoint: 'http://n1:7701', score: 1 }], source: 'local', ttlSec: 10 })
    await clock.advance(4_000)
    expect(await env.anon.resolve(a)).toMatchObject({ source: 'cache', ttlSec: 6 })
    expect((await env.anon.resolve(a, { fresh: true })).source).toBe('local')
    await clock.advance(10_000)
    expect((await env.anon.resolve(a)).source).toBe('local')
  })

  it('provider records expire after ttlSec and the janitor purges them', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ purgeIntervalMs: 5_000 }, { clock })
    const a = addr(2)
    const r = await env.announcer('n1').announce({ address: a, node: 'n1', endpoint: 'http://n1', ttlSec: 3 })
    expect(r).toMatchObject({ ttlSec: 3, expiresAt: 1_003_000 })
    await clock.advance(3_000)
    await expect(env.anon.resolve(a, { fresh: true })).rejects.toBeInstanceOf(NotFoundError)
    await clock.advance(2_000)
    expect(await env.index.metricsText()).toMatch(/index_provider_records\{[^}]*\} 0/)
  })

  it('ranks providers (fresher first) and honours ?limit= 1..32 (default 5)', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({}, { clock })
    const a = addr(3)
    for (let i = 0; i < 8; i++) {
      await env.announcer(`n${i}`).announce({ address: a, node: `n${i}`, endpoint: `http://n${i}`, ttlSec: 100 })
      await clock.advance(10_000)
    }
    const all = await env.anon.providers(a, { limit: 32 })
    expect(all.providers.map((p) => p.node)).toEqual(['n7', 'n6', 'n5', 'n4', 'n3', 'n2', 'n1', 'n0'])
    expect((await env.anon.providers(a)).providers).toHaveLength(5)
    expect((await env.anon.providers(a, { limit: 1 })).providers.map((p) => p.node)).toEqual(['n7'])
    for (const bad of ['0', '33', 'x', '-1', '1.5', '']) {
      const res = await env.request('GET', `/providers/${a}?limit=${bad}`)
      expect(res.status, bad).toBe(400)
      await res.dump()
    }
  })

  it('announcements are strict: bad DTOs are 400 naming the field, the TTL is capped, announce needs index:announce', async () => {
    env = await setup({ maxAnnounceTtlSec: 100 })
    const h = { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.announce}` }
    const good = { address: addr(4), node: 'n', endpoint: 'http://n', ttlSec: 50 }
    for (const body of [{ ...good, address: 'b3:00' }, { ...good, ttlSec: 0 }, { ...good, extra: true }, { ...good, node: '' }, { address: good.address }]) {
      const res = await env.request('POST', '/providers', h, JSON.stringify(body))
      expect(res.status, JSON.stringify(body)).toBe(400)
      await res.dump()
    }
    expect((await env.announcer('n').announce({ ...good, ttlSec: 5000 })).ttlSec).toBe(100)
    const res = await env.request('POST', '/providers', { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.write}` }, JSON.stringify(good))
    expect(res.status).toBe(403)
    await res.dump()
  })
})

describe('malformed input and fuzzing', () => {
  it('malformed names and addresses in /resolve and /providers → 400 Malformed', async () => {
    env = await setup()
    for (const key of ['b3:', 'b3:zz', `b3:${'A'.repeat(64)}`, `b3:${'a'.repeat(63)}`, `b3:${'a'.repeat(65)}`, 'UPPER', 'a..b', '-x', 'x_y', 'my.localhost', '%00', '%2F']) {
      const res = await env.request('GET', `/resolve/${key}`)
      expect(res.status, key).toBe(400)
      const body = await res.json<{ error: { code: string; details: { field?: string } } }>()
      expect(body.error.code).toBe('Malformed')
    }
    for (const key of ['docs.alice', 'b3:zz']) {
      const res = await env.request('GET', `/providers/${key}`)
      expect(res.status).toBe(400)
      await res.dump()
    }
  })

  it('path fuzz: any /resolve/<string> answers 400, 404 or 200 with a well-formed envelope, never 500', async () => {
    env = await setup()
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^b3:[0-9a-f]{0,70}$/), fc.stringMatching(/^[a-z0-9.-]{1,70}$/)), async (s) => {
        const res = await env!.request('GET', `/resolve/${encodeURIComponent(s)}`)
        expect([200, 400, 404]).toContain(res.status)
        if (res.status !== 200) {
          const body = await res.json<{ error: { code: string; corr_id: string } }>()
          expect(['Malformed', 'NotFound']).toContain(body.error.code)
          expect(body.error.corr_id).toBeTruthy()
        } else await res.dump()
      }),
      { numRuns: 200, seed: 13 },
    )
  })

  it('JSON fuzz: name writes and announcements with arbitrary bodies never 500 and never change state', async () => {
    env = await setup()
    const h = { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.write}` }
    const ha = { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.announce}` }
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.json({ maxDepth: 3 }), fc.string({ maxLength: 200 }), fc.constant('{"manifestAddress":'), fc.constant(`{"a":"${'x'.repeat(1000)}"}`)), async (body) => {
        for (const [method, path, headers] of [
          ['PUT', '/names/fuzz.x', h],
          ['POST', '/providers', ha],
        ] as const) {
          const res = await env!.request(method, path, headers, body)
          expect([400, 413, 422]).toContain(res.status)
          await res.dump()
        }
      }),
      { numRuns: 150, seed: 21 },
    )
    await expect(env.anon.resolve('fuzz.x')).rejects.toBeInstanceOf(NotFoundError)
  })

  it('size bombs: a JSON body over the 1 MiB cap is 413 OverLimit', async () => {
    env = await setup()
    const big = JSON.stringify({ manifestAddress: 'b3:' + '0'.repeat(64), pad: 'x'.repeat(1_100_000) })
    const res = await env.request('PUT', '/names/big.x', { 'content-type': 'application/json', authorization: `Bearer ${env.tokens.write}` }, big)
    expect(res.status).toBe(413)
    await res.dump()
  })
})
