import { afterEach, describe, expect, it } from 'vitest'
import { metricValue } from '@ron/core'
import { VirtualClock, until } from '@ron/core/testing'
import { PEER_HEADER } from '../src/index.js'
import { FakePeer, addr, manifestFor, settle, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

const text = async (r: { text(): Promise<string> }): Promise<string> => r.text()

describe('the cache-hit fast path of GET /resolve', () => {
  it('answers exactly what the resolver answers, for clients and for peers, with ttlSec and max-age counting down', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ cache: { ttlMs: 10_000 } }, { clock })
    const name = 'docs.fast'
    const content = addr('fast')
    await env.announcer('n1').announce({ address: content, node: 'n1', endpoint: 'http://n1:7701', ttlSec: 600 })
    const m = await env.put(manifestFor('fast'))
    await env.client.setName(name, m)
    // The first resolve fills the cache from the store.
    expect((await env.anon.resolve(name)).source).toBe('local')

    for (const advance of [0, 2_500, 1_000]) {
      await clock.advance(advance)
      const expected = await env.index.resolve(name)
      expect(expected.source).toBe('cache')
      const client = await env.request('GET', `/resolve/${name}`)
      expect(client.status).toBe(200)
      expect(client.headers['cache-control']).toBe(`max-age=${expected.ttlSec}`)
      expect(client.headers['content-type']).toBe('application/json')
      // Byte for byte the serialisation of the resolver's own answer (no manifest text for a client).
      expect(await text(client)).toBe(JSON.stringify(expected))
      expect(expected).not.toHaveProperty('manifestText')

      const forPeer = await env.index.resolve(name, { peer: true })
      const peer = await env.request('GET', `/resolve/${name}`, { [PEER_HEADER]: '1' })
      const body = await text(peer)
      expect(body).toBe(JSON.stringify(forPeer))
      expect(JSON.parse(body)).toHaveProperty('manifestText')
    }
    // 10 s TTL, 3.5 s later: 7 s left.
    expect((await env.index.resolve(name)).ttlSec).toBe(7)
  })

  it('a name write or an announcement invalidates the kept reply: the next answer is the new one', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({}, { clock })
    const a = addr('inval')
    await env.announcer('n1').announce({ address: a, node: 'n1', endpoint: 'http://n1:7701', ttlSec: 600 })
    await env.request('GET', `/resolve/${a}`).then(text)
    const before = JSON.parse(await text(await env.request('GET', `/resolve/${a}`))) as { source: string; providers: unknown[] }
    expect(before).toMatchObject({ source: 'cache', providers: [{ node: 'n1' }] })
    await env.announcer('n2').announce({ address: a, node: 'n2', endpoint: 'http://n2:7701', ttlSec: 600 })
    const after = JSON.parse(await text(await env.request('GET', `/resolve/${a}`))) as { source: string; providers: Array<{ node: string }> }
    expect(after.source).toBe('local')
    expect(after.providers.map((p) => p.node).sort()).toEqual(['n1', 'n2'])
  })

  it('a cache hit is answered while the work queue is full; a miss is refused with 429 Busy', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ resolverWorkers: 1, workQueue: 1, peers: { targets: ['peer-1'], alpha: 1, beta: 0 } }, { clock })
    const e = env
    const peer = new FakePeer(clock)
    e.transport.mount('peer-1', peer)
    const a = addr('busy')
    await e.announcer('n1').announce({ address: a, node: 'n1', endpoint: 'http://n1:7701', ttlSec: 600 })
    expect((await e.anon.resolve(a)).source).toBe('local')
    // Two misses the peer never answers: one holds the only resolver, one the only queue slot.
    peer.reply = () => ({ hang: true })
    const misses = [settle(e.anon.resolve(addr('m1'))), settle(e.anon.resolve(addr('m2')))]
    const queued = async (): Promise<boolean> => peer.calls.length === 1 && metricValue(await e.index.metricsText(), 'queue_depth', { queue: 'work' }) === 1
    await until(queued, 'one miss holds the resolver and one waits in the queue')

    const miss = await e.request('GET', `/resolve/${addr('other')}`)
    expect(miss.status).toBe(429)
    expect((JSON.parse(await text(miss)) as { error: { code: string } }).error.code).toBe('Busy')
    const hit = await e.request('GET', `/resolve/${a}`)
    expect(hit.status).toBe(200)
    expect((JSON.parse(await text(hit)) as { source: string }).source).toBe('cache')
    // A bad key is refused before the queue too.
    expect((await e.request('GET', '/resolve/b3:zz')).status).toBe(400)
    // The stalled resolves end by their budget, counted from their arrival: both settle, neither answers.
    await clock.advance(1_200)
    for (const m of await Promise.all(misses)) expect(m.ok ? undefined : (m.error as { code?: string }).code).toMatch(/^(Timeout|NotFound)$/)
  })

  it('counts hits and their latency in index_cache_hits_total and resolve_latency_seconds', async () => {
    env = await setup()
    const a = addr('count')
    const text0 = await env.index.metricsText()
    expect(metricValue(text0, 'index_cache_hits_total', { cache: 'positive' })).toBe(0)
    expect(metricValue(text0, 'resolve_latency_seconds_count', { source: 'cache' })).toBe(0)
    await env.announcer('n1').announce({ address: a, node: 'n1', endpoint: 'http://n1:7701', ttlSec: 600 })
    for (let i = 0; i < 3; i++) expect((await env.request('GET', `/resolve/${a}`)).status).toBe(200)
    expect((await env.request('GET', `/resolve/${addr('nothing')}`)).status).toBe(404)
    expect((await env.request('GET', `/resolve/${addr('nothing')}`)).status).toBe(404)
    const t = await env.index.metricsText()
    expect(metricValue(t, 'index_cache_hits_total', { cache: 'positive' })).toBe(2)
    expect(metricValue(t, 'index_cache_hits_total', { cache: 'negative' })).toBe(1)
    expect(metricValue(t, 'resolve_latency_seconds_count', { source: 'cache' })).toBe(2)
    expect(metricValue(t, 'resolve_latency_seconds_count', { source: 'local' })).toBe(1)
    expect(metricValue(t, 'resolve_latency_seconds_bucket', { source: 'cache', le: '+Inf' })).toBe(2)
    expect(metricValue(t, 'index_cache_misses_total')).toBe(2)
  })
})
