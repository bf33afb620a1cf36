/**
 * Every metric the README lists moves when its condition is driven (issue 21). The ones not
 * driven elsewhere are here: `index_dht_lookup_ms`, `index_names`, `index_cache_entries{cache}`,
 * `index_announcements_total`, `bus_lagged_total{topic}`, `tasks_spawned_total{kind}`,
 * `tasks_canceled_total{kind}`. (Elsewhere: fast-path, hedging, breakers, admission, names,
 * signed-names, announce, disk-full, readiness, admin, drain tests.)
 */
import { afterEach, describe, expect, it } from 'vitest'
import { metricValue } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { FakePeer, addr, addressAnswer, manifestFor, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

async function value(e: Env, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return metricValue(await e.index.metricsText(), name, labels)
}

describe('README metrics move', () => {
  it('index_dht_lookup_ms counts a hedged peer lookup', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] } }, { clock })
    const peer = new FakePeer(clock)
    peer.reply = (k) => ({ status: 200, json: addressAnswer(k as `b3:${string}`, ['node-a']) })
    env.transport.mount('peer-1', peer)
    expect(await value(env, 'index_dht_lookup_ms_count')).toBe(0)
    await env.anon.resolve(addr('lookup'))
    expect(await value(env, 'index_dht_lookup_ms_count')).toBe(1)
  })

  it('index_names follows name writes and deletes; index_announcements_total counts accepted announcements', async () => {
    env = await setup({})
    expect(await value(env, 'index_names')).toBe(0)
    const m = await env.put(manifestFor(1))
    await env.client.setName('count.me', m)
    expect(await value(env, 'index_names')).toBe(1)
    await env.client.deleteName('count.me')
    expect(await value(env, 'index_names')).toBe(0)
    expect(await value(env, 'index_announcements_total')).toBe(0)
    await env.announcer('n1').announce({ address: addr(1), node: 'n1', endpoint: 'storage', ttlSec: 60 })
    expect(await value(env, 'index_announcements_total')).toBe(1)
  })

  it('index_cache_entries{cache} is published by the cache janitor', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ purgeIntervalMs: 1_000 }, { clock })
    await env.announcer('n1').announce({ address: addr(1), node: 'n1', endpoint: 'storage', ttlSec: 60 })
    await env.anon.resolve(addr(1))
    await expect(env.anon.resolve(addr(2))).rejects.toMatchObject({ code: 'NotFound' })
    await clock.advance(1_000)
    expect(await value(env, 'index_cache_entries', { cache: 'positive' })).toBe(1)
    expect(await value(env, 'index_cache_entries', { cache: 'negative' })).toBe(1)
  })

  it('bus_lagged_total{topic="events"} counts events a slow subscriber missed', async () => {
    env = await setup({ eventsCapacity: 2 })
    const sub = env.index.subscribe()
    for (let i = 0; i < 5; i++) await env.announcer('n1').announce({ address: addr(i), node: 'n1', endpoint: 'storage', ttlSec: 60 })
    await sub.recv().catch(() => undefined)
    expect(await value(env, 'bus_lagged_total', { topic: 'events' })).toBeGreaterThanOrEqual(1)
    sub.close()
  })

  it('tasks_spawned_total counts the janitors at start; tasks_canceled_total the workers ended by close()', async () => {
    const e = await setup({ resolverWorkers: 2 })
    expect(await value(e, 'tasks_spawned_total', { kind: 'store-janitor' })).toBe(1)
    expect(await value(e, 'tasks_spawned_total', { kind: 'cache-janitor' })).toBe(1)
    await e.anon.resolve(addr('x')).catch(() => undefined)
    await e.close()
    const text = await e.index.metricsText()
    expect(metricValue(text, 'tasks_canceled_total', { kind: 'store-janitor' })).toBe(1)
  })
})
