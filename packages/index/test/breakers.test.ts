import { afterEach, describe, expect, it } from 'vitest'
import { VirtualClock, until } from '@ron/core/testing'
import { FakePeer, addr, addressAnswer, settle, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close()
  env = undefined
})

async function metricLine(e: Env, name: string, label: string): Promise<number | undefined> {
  const text = await e.index.metricsText()
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

describe('per-peer circuit breakers', () => {
  it('open after the failure ratio trips, skip the peer while open, half-open after the cooldown and close after 3 good probes', async () => {
    const clock = new VirtualClock(5_000_000)
    env = await setup({ peers: { targets: ['peer-1', 'peer-2'], alpha: 1, beta: 1 }, breaker: { minCalls: 4, tripRatio: 0.5, cooldownMs: 10_000, halfOpenProbes: 3 } }, { clock })
    const bad = new FakePeer(clock)
    const good = new FakePeer(clock)
    env.transport.mount('peer-1', bad)
    env.transport.mount('peer-2', good)
    bad.reply = () => ({ status: 500 })
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(0)
    for (let i = 0; i < 4; i++) await expect(env.anon.resolve(addr(`k${i}`))).rejects.toMatchObject({ code: 'NotFound' })
    expect(bad.calls.length).toBe(4)
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(1)
    expect(await metricLine(env, 'breaker_open_total', 'target="peer-1"')).toBe(1)

    // Open: peer-1 is not asked at all; peer-2 is asked first.
    good.reply = (k) => ({ status: 200, json: addressAnswer(k as `b3:${string}`, ['node-g']) })
    await expect(env.anon.resolve(addr('open'))).resolves.toMatchObject({ source: 'peer' })
    expect(bad.calls.length).toBe(4)

    // After the cooldown: half-open (the janitor publishes the gauge), probes go through.
    await clock.advance(10_000)
    await clock.advance(1_000)
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(2)
    good.reply = () => ({ status: 404 })
    bad.reply = (k) => ({ status: 200, json: addressAnswer(k as `b3:${string}`, ['node-b']) })
    for (let i = 0; i < 3; i++) await expect(env.anon.resolve(addr(`probe${i}`))).resolves.toMatchObject({ source: 'peer' })
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(0)
  })

  it('a failed half-open probe reopens the breaker', async () => {
    const clock = new VirtualClock(5_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, breaker: { minCalls: 2, cooldownMs: 1_000 } }, { clock })
    const p = new FakePeer(clock)
    env.transport.mount('peer-1', p)
    p.reply = () => ({ status: 500 })
    for (let i = 0; i < 2; i++) await expect(env.anon.resolve(addr(`a${i}`))).rejects.toMatchObject({ code: 'Unavailable' })
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(1)
    await clock.advance(1_000)
    await expect(env.anon.resolve(addr('probe'))).rejects.toMatchObject({ code: 'Unavailable' })
    expect(p.calls.length).toBe(3)
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(1)
    expect(await metricLine(env, 'breaker_open_total', 'target="peer-1"')).toBe(2)
  })

  it('retries transient errors with 50–100 ms jitter (max 3 tries), never once the breaker is open', async () => {
    const clock = new VirtualClock(5_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, breaker: { minCalls: 100 } }, { clock })
    const p = new FakePeer(clock)
    env.transport.mount('peer-1', p)
    let n = 0
    p.reply = (k) => (++n < 3 ? { status: 503 } : { status: 200, json: addressAnswer(k as `b3:${string}`, ['node-r']) })
    const pending = settle(env.anon.resolve(addr('retry')))
    // The first answer (503) schedules the retry on the virtual clock; the path there may take
    // event-loop turns, so move time only once that timer is pending.
    await until(() => p.answered === 1 && clock.nextAt !== undefined && clock.nextAt - clock.now() <= 100, 'the retry timer is pending')
    // The first backoff is drawn in [50, 100) ms: 100 covers all of it (99 missed a draw above 99,
    // one run in fifty), and the second, at least 100 ms after the first, is not due yet.
    await clock.advance(100)
    await until(() => p.calls.length >= 2, 'the retry was sent')
    expect(p.calls.length).toBe(2)
    await clock.advance(200)
    const out = await pending
    expect(out.ok).toBe(true)
    expect(p.calls.length).toBe(3)
    expect(await metricLine(env, 'backoff_retries_total', 'op="peer"')).toBe(2)

    // With the breaker open nothing is retried (nor even sent).
    await env.close()
    env = await setup({ peers: { targets: ['peer-1'] }, breaker: { minCalls: 1 } }, { clock })
    const q = new FakePeer(clock)
    env.transport.mount('peer-1', q)
    q.reply = () => ({ status: 503 })
    const first = settle(env.anon.resolve(addr('x1')))
    await clock.advance(1_000)
    expect((await first).ok).toBe(false)
    expect(q.calls.length).toBe(1)
    expect(await metricLine(env, 'backoff_retries_total', 'op="peer"')).toBe(0)
  })
})

describe('breaker settings on reload', () => {
  it('a reloaded breaker setting applies to the peers already in the table, not only to new ones', async () => {
    const clock = new VirtualClock(5_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, breaker: { minCalls: 100 } }, { clock })
    const p = new FakePeer(clock)
    env.transport.mount('peer-1', p)
    p.reply = () => ({ status: 500 })
    for (let i = 0; i < 3; i++) await expect(env.anon.resolve(addr(`r${i}`))).rejects.toMatchObject({ code: 'Unavailable' })
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(0)
    await env.index.reload({ breaker: { minCalls: 2 } })
    await clock.advance(1_000) // the breaker janitor applies the new settings
    for (let i = 0; i < 2; i++) await expect(env.anon.resolve(addr(`s${i}`))).rejects.toMatchObject({ code: 'Unavailable' })
    expect(await metricLine(env, 'breaker_state', 'target="peer-1"')).toBe(1)
    const calls = p.calls.length
    await expect(env.anon.resolve(addr('skipped'))).rejects.toMatchObject({ code: 'BreakerOpen' })
    expect(p.calls.length).toBe(calls)
  })
})
