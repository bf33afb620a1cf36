/**
 * Storage's drain (SPEC.md 3.3, seed svc-storage §6) and its readiness per path (SPEC.md 3.3a),
 * observed over virtual time: uploads are refused and write-unready first while reads are served
 * through the read window, then intake stops with 503 + Retry-After, in-flight work finishes, and
 * what is still running at the deadline is aborted and counted. Readiness comes from real
 * dependencies: the backend being open and the disk accepting writes.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { DrainingError, collectBytes, isRonError } from '@ron/core'
import { VirtualClock, deferred } from '@ron/core/testing'
import { createMemoryStore } from '../src/index.js'
import { BUFFERED_BODY_BYTES } from '../src/routes/objects.js'
import { bytes, cluster, metricValue, type Cluster } from './helpers.js'

let c: Cluster | undefined
afterEach(async () => {
  await c?.close()
  c = undefined
})

describe('drain order (shed uploads, keep reads through the window)', () => {
  it('refuses uploads and turns put unready at once, serves reads through the read window, then stops intake; an in-flight read finishes, a stalled upload is aborted at the deadline and counted', async () => {
    const clock = new VirtualClock(1_700_000_000_000)
    const backend = createMemoryStore() // given, so not closed with the service: its contents are checked at the end
    c = await cluster(['storage'], () => ({ clock, backend, drainReadWindowMs: 1000, drainDeadlineMs: 2000 }))
    const node = c.node()
    const auth = { authorization: `Bearer ${c.tokens.write}` }
    const big = bytes(BUFFERED_BODY_BYTES + 4096, 7)
    const { address } = await node.client.put(big)

    // In flight when the drain starts: a streamed read (body not yet consumed) and an upload whose body stalls.
    const reading = await c.request('storage', 'GET', `/o/${address}`)
    expect(reading.status).toBe(200)
    const stall = deferred()
    async function* stalled(): AsyncGenerator<Uint8Array> {
      yield bytes(1024, 9)
      await stall.promise
    }
    const uploading = c.transport.request('storage', { method: 'PUT', path: '/o', headers: auth, body: stalled(), timeoutMs: 600_000 })

    let closed = false
    const closing = node.svc.close().then(() => (closed = true))
    await clock.flush()

    // The read window: writes refused and unready, reads ready and served.
    expect(node.svc.health()).toMatchObject({ ready: true, writeReady: false, paths: { get: true, put: false } })
    const readyz = await c.request('storage', 'GET', '/readyz')
    expect(readyz.status).toBe(200)
    expect(await readyz.json()).toMatchObject({ ready: true, writeReady: false, paths: { get: true, put: false } })
    const refused = await node.client.put('refused').catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(DrainingError)
    expect((refused as DrainingError).retryAfterMs).toBe(1000)
    expect((await node.anon.getBytes(address)).byteLength).toBe(big.length)

    // The window ends: reads unready, intake stops with 503 Draining + Retry-After; /healthz stays 200.
    await clock.advance(1000)
    expect(node.svc.health()).toMatchObject({ ready: false, writeReady: false, paths: { get: false, put: false } })
    const late = await c.request('storage', 'GET', `/o/${address}`)
    expect(late.status).toBe(503)
    expect(late.headers['retry-after']).toBe('1')
    expect(await late.json()).toMatchObject({ error: { code: 'Draining' } })
    expect((await c.request('storage', 'GET', '/readyz')).status).toBe(503)
    expect((await c.request('storage', 'GET', '/healthz')).status).toBe(200)

    // The in-flight read finishes within the deadline, bytes intact.
    expect(Buffer.compare(Buffer.from(await collectBytes(reading.body)), Buffer.from(big))).toBe(0)
    expect(closed).toBe(false) // the stalled upload still holds the drain

    // The deadline: the stalled upload is aborted and counted; nothing of it is stored.
    await clock.advance(2000)
    const cut = await uploading
    expect(cut.status).toBe(503)
    await cut.dump()
    while (!closed) {
      await clock.advance(100)
      await new Promise((r) => setImmediate(r))
    }
    await closing
    expect(await metricValue(node.svc, 'tasks_aborted_total', { kind: 'request' })).toBe(1)
    let objects = 0
    for await (const _ of backend.list()) objects++
    expect(objects).toBe(1)
    stall.resolve()
    await backend.close()
  })

  it('with no read window the drain goes straight to intake stop (drainReadWindowMs: 0)', async () => {
    c = await cluster(['storage'], () => ({ drainReadWindowMs: 0 }))
    const closing = c.node().svc.close()
    expect(c.node().svc.health()).toMatchObject({ ready: false, writeReady: false })
    await closing
  })
})

describe('readiness from real dependencies', () => {
  it('a disk that refuses writes turns put unready and keeps get; reads keep working', async () => {
    c = await cluster(['storage'], () => ({ writeReadiness: { minFreeBytes: Number.MAX_SAFE_INTEGER, probeIntervalMs: 1000 }, backend: withFreeBytes(1000) }))
    const node = c.node()
    const h = node.svc.health()
    expect(h).toMatchObject({ ready: true, writeReady: false, paths: { get: true, put: false } })
    expect(h.missing).toContain('disk')
    expect(h.reason).toContain('disk: low_space')
    const e = await node.client.put('x').catch((err: unknown) => err)
    expect(isRonError(e, 'NotReady') && e.details['reason'] === 'low_space').toBe(true)
  })

  it('a backend closed by its owner turns the service unready for reads and writes (store dependency)', async () => {
    const backend = createMemoryStore()
    c = await cluster(['storage'], () => ({ backend }))
    const node = c.node()
    expect(node.svc.health()).toMatchObject({ ready: true, writeReady: true, paths: { get: true, put: true } })
    await backend.close()
    const h = node.svc.health()
    expect(h).toMatchObject({ ready: false, writeReady: false, paths: { get: false, put: false } })
    expect(h.missing).toEqual(['store'])
    expect(h.reason).toContain('store: closed')
    expect((await c.request('storage', 'GET', '/readyz')).status).toBe(503)
  })
})

/** A memory backend whose probe reports `free` free bytes. */
function withFreeBytes(free: number): ReturnType<typeof createMemoryStore> {
  const inner = createMemoryStore()
  return Object.assign(Object.create(inner) as typeof inner, {
    probe: () => Promise.resolve({ writable: true, freeBytes: free }),
  })
}
