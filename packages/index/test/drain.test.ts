/**
 * The index's drain (SPEC §3.3/3.3a, seed svc-index: "readyz false at t0, healthz 200 to the
 * end"): no read window — at the start of `close()` the index turns unready as a whole and every
 * new request, read or write, gets 503 `Draining` with `Retry-After`; in-flight work finishes
 * within `drainDeadlineMs` (a name write whose manifest check is still running completes), what
 * is still running at the deadline is aborted and counted in `tasks_aborted_total{kind}`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { DispatchTarget, RonRequest, RonResponse, TransportResponse } from '@ron/core'
import { VirtualClock, deferred } from '@ron/core/testing'
import { FakePeer, addr, manifestFor, settle, setup, type Env } from './helpers.js'

let env: Env | undefined
afterEach(async () => {
  await env?.close().catch(() => undefined)
  env = undefined
})

/** Storage whose reads wait for `gate` (the manifest check of a name write in flight). */
class GatedStorage implements DispatchTarget {
  readonly gate = deferred<void>()
  started = 0
  constructor(private readonly inner: DispatchTarget) {}
  async dispatch(req: RonRequest): Promise<RonResponse> {
    this.started++
    await this.gate.promise
    return this.inner.dispatch(req)
  }
}

async function code(res: TransportResponse): Promise<string> {
  return (await res.json<{ error: { code: string } }>()).error.code
}

describe('drain: no read window, in-flight work finished or aborted at the deadline', () => {
  it('unready as a whole at once; new reads and writes 503 Draining; an in-flight write finishes; a hung resolve is aborted at the deadline', async () => {
    const clock = new VirtualClock(1_000_000)
    env = await setup({ peers: { targets: ['peer-1'] }, drainDeadlineMs: 500 }, { clock })
    const peer = new FakePeer(clock)
    peer.reply = () => ({ hang: true })
    env.transport.mount('peer-1', peer)
    const m = await env.put(manifestFor(1))
    const storage = new GatedStorage(env.storage)
    env.transport.mount('storage', storage)

    const write = settle(env.client.setName('in.flight', m))
    const resolve = settle(env.request('GET', `/resolve/${addr('hung')}`))
    await clock.flush()
    expect(storage.started).toBe(1)
    expect(peer.calls).toEqual([addr('hung')])

    const closing = env.index.close()
    await clock.flush()
    const h = env.index.health()
    expect(h).toMatchObject({ live: true, ready: false, writeReady: false })
    expect(h.missing).toContain('draining')
    const readyz = await env.request('GET', '/readyz')
    expect(readyz.status).toBe(503)
    await readyz.dump()
    // No read window: a read is refused at once, like a write.
    const read = await env.request('GET', `/resolve/${addr('late')}`)
    expect(read.status).toBe(503)
    expect(read.headers['retry-after']).toBeDefined()
    expect(await code(read)).toBe('Draining')
    const late = await env.request('POST', '/providers', { authorization: `Bearer ${env.tokens.announce}`, 'content-type': 'application/json' }, JSON.stringify({ address: addr(2), node: 'n', endpoint: 'storage', ttlSec: 60 }))
    expect(late.status).toBe(503)
    expect(await code(late)).toBe('Draining')
    const healthz = await env.request('GET', '/healthz')
    expect(healthz.status).toBe(200)
    await healthz.dump()

    // The in-flight write finishes within the deadline.
    storage.gate.resolve()
    const w = await write
    expect(w.ok && w.value).toMatchObject({ name: 'in.flight', manifestAddress: m })
    // The hung resolve is aborted at the deadline, its peer request with it.
    await clock.advance(500)
    await closing
    const r = await resolve
    expect(r.ok && r.value.status).toBe(503)
    if (r.ok) await r.value.dump()
    expect(peer.aborted).toBe(1)
    expect(await env.index.metricsText()).toMatch(/tasks_aborted_total\{kind="work-worker"[^}]*\} [1-9]/)
    const after = await env.request('GET', `/resolve/${addr('after')}`)
    expect(after.status).toBe(503)
    expect(await code(after)).toBe('Closed')
  })
})
