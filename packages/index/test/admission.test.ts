import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport } from '@ron/core'
import type { TransportResponse } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { FakePeer, addr, setup, type Env } from './helpers.js'

let env: Env | undefined
const extra: MemoryTransport[] = []
afterEach(async () => {
  await env?.close()
  env = undefined
  for (const t of extra.splice(0)) await t.close()
})

/** A transport whose requests come from `ip`, reaching the env's index. */
function from(e: Env, ip: string, clock: VirtualClock): MemoryTransport {
  const t = new MemoryTransport({ remoteAddress: ip, clock })
  t.mount('index', e.index)
  extra.push(t)
  return t
}

async function hangingEnv(config: Parameters<typeof setup>[0]): Promise<{ env: Env; clock: VirtualClock }> {
  const clock = new VirtualClock(1_000_000)
  env = await setup({ peers: { targets: ['peer-1'] }, ...config }, { clock })
  const p = new FakePeer(clock)
  p.reply = () => ({ hang: true })
  env.transport.mount('peer-1', p)
  return { env, clock }
}

function resolveVia(t: MemoryTransport, key: string): Promise<TransportResponse> {
  return t.request('index', { method: 'GET', path: `/resolve/${key}` })
}

describe('admission', () => {
  it('per-IP cap: one IP over its cap gets 429 Busy, another IP is still served', async () => {
    const { env, clock } = await hangingEnv({ http: { maxConcurrentPerIp: 2 }, resolverWorkers: 8 })
    const a = from(env, '10.0.0.1', clock)
    const b = from(env, '10.0.0.2', clock)
    const held = [resolveVia(a, addr(1)), resolveVia(a, addr(2))]
    await clock.flush()
    const flood = await Promise.all(Array.from({ length: 6 }, (_, i) => resolveVia(a, addr(10 + i))))
    expect(flood.map((r) => r.status)).toEqual([429, 429, 429, 429, 429, 429])
    const body = await flood[0]!.json<{ error: { code: string; details: Record<string, unknown> } }>()
    expect(body.error.code).toBe('Busy')
    expect(body.error.details.reason).toBe('per_ip')
    expect(flood[0]!.headers['retry-after']).toBeDefined()
    // Each per-IP refusal is a rejection (SPEC §4 rejected_total{reason}), besides a Busy.
    const text = await env.index.metricsText()
    expect(text).toMatch(/rejected_total\{reason="per_ip"[^}]*\} 6/)
    expect(text).toMatch(/rejected_total\{reason="per_ip_rate"[^}]*\} 0/)
    for (const r of flood.slice(1)) await r.dump()
    // Fair: the other IP gets its share.
    const other = [resolveVia(b, addr(20)), resolveVia(b, addr(21))]
    await clock.advance(1200)
    const done = await Promise.all([...held, ...other])
    expect(done.map((r) => r.status)).toEqual([504, 504, 504, 504])
    for (const r of done) await r.dump()
  })

  it('optional per-IP token bucket: a burst beyond the bucket is refused until it refills', async () => {
    const clock = new VirtualClock(1_000_000)
    // 1 request/s per IP: a bucket of 2 (two seconds' worth), refilled at 1/s.
    env = await setup({ http: { maxRpsPerIp: 1 } }, { clock })
    const a = from(env, '10.0.0.3', clock)
    const b = from(env, '10.0.0.4', clock)
    const statuses = async (t: MemoryTransport, n: number): Promise<number[]> => {
      const out: number[] = []
      for (let i = 0; i < n; i++) {
        const r = await resolveVia(t, addr(i))
        out.push(r.status)
        await r.dump()
      }
      return out
    }
    expect(await statuses(a, 3)).toEqual([404, 404, 429])
    expect(await statuses(b, 2)).toEqual([404, 404])
    await clock.advance(1000)
    expect(await statuses(a, 1)).toEqual([404])
    expect(await env.index.metricsText()).toMatch(/rejected_total\{reason="per_ip_rate"[^}]*\} 1/)
  })

  it('work queue full → 429 Busy with Retry-After, counted in busy_rejections_total; health and metrics bypass the queue', async () => {
    const { env, clock } = await hangingEnv({ workQueue: 2, resolverWorkers: 1 })
    const held = [resolveVia(env.transport, addr(1)), resolveVia(env.transport, addr(2)), resolveVia(env.transport, addr(3))]
    await clock.flush()
    const rejected = await resolveVia(env.transport, addr(4))
    expect(rejected.status).toBe(429)
    expect(rejected.headers['retry-after']).toBeDefined()
    await rejected.dump()
    for (const path of ['/healthz', '/readyz', '/metrics', '/version']) {
      const r = await env.request('GET', path)
      expect(r.status, path).toBe(200)
      if (path === '/metrics') expect(await r.text()).toMatch(/busy_rejections_total\{[^}]*queue="work"[^}]*\} 1/)
      else await r.dump()
    }
    // The capability is checked before the job is queued: no token → 401, not 429.
    const unauth = await env.request('PUT', '/names/a.b', { 'content-type': 'application/json' }, JSON.stringify({ manifestAddress: addr(1) }))
    expect(unauth.status).toBe(401)
    await unauth.dump()
    await clock.advance(1200)
    await clock.advance(1200)
    await clock.advance(1200)
    for (const r of await Promise.all(held)) await r.dump()
  })
})
