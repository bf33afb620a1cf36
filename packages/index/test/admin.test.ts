/**
 * Admin routes (seed svc-index: "admin reindex (202, Idempotency-Key kept 24 h), admin
 * pin/unpin"), guarded by `index:admin`: a token without it is refused with 403 before anything
 * runs. Reindex answers the same for the same key within 24 h without a second reindex (an
 * injected clock moves past the 24 h); a pinned key's answer outlives its TTL and the cache bound.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import type { TransportResponse } from '@ron/core'
import { IDEMPOTENCY_TTL_MS } from '../src/index.js'
import { FakePeer, addr, addressAnswer, manifestFor, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

function admin(e: Env, scope = 'index:admin', sub = 'ops'): string {
  return e.issuer.mint({ sub, scope, aud: 'index' })
}

async function reindex(e: Env, token: string, key?: string): Promise<TransportResponse> {
  return e.request('POST', '/admin/reindex', { authorization: `Bearer ${token}`, ...(key === undefined ? {} : { 'idempotency-key': key }) })
}

async function metric(e: Env, labels: string): Promise<number> {
  const m = new RegExp(`^index_admin_total\\{${labels}[^}]*\\} (\\d+)`, 'm').exec(await e.index.metricsText())
  return Number(m?.[1] ?? NaN)
}

describe('admin routes are guarded by index:admin', () => {
  it('a token without index:admin gets 403 on every admin route, no token 401; nothing runs', async () => {
    env = await setup({})
    const writer = admin(env, 'index:write index:announce')
    for (const [method, path] of [
      ['POST', '/admin/reindex'],
      ['PUT', `/admin/pins/${addr(1)}`],
      ['DELETE', `/admin/pins/${addr(1)}`],
      ['GET', '/admin/pins'],
    ] as const) {
      const forbidden = await env.request(method, path, { authorization: `Bearer ${writer}`, 'idempotency-key': 'k1' })
      expect(forbidden.status, `${method} ${path}`).toBe(403)
      expect((await forbidden.json<{ error: { code: string } }>()).error.code).toBe('Forbidden')
      const anon = await env.request(method, path, { 'idempotency-key': 'k1' })
      expect(anon.status, `${method} ${path}`).toBe(401)
      await anon.dump()
    }
    expect(await metric(env, 'action="reindex",result="ok"')).toBe(0)
    expect(await metric(env, 'action="pin",result="ok"')).toBe(0)
  })
})

describe('POST /admin/reindex', () => {
  it('answers 202; the same Idempotency-Key within 24 h answers the same body without a second reindex; after 24 h it runs again', async () => {
    const clock = new VirtualClock(1_000_000)
    // Janitors tick hourly, so a day of virtual time is a few dozen timers.
    env = await setup({ purgeIntervalMs: '1h', breakerJanitorMs: '1h' }, { clock })
    const m = await env.put(manifestFor(1))
    await env.client.setName('re.index', m)
    // A cached answer: a reindex drops the caches.
    await expect(env.anon.resolve('re.index')).resolves.toMatchObject({ source: 'local' })
    await expect(env.anon.resolve('re.index')).resolves.toMatchObject({ source: 'cache' })
    const token = admin(env)
    const first = await reindex(env, token, 'key-1')
    expect(first.status).toBe(202)
    const body = await first.json<{ reindex: { key: string; acceptedAt: number; names: number; resigned: number } }>()
    expect(body.reindex).toEqual({ key: 'key-1', acceptedAt: 1_000_000, names: 1, resigned: 0 })
    await expect(env.anon.resolve('re.index')).resolves.toMatchObject({ source: 'local' })
    expect(await metric(env, 'action="reindex",result="ok"')).toBe(1)

    // Same key, later: the same answer (the first acceptedAt), counted as replayed, no second reindex.
    await clock.advance(60_000)
    await env.anon.resolve('re.index')
    await expect(env.anon.resolve('re.index')).resolves.toMatchObject({ source: 'cache' })
    const again = await reindex(env, token, 'key-1')
    expect(again.status).toBe(202)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(await again.json()).toEqual(body)
    await expect(env.anon.resolve('re.index')).resolves.toMatchObject({ source: 'cache' })
    expect(await metric(env, 'action="reindex",result="ok"')).toBe(1)
    expect(await metric(env, 'action="reindex",result="replayed"')).toBe(1)

    // Another key, or the same key from another principal, is another reindex.
    const other = await reindex(env, admin(env, 'index:admin', 'someone-else'), 'key-1')
    expect(other.status).toBe(202)
    expect((await other.json<{ reindex: { acceptedAt: number } }>()).reindex.acceptedAt).toBe(1_060_000)
    expect(await metric(env, 'action="reindex",result="ok"')).toBe(2)

    // 24 h after the first: the key is forgotten, a new reindex runs.
    await clock.advance(IDEMPOTENCY_TTL_MS - 60_001)
    // Just inside the 24 h (with a fresh token of the same subject): still the same answer.
    const inside = await reindex(env, admin(env), 'key-1')
    expect(inside.headers['idempotent-replayed']).toBe('true')
    expect(await inside.json()).toEqual(body)
    await clock.advance(1)
    const later = await reindex(env, admin(env), 'key-1')
    expect(later.status).toBe(202)
    expect(later.headers['idempotent-replayed']).toBeUndefined()
    expect((await later.json<{ reindex: { acceptedAt: number } }>()).reindex.acceptedAt).toBe(1_000_000 + IDEMPOTENCY_TTL_MS)
    expect(await metric(env, 'action="reindex",result="ok"')).toBe(3)
  })

  it('concurrent requests with one key run one reindex; a missing or malformed key is 400', async () => {
    env = await setup({})
    const token = admin(env)
    const [a, b] = await Promise.all([reindex(env, token, 'same'), reindex(env, token, 'same')])
    expect([a.status, b.status]).toEqual([202, 202])
    expect(await a.json()).toEqual(await b.json())
    expect(await metric(env, 'action="reindex",result="ok"')).toBe(1)
    for (const key of [undefined, '', 'x'.repeat(129), 'with space']) {
      const bad = await reindex(env, token, key)
      expect(bad.status, String(key)).toBe(400)
      expect(await bad.json()).toMatchObject({ error: { code: 'Malformed', details: { field: 'Idempotency-Key' } } })
    }
  })
})

describe('pins', () => {
  it('a pinned answer is served past its TTL and kept by the janitor and past the cache bound; unpinned it expires', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, cache: { ttlMs: 1_000, maxEntries: 2 }, purgeIntervalMs: 500 }, { clock })
    const peer = new FakePeer(clock)
    env.transport.mount('peer-1', peer)
    const a = addr('pinned')
    peer.reply = (k) => ({ status: 200, json: addressAnswer(k as `b3:${string}`, ['node-p']) })
    const token = admin(env)
    const pin = await env.request('PUT', `/admin/pins/${a}`, { authorization: `Bearer ${token}` })
    expect(pin.status).toBe(200)
    expect(await pin.json()).toEqual({ key: a, pinned: true, source: 'peer' })
    expect(peer.calls).toEqual([a])
    const list = await env.request('GET', '/admin/pins', { authorization: `Bearer ${token}` })
    expect(await list.json()).toEqual({ pins: [a] })
    expect(await env.index.metricsText()).toMatch(/index_pinned_keys\{[^}]*\} 1/)
    // Fill the cache past its bound with other keys and let the TTL pass many times over.
    for (let i = 0; i < 4; i++) await env.anon.resolve(addr(`other-${i}`))
    for (let i = 0; i < 10; i++) await clock.advance(500)
    peer.reply = () => ({ status: 500 })
    await expect(env.anon.resolve(a)).resolves.toMatchObject({ source: 'cache', ttlSec: 1 })
    expect(peer.calls.filter((k) => k === a)).toHaveLength(1)

    const unpin = await env.request('DELETE', `/admin/pins/${a}`, { authorization: `Bearer ${token}` })
    expect(await unpin.json()).toEqual({ key: a, pinned: false, wasPinned: true })
    await clock.advance(500)
    // Expired and purged now: asked at the peer again (which fails now).
    await expect(env.anon.resolve(a)).rejects.toMatchObject({ code: 'Unavailable' })
    expect(await metric(env, 'action="pin",result="ok"')).toBe(1)
    expect(await metric(env, 'action="unpin",result="ok"')).toBe(1)
  })

  it('a key that does not resolve is not pinned (the error is the answer); a name write still replaces a pinned answer', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ cache: { ttlMs: 1_000 } }, { clock })
    const token = admin(env)
    const missing = await env.request('PUT', `/admin/pins/${addr('nowhere')}`, { authorization: `Bearer ${token}` })
    expect(missing.status).toBe(404)
    await missing.dump()
    const list = await env.request('GET', '/admin/pins', { authorization: `Bearer ${token}` })
    expect(await list.json()).toEqual({ pins: [] })

    const m1 = await env.put(manifestFor(1))
    const m2 = await env.put(manifestFor(2))
    await env.client.setName('pin.me', m1)
    const pin = await env.request('PUT', '/admin/pins/pin.me', { authorization: `Bearer ${token}` })
    expect(pin.status).toBe(200)
    await pin.dump()
    await clock.advance(5_000)
    await expect(env.anon.resolve('pin.me')).resolves.toMatchObject({ source: 'cache', manifestAddress: m1 })
    await env.client.setName('pin.me', m2)
    await expect(env.anon.resolve('pin.me')).resolves.toMatchObject({ manifestAddress: m2 })
    await clock.advance(5_000)
    await expect(env.anon.resolve('pin.me')).resolves.toMatchObject({ source: 'cache', manifestAddress: m2 })
  })
})
