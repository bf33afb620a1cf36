import { afterEach, describe, expect, it } from 'vitest'
import { NotFoundError, TimeoutError } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { addressOf } from '@ron/core'
import { FakePeer, addr, addressAnswer, directory, manifestFor, settle, setup, signed, testNode, type Env, type PeerReply } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

async function withPeers(n: number, config: Parameters<typeof setup>[0] = {}): Promise<{ env: Env; clock: VirtualClock; peers: FakePeer[] }> {
  const clock = new VirtualClock(1_000_000)
  const names = Array.from({ length: n }, (_, i) => `peer-${i + 1}`)
  env = await setup({ peers: { targets: names }, ...config }, { clock })
  const peers = names.map((name) => {
    const p = new FakePeer(clock)
    env!.transport.mount(name, p)
    return p
  })
  return { env, clock, peers }
}

async function metric(e: Env, name: string): Promise<string> {
  const text = await e.index.metricsText()
  return text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .join('\n')
}

describe('hedged peer lookups', () => {
  it('α slow → β wins after the hedge delay, and the α requests are actually aborted', async () => {
    const { env, clock, peers } = await withPeers(5)
    const a = addr(1)
    for (const p of peers) p.reply = () => ({ status: 200, json: addressAnswer(a, ['node-x']) })
    for (const p of peers.slice(0, 3)) p.delayMs = 1000
    peers[3]!.delayMs = 10
    peers[4]!.delayMs = 500
    const started = clock.now()
    let doneAt = 0
    const pending = env.anon.resolve(a).finally(() => (doneAt = clock.now()))
    await clock.advance(149)
    expect(peers.map((p) => p.calls.length)).toEqual([1, 1, 1, 0, 0])
    await clock.advance(1)
    expect(peers.map((p) => p.calls.length)).toEqual([1, 1, 1, 1, 1])
    await clock.advance(10)
    const r = await pending
    expect(r).toMatchObject({ key: a, source: 'peer' })
    expect(r.providers.map((p) => p.node)).toEqual(['node-x'])
    expect(doneAt - started).toBe(160)
    expect(peers.map((p) => p.aborted)).toEqual([1, 1, 1, 0, 1])
    expect(peers.map((p) => p.answered)).toEqual([0, 0, 0, 1, 0])
    const m = await metric(env, 'dht_hedged_requests_total')
    expect(m).toMatch(/result="won"[^}]*} 1/)
    expect(m).toMatch(/result="lost"[^}]*} 1/)
  })

  it('the first α answer wins without hedging and aborts the other α requests', async () => {
    const { env, clock, peers } = await withPeers(5)
    const a = addr(2)
    for (const p of peers) p.reply = () => ({ status: 200, json: addressAnswer(a, ['node-y']) })
    peers[0]!.delayMs = 100
    peers[1]!.delayMs = 20
    peers[2]!.delayMs = 100
    const pending = settle(env.anon.resolve(a))
    await clock.advance(20)
    const out = await pending
    expect(out.ok && out.value.source).toBe('peer')
    expect(peers.map((p) => p.calls.length)).toEqual([1, 1, 1, 0, 0])
    expect(peers.map((p) => p.aborted)).toEqual([1, 0, 1, 0, 0])
  })

  it('all peers slow → 504 Timeout at the end-to-end deadline, nothing left running', async () => {
    const { env, clock, peers } = await withPeers(5)
    for (const p of peers) p.reply = () => ({ hang: true })
    const started = clock.now()
    let failedAt = 0
    const pending = settle(env.anon.resolve(addr(3)).finally(() => (failedAt = clock.now())))
    await clock.advance(1199)
    expect(failedAt).toBe(0)
    await clock.advance(1)
    const out = await pending
    expect(out.ok ? undefined : out.error).toBeInstanceOf(TimeoutError)
    expect(failedAt - started).toBe(1200)
    expect(peers.map((p) => p.aborted)).toEqual([1, 1, 1, 1, 1])
    expect(await metric(env, 'resolve_deadline_hit_total')).toContain(' 1')
    // A timeout is not a NotFound: it is not remembered.
    for (const p of peers) p.reply = () => ({ status: 404 })
    await expect(env.anon.resolve(addr(3))).rejects.toBeInstanceOf(NotFoundError)
  })

  it('hedges at once when every α peer has already answered "not found"', async () => {
    const { env, clock, peers } = await withPeers(5)
    const a = addr(4)
    peers[4]!.reply = () => ({ status: 200, json: addressAnswer(a, ['node-z']) })
    peers[4]!.delayMs = 5
    const pending = env.anon.resolve(a)
    await clock.advance(5)
    await expect(pending).resolves.toMatchObject({ source: 'peer' })
    expect(peers.map((p) => p.calls.length)).toEqual([1, 1, 1, 1, 1])
  })

  it('every peer says not found → 404, remembered in the negative cache until its jittered TTL passes', async () => {
    const { env, clock, peers } = await withPeers(3, { cache: { negativeTtlMs: 2000, negativeJitter: 0.2 } })
    const a = addr(5)
    const first = env.anon.resolve(a)
    await expect(first).rejects.toBeInstanceOf(NotFoundError)
    expect(peers.map((p) => p.calls.length)).toEqual([1, 1, 1])
    await expect(env.anon.resolve(a)).rejects.toMatchObject({ code: 'NotFound', details: { reason: 'negative_cache' } })
    expect(peers.map((p) => p.calls.length)).toEqual([1, 1, 1])
    expect(await metric(env, 'index_cache_hits_total')).toMatch(/cache="negative"[^}]*} 1/)
    // ?fresh bypasses the negative cache, and the peers' caches too
    await expect(env.anon.resolve(a, { fresh: true })).rejects.toBeInstanceOf(NotFoundError)
    expect(peers[0]!.calls.length).toBe(2)
    expect(peers[0]!.urls.at(-1)).toMatch(/\?fresh=1$/)
    // After 2 s ± 20 % the entry has expired and the peers are asked again.
    await clock.advance(2401)
    for (const p of peers) p.reply = () => ({ status: 200, json: addressAnswer(a, ['node-q']) })
    await expect(env.anon.resolve(a)).resolves.toMatchObject({ source: 'peer' })
  })

  it('a peer query is answered from cache and store only: no fan-out', async () => {
    const { env, peers } = await withPeers(3)
    const res = await env.request('GET', `/resolve/${addr(6)}`, { 'x-ron-peer': '1' })
    expect(res.status).toBe(404)
    await res.dump()
    expect(peers.map((p) => p.calls.length)).toEqual([0, 0, 0])
  })

  it('hedges after the observed p95 when configured', async () => {
    const { env, clock, peers } = await withPeers(5, { peers: { targets: ['peer-1', 'peer-2', 'peer-3', 'peer-4', 'peer-5'], hedgeFromP95: true, hedgeMs: 100 } })
    // Teach the index that α peers answer in ~60 ms.
    for (const p of peers) p.delayMs = 60
    for (let i = 0; i < 3; i++) {
      const pr = settle(env.anon.resolve(addr(`warm-${i}`)))
      await clock.advance(120)
      expect((await pr).ok).toBe(false)
    }
    for (const p of peers) p.delayMs = 1000
    const pr = settle(env.anon.resolve(addr('p95')))
    const before = peers.map((p) => p.calls.length)
    await clock.advance(59)
    const launchedEarly = peers.map((p, i) => p.calls.length - before[i]!).reduce((a, b) => a + b, 0)
    await clock.advance(2)
    const launched = peers.map((p, i) => p.calls.length - before[i]!).reduce((a, b) => a + b, 0)
    expect(launchedEarly).toBe(3)
    expect(launched).toBe(5)
    await clock.advance(2000)
    await pr
  })
})

describe('peer queries and the negative cache', () => {
  it("a peer's miss is not remembered: this node's own clients still ask its peers", async () => {
    const { env, peers } = await withPeers(1)
    const a = addr(77)
    const miss = await env.request('GET', `/resolve/${a}`, { 'x-ron-peer': '1' })
    expect(miss.status).toBe(404)
    expect((await miss.json<{ error: { details: { reason: string } } }>()).error.details.reason).toBe('not_local')
    peers[0]!.reply = () => ({ status: 200, json: addressAnswer(a, ['node-n']) })
    await expect(env.anon.resolve(a)).resolves.toMatchObject({ source: 'peer' })
  })
})

describe('peer answers', () => {
  it('an answer for another key, or of the wrong kind, does not satisfy the lookup', async () => {
    const { env, peers } = await withPeers(3)
    const a = addr(88)
    peers[0]!.reply = () => ({ status: 200, json: addressAnswer(addr(89), ['node-wrong']) })
    peers[1]!.reply = () => ({ status: 200, json: { key: a, providers: [], source: 'local', ttlSec: 10 } })
    peers[2]!.reply = () => ({ status: 200, json: { not: 'an answer' } })
    await expect(env.anon.resolve(a)).rejects.toBeInstanceOf(NotFoundError)
    peers[2]!.reply = () => ({ status: 200, json: addressAnswer(a, ['node-right']) })
    const r = await env.anon.resolve(a, { fresh: true })
    expect(r.providers.map((p) => p.node)).toEqual(['node-right'])
  })
})

describe('manifests from peers', () => {
  it('a name answer is used only if the manifest text hashes to its address; clients never see the text', async () => {
    // Every answer carries a record the name's home signed: only the manifest text decides here.
    const me = testNode()
    const home = testNode()
    const { env, peers } = await withPeers(3, { identity: me.identity, nodes: directory(me, home) })
    const real = manifestFor('real')
    const text = JSON.stringify(real)
    const ma = addressOf(new TextEncoder().encode(text))
    const forged = { ...real, size: 999 }
    const record = signed(home, 'site.x', ma)
    const answer = (manifest: unknown, manifestText: string | undefined): PeerReply => ({
      status: 200,
      json: { key: 'site.x', manifestAddress: ma, manifest, ...(manifestText === undefined ? {} : { manifestText }), record, providers: [], source: 'local', ttlSec: 10 },
    })
    peers[0]!.reply = () => answer(forged, JSON.stringify(forged))
    peers[1]!.reply = () => answer(forged, undefined)
    peers[2]!.reply = () => answer(forged, text)
    const r = await env.anon.resolve('site.x')
    expect(r).toMatchObject({ manifestAddress: ma, manifest: real, source: 'peer' })
    expect('manifestText' in r).toBe(false)
    expect(await metric(env, 'index_integrity_fail_total')).toMatch(/\} 2$/)
    // A peer query gets the text, so the next index can check it in turn.
    const res = await env.request('GET', '/resolve/site.x', { 'x-ron-peer': '1' })
    expect(await res.json()).toMatchObject({ manifestText: text, record })
  })
})

describe('peer outages and the negative cache', () => {
  it('when every peer asked fails, the answer is 503 Unavailable (peers_unavailable) with Retry-After, never 404, and is not remembered', async () => {
    const { env, peers } = await withPeers(2, { breaker: { minCalls: 100 } })
    const a = addr('outage')
    for (const p of peers) p.reply = () => ({ status: 500 })
    const res = await env.request('GET', `/resolve/${a}`)
    expect(res.status).toBe(503)
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(await res.json()).toMatchObject({ error: { code: 'Unavailable', retryable: true, details: { reason: 'peers_unavailable', key: a } } })
    await expect(env.anon.resolve(a)).rejects.toMatchObject({ code: 'Unavailable', details: { reason: 'peers_unavailable' } })
    for (const p of peers) p.reply = () => ({ status: 200, json: addressAnswer(a, ['node-back']) })
    await expect(env.anon.resolve(a)).resolves.toMatchObject({ source: 'peer' })
  })

  it('every breaker open: nobody is asked, the answer is 503 BreakerOpen with Retry-After (never 404), and the miss is not remembered', async () => {
    const { env, clock, peers } = await withPeers(1, { breaker: { minCalls: 1, cooldownMs: 1_000 } })
    peers[0]!.reply = () => ({ status: 500 })
    await expect(env.anon.resolve(addr('trip'))).rejects.toMatchObject({ code: 'Unavailable', details: { reason: 'peers_unavailable' } })
    const a = addr('while-open')
    const res = await env.request('GET', `/resolve/${a}`)
    expect(res.status).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(await res.json()).toMatchObject({ error: { code: 'BreakerOpen', retryable: true, details: { reason: 'breakers_open', key: a } } })
    expect(peers[0]!.calls).not.toContain(a)
    // Half-open after 1 s, well inside the 2 s (± 20 %) a remembered miss would last.
    await clock.advance(1_000)
    peers[0]!.reply = () => ({ status: 200, json: addressAnswer(a, ['node-probe']) })
    await expect(env.anon.resolve(a)).resolves.toMatchObject({ source: 'peer' })
  })
})

describe('correlation ids', () => {
  it("peer queries carry the request's X-Corr-ID: the peer receives the caller's id", async () => {
    const { env, peers } = await withPeers(2, { peers: { targets: ['peer-1', 'peer-2'], alpha: 2 } })
    const a = addr('corr')
    for (const p of peers) p.reply = () => ({ status: 404 })
    const res = await env.request('GET', `/resolve/${a}`, { 'x-corr-id': 'corr-from-the-caller-1' })
    expect(res.status).toBe(404)
    expect(res.headers['x-corr-id']).toBe('corr-from-the-caller-1')
    await res.dump()
    for (const p of peers) {
      expect(p.calls).toEqual([a])
      expect(p.headers[0]?.['x-corr-id']).toBe('corr-from-the-caller-1')
      expect(p.headers[0]?.['x-ron-peer']).toBe('1')
    }
    // A request without one gets a generated id, and the peers get that same id.
    const b = addr('corr-2')
    const res2 = await env.request('GET', `/resolve/${b}`)
    const generated = res2.headers['x-corr-id']
    await res2.dump()
    expect(typeof generated).toBe('string')
    for (const p of peers) expect(p.headers[1]?.['x-corr-id']).toBe(generated)
  })
})
