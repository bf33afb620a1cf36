import { afterEach, describe, expect, it } from 'vitest'
import { BreakerOpenError, MemoryTransport, providerAnnouncementSchema } from '@ron/core'
import type { Transport } from '@ron/core'
import { createTestIssuer } from '@ron/core/testing'
import type { Address } from '@ron/core'
import { createStorageService, placement } from '../src/index.js'
import { BUFFERED_BODY_BYTES } from '../src/routes/objects.js'
import { addressOfBytes, bytes, cluster, metricValue, once, tempDir, type Cluster } from './helpers.js'
import { corruptStoredBytes, flipByte, objectPath } from '@ron/storage/testing'

const NODES = ['storage-a', 'storage-b', 'storage-c']

/** Finds a payload whose placement (rf 2 over NODES) is exactly `want`, in order. */
function payloadPlacedOn(want: [string, string], size = 5000): Uint8Array {
  for (let seed = 1; seed < 10_000; seed++) {
    const b = bytes(size, seed)
    const p = placement(addressOfBytes(b), NODES, 2)
    if (p[0] === want[0] && p[1] === want[1]) return b
  }
  throw new Error('no payload found')
}

describe('replication and repair across three nodes', () => {
  let c: Cluster | undefined
  const cleanups: (() => Promise<void>)[] = []
  afterEach(async () => {
    await c?.close()
    c = undefined
    for (const f of cleanups.splice(0)) await f()
  })

  it('acknowledges a put after writeQuorum copies are durable', async () => {
    c = await cluster(NODES, () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-b', 'storage-c'])
    const res = await c.node('storage-a').client.put(data)
    const address = res.address
    // a is not a placement node, so both b and c were targets; one of them is durable at the ack.
    const onB = await c.node('storage-b').svc.store.stat(address)
    const onC = await c.node('storage-c').svc.store.stat(address)
    expect([onB, onC].filter((x) => x !== undefined).length).toBeGreaterThanOrEqual(1)
    expect(await c.node('storage-a').svc.store.stat(address)).toEqual({ size: data.byteLength })
  })

  it('answers an unmet write quorum with 503 Unavailable and Retry-After (retry, not a bad request), keeping the local copy', async () => {
    c = await cluster(['storage-a', 'storage-b'], () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024 }))
    // b is gone: the synchronous replica write cannot reach it.
    await c.node('storage-b').svc.close()
    const data = bytes(3000, 4242)
    const res = await c.request('storage-a', 'PUT', '/o', { authorization: `Bearer ${c.tokens.write}` }, data)
    expect(res.status).toBe(503)
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(await res.json()).toMatchObject({ error: { code: 'Unavailable', retryable: true, details: { reason: 'write_quorum', copies: 1, required: 2 } } })
    expect(await c.node('storage-a').svc.store.stat(addressOfBytes(data))).toEqual({ size: 3000 })
  })

  it('detects a bit flip on disk, never serves the bad chunk, and repairs the copy from a peer', async () => {
    const dirs = await Promise.all(NODES.map(() => tempDir()))
    for (const d of dirs) cleanups.push(d.cleanup)
    c = await cluster(NODES, (name) => ({ rf: 2, writeQuorum: 2, chunkSize: 1024, dataDir: dirs[NODES.indexOf(name)]!.dir }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'])
    const a = c.node('storage-a')
    const { address } = await a.client.put(data)
    expect(await c.node('storage-b').svc.store.stat(address)).toEqual({ size: 5000 })

    await flipByte(objectPath(a.svc.store, address), 2 * 1024 + 17, 0x40) // chunk 2

    // A small body is verified whole before the answer starts: a clean 422, not one byte of it.
    const res = await c.request('storage-a', 'GET', `/o/${address}`)
    expect(res.status).toBe(422)
    expect(await res.json()).toMatchObject({ error: { code: 'IntegrityFailed' } })
    expect(await metricValue(a.svc, 'integrity_failures_total')).toBe(1)
    // The public status answer is cheap (no scrub): it reports what the failed read found out.
    expect((await a.anon.status(address)).local).toMatchObject({ present: true, ok: false, reason: 'suspect' })
    expect(await a.svc.store.verify(address)).toMatchObject({ ok: false, badChunks: [2] })

    const plan = await a.svc.runRepair()
    expect(plan.items).toEqual([
      expect.objectContaining({ address, action: 'replace-corrupt', from: ['storage-b'], to: 'storage-a', priority: 'urgent' }),
    ])
    await a.svc.repairIdle()
    expect(Buffer.from(await a.anon.getBytes(address)).equals(Buffer.from(data))).toBe(true)
    const st = await a.anon.status(address)
    expect(st.local).toMatchObject({ ok: true, badChunks: [] })
    expect(st.repair).toMatchObject({ state: 'done', action: 'replace-corrupt' })
    // The next tick has nothing left to do.
    expect((await a.svc.runRepair({ dryRun: true })).items).toEqual([])
  })

  it('a streamed body stops before a bit-flipped chunk: the client sees a truncated transfer of verified bytes', async () => {
    const dirs = await Promise.all(NODES.map(() => tempDir()))
    for (const d of dirs) cleanups.push(d.cleanup)
    c = await cluster(NODES, (name) => ({ rf: 2, writeQuorum: 2, chunkSize: 1024, dataDir: dirs[NODES.indexOf(name)]!.dir }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'], BUFFERED_BODY_BYTES + 5000)
    const a = c.node('storage-a')
    const { address } = await a.client.put(data)
    await flipByte(objectPath(a.svc.store, address), 200 * 1024 + 17, 0x40) // chunk 200
    for (const range of [undefined, `bytes=1000-${BUFFERED_BODY_BYTES + 2000}`]) {
      const res = await c.request('storage-a', 'GET', `/o/${address}`, range === undefined ? {} : { range })
      expect(res.status).toBe(range === undefined ? 200 : 206)
      const got: Uint8Array[] = []
      let failed: unknown
      try {
        for await (const chunk of res.body) got.push(chunk)
      } catch (e) {
        failed = e
      }
      expect(failed).toBeDefined()
      const received = Buffer.concat(got)
      const from = range === undefined ? 0 : 1000
      expect(received.byteLength).toBeLessThanOrEqual(200 * 1024 - from)
      expect(received.equals(Buffer.from(data.subarray(from, from + received.byteLength)))).toBe(true)
    }
    expect(await metricValue(a.svc, 'integrity_failures_total')).toBe(2)
  })

  it('a read that hits corrupt data wakes the planner at once; the next read succeeds from the repaired copy', async () => {
    c = await cluster(NODES, () => ({ rf: 2, writeQuorum: 2, chunkSize: 1024, repair: { auto: true, intervalMs: 3_600_000 } }))
    const data = payloadPlacedOn(['storage-a', 'storage-c'])
    const a = c.node('storage-a')
    const { address } = await a.client.put(data)
    expect(await corruptStoredBytes(a.svc.store, address, 100)).toBe(true)
    await expect(a.anon.getBytes(address)).rejects.toMatchObject({ code: 'IntegrityFailed' })
    await expect.poll(async () => (await a.anon.status(address)).repair?.state, { timeout: 20_000, interval: 5 }).toBe('done')
    expect(Buffer.from(await a.anon.getBytes(address)).equals(Buffer.from(data))).toBe(true)
  })

  it('restores a missing replica with an urgent push and explains it in the plan', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-c'])
    const a = c.node('storage-a')
    // Written straight into a's backend: as if c had lost its copy.
    const { address } = await a.svc.store.put(once(data))
    const dry = await a.admin.repairPlan({ dryRun: true })
    expect(dry.items).toEqual([
      { address, action: 'push', from: ['storage-a'], to: 'storage-c', priority: 'urgent', reason: expect.stringContaining('last copy') as string },
    ])
    expect(dry.enqueued).toBe(0)
    expect(await c.node('storage-c').svc.store.stat(address)).toBeUndefined()
    const plan = await a.admin.runRepair()
    expect(plan.enqueued).toBe(1)
    await a.svc.repairIdle()
    expect(await c.node('storage-c').svc.store.stat(address)).toEqual({ size: data.byteLength })
    expect((await a.admin.repairPlan()).computedAt).not.toBeNull()
    expect((await a.svc.runRepair({ dryRun: true })).items).toEqual([])
  })

  it('moves a copy to the next node in the ranking when a placement node is gone', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = payloadPlacedOn(['storage-a', 'storage-b'])
    const a = c.node('storage-a')
    const { address } = await a.svc.store.put(once(data))
    c.transport.setReachable('storage-b', false)
    const plan = await a.svc.runRepair()
    expect(plan.unreachable).toEqual(['storage-b'])
    expect(plan.items).toEqual([expect.objectContaining({ address, action: 'push', to: 'storage-c' })])
    await a.svc.repairIdle()
    expect(await c.node('storage-c').svc.store.stat(address)).toEqual({ size: 5000 })
  })

  it('fetches a pinned object that went missing locally', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024 }))
    const data = bytes(3000, 77)
    const a = c.node('storage-a')
    const address: Address = addressOfBytes(data)
    await c.node('storage-b').svc.store.put(once(data))
    await a.svc.store.put(once(data))
    await a.client.pin(address)
    await a.svc.store.delete(address) // the disk lost it
    const plan = await a.svc.runRepair()
    expect(plan.items).toContainEqual(expect.objectContaining({ address, action: 'fetch', from: ['storage-b'], priority: 'urgent' }))
    await a.svc.repairIdle()
    expect(await a.svc.store.stat(address)).toEqual({ size: 3000 })
  })

  it('sheds non-urgent repairs when the repair queue is full and counts repair_skipped_total{reason="full"}', async () => {
    c = await cluster(NODES, () => ({ rf: 3, chunkSize: 1024, repair: { auto: false, queue: 1, workers: 1 } }))
    const a = c.node('storage-a')
    const b = c.node('storage-b')
    for (let i = 0; i < 5; i++) {
      const d = bytes(2000, 1000 + i)
      await a.svc.store.put(once(d))
      await b.svc.store.put(once(d))
    }
    const plan = await a.svc.runRepair()
    expect(plan.items).toHaveLength(5)
    expect(plan.items.every((i) => i.priority === 'rebalance' && i.to === 'storage-c')).toBe(true)
    expect(plan.skipped).toBeGreaterThan(0)
    expect(plan.enqueued + plan.skipped).toBe(5)
    expect(await metricValue(a.svc, 'repair_skipped_total', { reason: 'full' })).toBe(plan.skipped)
    await a.svc.repairIdle()
    // The next tick picks up what was shed.
    await a.svc.runRepair()
    await a.svc.repairIdle()
    await a.svc.runRepair()
    await a.svc.repairIdle()
    await a.svc.runRepair()
    await a.svc.repairIdle()
    expect((await a.svc.runRepair({ dryRun: true })).items).toEqual([])
  })

  it('defers urgent repairs instead of shedding them when the queue is full', async () => {
    c = await cluster(NODES, () => ({ rf: 2, chunkSize: 1024, repair: { auto: false, queue: 1, workers: 1 } }))
    const a = c.node('storage-a')
    for (let i = 0; i < 4; i++) await a.svc.store.put(once(bytes(1500, 2000 + i)))
    const plan = await a.svc.runRepair()
    expect(plan.items.every((i) => i.priority === 'urgent')).toBe(true)
    expect(plan.skipped).toBe(0)
    expect(plan.deferred).toBeGreaterThan(0)
    expect(await metricValue(a.svc, 'repair_skipped_total')).toBe(0)
    await a.svc.repairIdle()
  })
})

describe('a node that comes back', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('is probed again on the next run, which copies everything it missed', async () => {
    c = await cluster(NODES, () => ({ rf: 2, writeQuorum: 1, chunkSize: 1024 }))
    const a = c.node('storage-a')
    c.transport.setReachable('storage-b', false)
    const missed: Address[] = []
    for (let seed = 1; missed.length < 3; seed++) {
      const data = bytes(3000, 700 + seed)
      if (!placement(addressOfBytes(data), NODES, 2).includes('storage-b')) continue
      missed.push((await a.client.put(data)).address)
    }
    const whileDown = await a.svc.runRepair()
    expect(whileDown.unreachable).toContain('storage-b')
    await a.svc.repairIdle()
    c.transport.setReachable('storage-b', true)
    // The first run after it is back: no second run needed.
    const back = await a.svc.runRepair()
    expect(back.unreachable).not.toContain('storage-b')
    await a.svc.repairIdle()
    for (const address of missed) expect(await c.node('storage-b').svc.store.stat(address)).toMatchObject({ size: 3000 })
  })
})

describe('a node that comes back behind an open breaker', () => {
  it("waits the transport breaker's cooldown out once and repairs on that same run", async () => {
    const transport = new MemoryTransport()
    const issuer = createTestIssuer()
    const token = issuer.mint({ scope: 'storage:replicate', aud: 'storage' })
    let breakerOpen = true
    // What HttpTransport does after a peer was gone: BreakerOpen until the cooldown passed.
    const viaBreaker: Transport = {
      request(target, req) {
        if (target === 'storage-b' && breakerOpen) {
          breakerOpen = false // the next call is the half-open probe
          return Promise.reject(new BreakerOpenError('breaker open', { retryAfterMs: 50 }))
        }
        return transport.request(target, req)
      },
      close: () => Promise.resolve(),
    }
    const opts = { rf: 2, chunkSize: 1024, auth: { keys: issuer.keys }, tokens: { token: () => token }, repair: { auto: false }, drainReadWindowMs: 0 }
    const a = await createStorageService({ ...opts, advertise: 'storage-a', peers: ['storage-b', 'storage-c'] }, viaBreaker)
    const b = await createStorageService({ ...opts, advertise: 'storage-b', peers: ['storage-a', 'storage-c'] }, transport)
    const cc = await createStorageService({ ...opts, advertise: 'storage-c', peers: ['storage-a', 'storage-b'] }, transport)
    for (const [n, s] of [['storage-a', a], ['storage-b', b], ['storage-c', cc]] as const) transport.mount(n, s)
    try {
      const data = payloadPlacedOn(['storage-a', 'storage-b'])
      const { address } = await a.store.put(once(data))
      const plan = await a.runRepair()
      expect(plan.unreachable).toEqual([])
      await a.repairIdle()
      expect(await b.store.stat(address)).toEqual({ size: data.byteLength })
    } finally {
      for (const s of [a, b, cc]) await s.close()
      await transport.close()
    }
  })
})

describe('announcements', () => {
  it('a failing index never fails a put; failures are counted', async () => {
    const c = await cluster(['storage'], () => ({ announce: { target: 'index' } }))
    try {
      let calls = 0
      c.transport.mount('index', {
        dispatch: () => {
          calls++
          return Promise.reject(new Error('index exploded'))
        },
      })
      const res = await c.node().client.put('announce me')
      expect(res.created).toBe(true)
      await expect.poll(() => metricValue(c.node().svc, 'announce_failures_total'), { timeout: 20_000, interval: 5 }).toBeGreaterThanOrEqual(1)
      expect(calls).toBeGreaterThanOrEqual(1)
    } finally {
      await c.close()
    }
  })

  it('posts the shared provider announcement {address, node, endpoint, ttlSec} to /providers with an index:announce token', async () => {
    const tokens: { aud: string; scope: string[] }[] = []
    const c = await cluster(['storage'], () => ({
      nodeId: 'n0000000000000001',
      advertise: 'http://10.0.0.5:7701',
      announce: { target: 'index', ttlSec: 600 },
      tokens: {
        token: (req) => {
          tokens.push(req)
          return 'announce-token'
        },
      },
    }))
    try {
      const seen: unknown[] = []
      c.transport.mount('index', {
        async dispatch(req) {
          const chunks: Uint8Array[] = []
          for await (const ch of req.body) chunks.push(ch)
          seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString()) as unknown })
          return { status: 204, headers: {}, body: (async function* () {})() }
        },
      })
      const { address } = await c.node().client.put('provided')
      await expect.poll(() => seen.length, { timeout: 20_000, interval: 5 }).toBe(1)
      expect(seen[0]).toEqual({
        method: 'POST',
        url: '/providers',
        auth: 'Bearer announce-token',
        body: { address, node: 'n0000000000000001', endpoint: 'http://10.0.0.5:7701', ttlSec: 600 },
      })
      expect(providerAnnouncementSchema.parse((seen[0] as { body: unknown }).body)).toBeDefined()
      expect(tokens).toEqual([{ aud: 'index', scope: ['index:announce'] }])
    } finally {
      await c.close()
    }
  })
})

