/**
 * Upload admission over real sockets (issue 8, problem 3): uploads wait in the bounded `work`
 * queue for a writer, slow clients are cut by the rate rule without starving others, and Busy
 * comes only from a full queue.
 */
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { Agent, request } from 'undici'
import { serve, type RonServer } from '@ron/core'
import { VirtualClock, createTestIssuer, type TestIssuer } from '@ron/core/testing'
import { createMemoryStore, createStorageService } from '../src/index.js'
import type { BlobStore, PutOptions, StorageService, StorageServiceOptions } from '../src/index.js'
import { bytes, deferred, metricValue } from './helpers.js'

interface Running {
  svc: StorageService
  srv: RonServer
  issuer: TestIssuer
  token(sub: string): string
}

const running: Running[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  for (const r of running.splice(0)) {
    await r.srv.close()
    await r.svc.close()
  }
})

async function start(options: StorageServiceOptions): Promise<Running> {
  const issuer = createTestIssuer()
  const svc = await createStorageService({ auth: { keys: issuer.keys }, repair: { auto: false }, drainReadWindowMs: 0, ...options })
  const srv = await serve(svc, { port: 0 })
  const r: Running = { svc, srv, issuer, token: (sub) => issuer.mint({ scope: 'storage:write', aud: 'storage', sub }) }
  running.push(r)
  return r
}

/** A raw socket, optionally from a given loopback source address. */
function rawSocket(srv: RonServer, localAddress?: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port: srv.port, host: '127.0.0.1', ...(localAddress === undefined ? {} : { localAddress }) }, () => resolve(s))
    s.once('error', reject)
    sockets.push(s)
  })
}

/** Resolves with everything the server sent once it closed the socket (or ended the response). */
function reply(s: Socket): Promise<string> {
  let data = ''
  s.on('data', (d: Buffer) => (data += d.toString()))
  s.on('error', () => undefined)
  return new Promise((resolve) => {
    if (s.destroyed) resolve(data)
    s.once('close', () => resolve(data))
  })
}

/** A memory store that tracks how many puts run at once. */
function countingStore(): BlobStore & { max: number } {
  const inner = createMemoryStore({ chunkSize: 64 * 1024 })
  let now = 0
  const s = Object.assign(Object.create(inner) as BlobStore, {
    max: 0,
    async put(source: AsyncIterable<Uint8Array>, opts?: PutOptions) {
      now++
      s.max = Math.max(s.max, now)
      try {
        return await inner.put(source, opts)
      } finally {
        now--
      }
    },
  })
  return s
}

describe('upload admission over real sockets', () => {
  it('20 trickling uploads by one principal do not stop another principal, and the rate rule cuts them (408)', async () => {
    // 8 writers, 4 per principal; the rate rule needs 4 KiB/s over 200 ms windows; the gap timeout is long.
    // Virtual time: the rate rule fires only when the test moves the clock, so the queue's
    // "4 writing, 16 waiting" state holds however slowly a loaded machine sets up the 20 sockets.
    const clock = new VirtualClock(Date.now())
    const r = await start({ clock, writers: 8, http: { minBytesPerSec: 4096, rateWindowMs: 200, readTimeoutMs: 30_000 } })
    const alice = r.token('alice')
    const trickles: { socket: Socket; answered: boolean; done: Promise<string> }[] = []
    for (let i = 0; i < 20; i++) {
      const socket = await rawSocket(r.srv)
      const t = { socket, answered: false, done: reply(socket) }
      void t.done.then(() => (t.answered = true))
      socket.write(`PUT /o HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${alice}\r\ncontent-length: 1000000\r\n\r\nx`)
      trickles.push(t)
    }
    // Alice holds her 4 writers; her other 16 uploads wait in the queue.
    await expect.poll(() => metricValue(r.svc, 'queue_depth', { queue: 'work' }), { timeout: 20_000 }).toBe(16)
    await expect.poll(() => metricValue(r.svc, 'work_active', { kind: 'write' }), { timeout: 20_000 }).toBe(4)
    const bob = await request(`${r.srv.url}/o`, { method: 'PUT', body: bytes(256 * 1024, 7), headers: { authorization: `Bearer ${r.token('bob')}` } })
    expect(bob.statusCode).toBe(201)
    await bob.body.dump()
    // Bob was not held back: every one of alice's uploads was still being read or waiting.
    expect(trickles.filter((t) => t.answered)).toHaveLength(0)
    // One byte per 20 virtual ms per connection (50 B/s, far under the minimum rate); the real
    // pause only lets the sockets carry it, the outcome does not depend on its length.
    while (trickles.some((t) => !t.answered)) {
      for (const t of trickles) if (!t.socket.destroyed) t.socket.write('x')
      await clock.advance(20)
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    const answered = await Promise.all(trickles.map((t) => t.done))
    for (const a of answered) {
      expect(a).toMatch(/^HTTP\/1\.1 408/)
      expect(a).toContain('"code":"RequestTimeout"')
      expect(a).toContain('"reason":"min_rate"')
    }
    expect(await metricValue(r.svc, 'io_timeouts_total', { op: 'read_rate' })).toBe(20)
  })

  it('64 concurrent 1 MiB PUTs from one client all succeed; no more than the per-principal writers run at once', async () => {
    const store = countingStore()
    const r = await start({ backend: store })
    const token = r.token('loader')
    const results = await Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        const res = await request(`${r.srv.url}/o`, { method: 'PUT', body: bytes(1024 * 1024, 1000 + i), headers: { authorization: `Bearer ${token}` } })
        await res.body.dump()
        return res.statusCode
      }),
    )
    expect(results).toEqual(Array.from({ length: 64 }, () => 201))
    expect(store.max).toBeLessThanOrEqual(16) // default: 32 writers, half per principal
    expect(await metricValue(r.svc, 'busy_rejections_total')).toBe(0)
    await store.close()
  })

  it('answers 429 Busy with Retry-After only once the work queue is full (several source addresses)', async () => {
    const gate = deferred()
    const inner = createMemoryStore({ chunkSize: 1024 })
    const store = Object.assign(Object.create(inner) as BlobStore, {
      async put(source: AsyncIterable<Uint8Array>, opts?: PutOptions) {
        const chunks: Uint8Array[] = []
        for await (const c of source) chunks.push(c)
        await gate.promise
        return inner.put(
          (async function* () {
            yield* chunks
          })(),
          opts,
        )
      },
    })
    // 2 writers (1 per principal), a queue of 4, at most 2 requests per client IP: the queue
    // fills from several loopback addresses before any per-IP cap is reached.
    const r = await start({ backend: store, writers: 2, workQueue: 4, http: { maxConcurrentPerIp: 2 } })
    const agents: Agent[] = []
    const put = (sub: string, from: string) => {
      const agent = new Agent({ localAddress: from })
      agents.push(agent)
      return request(`${r.srv.url}/o`, { method: 'PUT', body: `from ${sub} at ${from}`, headers: { authorization: `Bearer ${r.token(sub)}` }, dispatcher: agent }).then(
        async (res) => ({ status: res.statusCode, json: (await res.body.json()) as { error?: { code: string; details: Record<string, unknown> } }, retryAfter: res.headers['retry-after'] }),
      )
    }
    try {
      const writing = [put('p1', '127.0.0.2'), put('p2', '127.0.0.2')]
      await expect.poll(() => metricValue(r.svc, 'work_active', { kind: 'write' }), { timeout: 20_000 }).toBe(2)
      const queued = [put('p3', '127.0.0.3'), put('p4', '127.0.0.3'), put('p5', '127.0.0.4'), put('p6', '127.0.0.4')]
      await expect.poll(() => metricValue(r.svc, 'queue_depth', { queue: 'work' }), { timeout: 20_000 }).toBe(4)
      const busy = await put('p7', '127.0.0.5')
      expect(busy.status).toBe(429)
      expect(Number(busy.retryAfter)).toBeGreaterThanOrEqual(1)
      expect(busy.json.error).toMatchObject({ code: 'Busy', details: { queue: 'work', endpoint: 'PUT /o' } })
      expect(await metricValue(r.svc, 'busy_rejections_total', { endpoint: 'PUT /o', queue: 'work' })).toBe(1)
      // A third request from an address already at its cap of 2 is refused by the per-IP cap.
      const perIp = await put('p8', '127.0.0.2')
      expect(perIp.status).toBe(429)
      expect(perIp.json.error).toMatchObject({ code: 'Busy', details: { reason: 'per_ip' } })
      gate.resolve()
      for (const p of [...writing, ...queued]) expect((await p).status).toBe(201)
    } finally {
      gate.resolve()
      await Promise.all(agents.map((a) => a.close()))
    }
  })

  it('an upload whose client goes away while it waits in the queue leaves the queue at once', async () => {
    const clock = new VirtualClock(Date.now()) // nothing times out unless the test moves it
    const r = await start({ clock, writers: 1 })
    const holder = await rawSocket(r.srv)
    const held = reply(holder)
    holder.write(`PUT /o HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${r.token('a')}\r\ncontent-length: 10\r\n\r\n01234`)
    await expect.poll(() => metricValue(r.svc, 'work_active', { kind: 'write' }), { timeout: 20_000 }).toBe(1)
    const waiter = await rawSocket(r.srv)
    waiter.write(`PUT /o HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${r.token('b')}\r\ncontent-length: 10\r\n\r\n`)
    await expect.poll(() => metricValue(r.svc, 'queue_depth', { queue: 'work' }), { timeout: 20_000 }).toBe(1)
    waiter.destroy()
    await expect.poll(() => metricValue(r.svc, 'queue_depth', { queue: 'work' }), { timeout: 20_000 }).toBe(0)
    // The writer finishes; nothing of the departed upload is left to run.
    holder.write('56789')
    expect(await held).toMatch(/^HTTP\/1\.1 201/)
    await expect.poll(() => metricValue(r.svc, 'work_active', { kind: 'write' }), { timeout: 20_000 }).toBe(0)
  })

  it('a body that stalls past the gap timeout is 408 RequestTimeout (not 504) and frees its writer', async () => {
    const r = await start({ writers: 1, http: { readTimeoutMs: 100 } })
    const socket = await rawSocket(r.srv)
    const done = reply(socket)
    socket.write(`PUT /o HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${r.token('slow')}\r\ncontent-length: 100\r\n\r\n0123456789`)
    const answer = await done
    expect(answer).toMatch(/^HTTP\/1\.1 408/)
    expect(answer).toContain('"reason":"gap"')
    const res = await request(`${r.srv.url}/o`, { method: 'PUT', body: 'next', headers: { authorization: `Bearer ${r.token('other')}` } })
    expect(res.statusCode).toBe(201)
    await res.body.dump()
  })
})
