 
import { afterEach, describe, expect, it, vi } from 'vitest'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { MemoryTransport, addressOf } from '@ron/core'
import type { Address } from '@ron/core'
import { VirtualClock, createTestIssuer } from '@ron/core/testing'
import { createMemoryStore, createStorageService } from '../src/index.js'
import type { BlobStore, PutOptions, PutResult } from '../src/index.js'
import { addressOfBytes, bytes, cluster, deferred, metricValue, once, tempDir, type Cluster } from './helpers.js'

/** A memory store whose put/delete/probe can be held at gates. */
function gatedStore(): BlobStore & {
  putGate: Promise<void> | undefined
  deleteGate: Promise<void> | undefined
  putReachedGate: (() => void) | undefined
  deleteReachedGate: (() => void) | undefined
  writable: boolean
} {
  const inner = createMemoryStore({ chunkSize: 1024 })
  const s = {
    kind: 'gated',
    chunkSize: 1024,
    writable: true,
    putGate: undefined as Promise<void> | undefined,
    deleteGate: undefined as Promise<void> | undefined,
    putReachedGate: undefined as (() => void) | undefined,
    deleteReachedGate: undefined as (() => void) | undefined,
    async put(source: AsyncIterable<Uint8Array>, opts?: PutOptions): Promise<PutResult> {
      const chunks: Uint8Array[] = []
      for await (const c of source) chunks.push(c)
      // Like a real store: beforeCommit (the route's keep registration) runs once the body is
      // hashed, before the commit, which is what the gate holds.
      const data = Buffer.concat(chunks)
      await opts?.beforeCommit?.(addressOf(data), data.byteLength)
      if (s.putGate) {
        s.putReachedGate?.()
        await s.putGate
      }
      const { beforeCommit: _done, ...rest } = opts ?? {}
      return inner.put(once(data), rest)
    },
    open: (a: Address) => inner.open(a),
    stat: (a: Address) => inner.stat(a),
    async delete(a: Address) {
      if (s.deleteGate) {
        s.deleteReachedGate?.()
        await s.deleteGate
      }
      return inner.delete(a)
    },
    list: (signal?: AbortSignal) => inner.list(signal),
    verify: (a: Address, signal?: AbortSignal) => inner.verify(a, signal),
    probe: async () => (s.writable ? { writable: true } : { writable: false, reason: 'disk_full' }),
    close: () => inner.close(),
  }
  return s
}

describe('pins, deletes and puts racing on one address', () => {
  let c: Cluster | undefined
  afterEach(async () => {
    await c?.close()
    c = undefined
  })

  it('a delete refuses (409) while a put of the same object is about to keep it, and the put keeps it', async () => {
    const store = gatedStore()
    c = await cluster(['storage'], () => ({ backend: store }))
    const data = bytes(3000, 5)
    const address = addressOfBytes(data)
    await c.node().client.put(data)
    const reached = deferred()
    const gate = deferred()
    store.putGate = gate.promise
    store.putReachedGate = reached.resolve
    const put = c.node().client.put(data)
    await reached.promise // hashed, keep registered, store commit pending
    await expect(c.node().admin.delete(address)).rejects.toMatchObject({ code: 'Conflict', details: { reason: 'put_in_progress' } })
    store.putGate = undefined
    gate.resolve()
    expect(await put).toMatchObject({ address, created: false })
    expect(await c.node().anon.head(address)).toEqual({ size: 3000 })
  })

  it('a put that finishes while a delete of the same object runs waits for it and writes a fresh copy', async () => {
    const store = gatedStore()
    c = await cluster(['storage'], () => ({ backend: store }))
    const data = bytes(3000, 6)
    const address = addressOfBytes(data)
    await c.node().client.put(data)
    const reached = deferred()
    const gate = deferred()
    store.deleteGate = gate.promise
    store.deleteReachedGate = reached.resolve
    const del = c.node().admin.delete(address)
    await reached.promise
    let putDone = false
    const put = c.node().client.put(data).finally(() => (putDone = true))
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r))
    expect(putDone).toBe(false) // held in beginKeep() until the delete finishes
    store.deleteGate = undefined
    gate.resolve()
    expect(await del).toBe(true)
    expect(await put).toMatchObject({ address, created: true })
    expect(await c.node().anon.head(address)).toEqual({ size: 3000 })
  })

  it('a pin and a delete are ordered: pin during a delete waits and then finds nothing (404)', async () => {
    const store = gatedStore()
    c = await cluster(['storage'], () => ({ backend: store }))
    const { address } = await c.node().client.put(bytes(1000, 8))
    const reached = deferred()
    const gate = deferred()
    store.deleteGate = gate.promise
    store.deleteReachedGate = reached.resolve
    const del = c.node().admin.delete(address)
    await reached.promise
    const pin = c.node().client.pin(address)
    store.deleteGate = undefined
    gate.resolve()
    expect(await del).toBe(true)
    await expect(pin).rejects.toMatchObject({ code: 'NotFound' })
  })
})

describe('backpressure, readiness and shutdown', () => {
  it('answers 429 Busy with Retry-After only when the work queue is full, counting busy_rejections_total{endpoint,queue}', async () => {
    const c = await cluster(['storage'], () => ({ workQueue: 1, getConcurrency: 1, writers: 1, chunkSize: 1024 }))
    try {
      const { address } = await c.node().client.put(bytes(512 * 1024, 3))
      // One reader slot holds a GET whose body is not consumed; the next GET waits in the queue.
      const held = await c.request('storage', 'GET', `/o/${address}`)
      const queued = c.request('storage', 'GET', `/o/${address}`)
      await vi.waitFor(async () => expect(await metricValue(c.node().svc, 'queue_depth', { queue: 'work' })).toBe(1), { timeout: 20_000 })
      const busy = await c.request('storage', 'GET', `/o/${address}`)
      expect(busy.status).toBe(429)
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect((await busy.json<{ error: { code: string; retryable: boolean; details: unknown } }>()).error).toMatchObject({
        code: 'Busy',
        retryable: true,
        details: { queue: 'work', endpoint: 'GET /o/:addr' },
      })
      expect(await metricValue(c.node().svc, 'busy_rejections_total', { endpoint: 'GET /o/:addr', queue: 'work' })).toBe(1)
      expect((await held.bytes()).byteLength).toBe(512 * 1024)
      expect((await (await queued).bytes()).byteLength).toBe(512 * 1024)
    } finally {
      await c.close()
    }
  })

  it('a PUT that finds every writer busy waits in the work queue and then succeeds', async () => {
    const store = gatedStore()
    const c = await cluster(['storage'], () => ({ backend: store, writers: 1 }))
    try {
      const reached = deferred()
      const gate = deferred()
      store.putGate = gate.promise
      store.putReachedGate = reached.resolve
      const first = c.node().client.put('first')
      await reached.promise
      const second = c.node().client.put('second')
      await vi.waitFor(async () => expect(await metricValue(c.node().svc, 'queue_depth', { queue: 'work' })).toBe(1), { timeout: 20_000 })
      expect(await c.node().anon.head(addressOfBytes(new TextEncoder().encode('first')))).toBeUndefined() // not committed yet
      store.putGate = undefined
      gate.resolve()
      await expect(first).resolves.toMatchObject({ created: true })
      await expect(second).resolves.toMatchObject({ created: true })
      expect(await metricValue(c.node().svc, 'busy_rejections_total')).toBe(0)
    } finally {
      await c.close()
    }
  })

  it('turns write-unready (reads stay ready) when the disk is not writable and recovers by itself', async () => {
    const clock = new VirtualClock()
    const store = gatedStore()
    const c = await cluster(['storage'], () => ({ backend: store, clock, writeReadiness: { probeIntervalMs: 1000 } }))
    try {
      const { address } = await c.node().client.put('before')
      store.writable = false
      await clock.advance(1000)
      expect(c.node().svc.health()).toMatchObject({ ready: true, writeReady: false, missing: ['disk'] })
      await expect(c.node().client.put('during')).rejects.toMatchObject({ code: 'NotReady' })
      expect(new TextDecoder().decode(await c.node().anon.getBytes(address))).toBe('before')
      store.writable = true
      await clock.advance(1000)
      expect(c.node().svc.health()).toMatchObject({ ready: true, writeReady: true })
      await expect(c.node().client.put('after')).resolves.toMatchObject({ created: true })
    } finally {
      await c.close()
    }
  })

  it('close() while a GET streams: aborts the stream at the drain deadline and releases the file handle', async () => {
    const { dir, cleanup } = await tempDir()
    // Virtual time: the drain deadline passes when the test says so, not when a loaded machine gets to it.
    const clock = new VirtualClock(Date.now())
    const c = await cluster(['storage'], () => ({ dataDir: dir, chunkSize: 1024, drainDeadlineMs: 50, clock }))
    try {
      const handlesBefore = process.getActiveResourcesInfo().filter((r) => r === 'FileHandle').length
      const { address } = await c.node().client.put(bytes(1024 * 1024, 11))
      const res = await c.request('storage', 'GET', `/o/${address}`)
      const it = res.body[Symbol.asyncIterator]()
      const first = await it.next()
      expect(first.done).toBe(false)
      let closed = false
      const closing = c.node().svc.close().then(() => (closed = true))
      // The unread stream does not hold close() up: before the deadline it waits, at it it ends.
      await clock.advance(49)
      expect(closed).toBe(false)
      // (Virtual time keeps moving until close() resolves: the drain may start a few I/O turns late.)
      while (!closed) {
        await clock.advance(1)
        await new Promise((resolve) => setImmediate(resolve))
      }
      await closing
      let ended = false
      try {
        for (let r = await it.next(); !r.done; r = await it.next()) {
          /* drain what was already produced */
        }
        ended = true
      } catch {
        ended = true
      }
      expect(ended).toBe(true)
      expect(c.node().svc.health().ready).toBe(false)
      const after = await c.request('storage', 'GET', `/o/${address}`)
      expect(after.status).toBe(503)
      await after.dump()
      expect(process.getActiveResourcesInfo().filter((r) => r === 'FileHandle').length).toBeLessThanOrEqual(handlesBefore)
    } finally {
      await c.close()
      await cleanup()
    }
  })

  it('an oversize upload to the fs backend answers 413 and leaves no partial file', async () => {
    const { dir, cleanup } = await tempDir()
    const c = await cluster(['storage'], () => ({ dataDir: dir, chunkSize: 1024, maxObjectBytes: 100_000 }))
    try {
      async function* big(): AsyncGenerator<Uint8Array> {
        for (let i = 0; i < 200; i++) yield bytes(1024, i + 1)
      }
      await expect(c.node().client.put(big())).rejects.toMatchObject({ code: 'OverLimit' })
      expect(await readdir(join(dir, 'tmp'))).toEqual([])
      const objects = await readdir(join(dir, 'objects'), { recursive: true, withFileTypes: true })
      expect(objects.filter((e) => e.isFile())).toEqual([])
    } finally {
      await c.close()
      await cleanup()
    }
  })
})

describe('repair pacing on a virtual clock', () => {
  it('moves at most bytesPerSec + burst bytes in any virtual second', async () => {
    const clock = new VirtualClock()
    const transport = new MemoryTransport()
    const issuer = createTestIssuer()
    const token = issuer.mint({ scope: 'storage:replicate storage:read', aud: 'storage' })
    const received: { at: number; n: number }[] = []
    const inner = createMemoryStore({ chunkSize: 1024 })
    const counting: BlobStore = {
      ...inner,
      kind: 'counting',
      chunkSize: 1024,
      put(source, opts) {
        async function* count(): AsyncGenerator<Uint8Array> {
          for await (const c of source) {
            received.push({ at: clock.now(), n: c.byteLength })
            yield c
          }
        }
        return inner.put(count(), opts)
      },
      open: (a) => inner.open(a),
      stat: (a) => inner.stat(a),
      delete: (a) => inner.delete(a),
      list: (s) => inner.list(s),
      verify: (a, s) => inner.verify(a, s),
      probe: () => inner.probe(),
      close: () => inner.close(),
    }
    const rate = 10_000
    const burst = 2048
    const a = await createStorageService(
      { advertise: 'a', peers: ['b'], tokens: { token: () => token }, auth: { keys: issuer.keys }, clock, drainReadWindowMs: 0, chunkSize: 1024, repair: { auto: false, bytesPerSec: rate, burst, workers: 2 } },
      transport,
    )
    const b = await createStorageService({ advertise: 'b', peers: ['a'], tokens: { token: () => token }, auth: { keys: issuer.keys }, backend: counting }, transport)
    transport.mount('a', a)
    transport.mount('b', b)
    try {
      let total = 0
      for (let i = 0; i < 3; i++) {
        const d = bytes(10_000, 300 + i)
        total += d.byteLength
        await a.store.put(once(d))
      }
      const plan = await a.runRepair()
      expect(plan.enqueued).toBe(3)
      let idle = false
      void a.repairIdle().then(() => (idle = true))
      for (let step = 0; step < 400 && !idle; step++) {
        await clock.advance(25)
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
      }
      expect(idle).toBe(true)
      const moved = received.reduce((s, r) => s + r.n, 0)
      expect(moved).toBe(total)
      // Every window of one virtual second carries at most rate + burst bytes.
      for (const start of received.map((r) => r.at)) {
        const inWindow = received.filter((r) => r.at >= start && r.at < start + 1000).reduce((s, r) => s + r.n, 0)
        expect(inWindow).toBeLessThanOrEqual(rate + burst)
      }
      // And it really was paced: 30 kB at 10 kB/s after a 2 kB burst takes about 2.8 virtual seconds.
      expect(clock.now()).toBeGreaterThanOrEqual(Math.floor(((total - burst) / rate) * 1000) - 50)
      expect(await metricValue(a, 'repair_wait_seconds')).toBeGreaterThan(0)
    } finally {
      await a.close()
      await b.close()
    }
  })
})
