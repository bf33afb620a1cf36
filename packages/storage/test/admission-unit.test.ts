/**
 * The work scheduler and the upload rate rule on a virtual clock: no real waits, no sockets.
 */
import { describe, expect, it } from 'vitest'
import { isRonError, noopMetrics } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { WorkScheduler } from '../src/admission.js'
import { pacedBody, uploadDeadlineMs } from '../src/upload-pace.js'

function scheduler(limits: { capacity: number; readers: number; writers: number; writersPerPrincipal: number }, signal = new AbortController().signal) {
  return new WorkScheduler({ name: 'work', metrics: noopMetrics, clock: new VirtualClock(), signal, ...limits })
}

/** A body fed by the test: `push(n)` makes n bytes available, `end()` finishes it. */
function feed(): { body: AsyncIterable<Uint8Array>; push(n: number): void; end(): void } {
  const waiting: ((r: IteratorResult<Uint8Array>) => void)[] = []
  const ready: IteratorResult<Uint8Array>[] = []
  const give = (r: IteratorResult<Uint8Array>): void => {
    const w = waiting.shift()
    if (w) w(r)
    else ready.push(r)
  }
  return {
    body: {
      [Symbol.asyncIterator]: () => ({
        next: () => (ready.length > 0 ? Promise.resolve(ready.shift()!) : new Promise((r) => waiting.push(r))),
        return: () => Promise.resolve({ done: true, value: undefined }),
      }),
    },
    push: (n) => give({ done: false, value: new Uint8Array(n) }),
    end: () => give({ done: true, value: undefined }),
  }
}

async function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'done',
    (e: unknown) => (isRonError(e) ? `${e.code}:${String(e.details.reason)}` : String(e)),
  )
}

describe('WorkScheduler', () => {
  it('grants free slots at once, queues the rest FIFO, and lets other principals pass a capped one', async () => {
    const s = scheduler({ capacity: 8, readers: 1, writers: 3, writersPerPrincipal: 1 })
    const sig = new AbortController().signal
    const a1 = await s.acquire('write', 'alice', 'PUT /o', sig)
    const a2 = s.acquire('write', 'alice', 'PUT /o', sig) // alice at her cap: waits
    const b1 = await s.acquire('write', 'bob', 'PUT /o', sig) // passes alice's waiting upload
    expect(s.depth).toBe(1)
    expect(s.active).toEqual({ read: 0, write: 2 })
    a1()
    await a2
    expect(s.writing('alice')).toBe(1)
    b1()
    expect(s.depth).toBe(0)
  })

  it('rejects with Busy only when the queue is full, and a waiter whose signal aborts leaves the queue', async () => {
    const s = scheduler({ capacity: 1, readers: 1, writers: 1, writersPerPrincipal: 1 })
    const sig = new AbortController().signal
    const held = await s.acquire('read', '', 'GET /o/:addr', sig)
    const ac = new AbortController()
    const waiting = s.acquire('read', '', 'GET /o/:addr', ac.signal)
    const full = s.acquire('read', '', 'GET /o/:addr', sig)
    await expect(full).rejects.toMatchObject({ code: 'Busy', details: { queue: 'work', endpoint: 'GET /o/:addr' } })
    ac.abort()
    await expect(waiting).rejects.toMatchObject({ code: 'Canceled' })
    expect(s.depth).toBe(0)
    held()
    expect(s.active.read).toBe(0)
  })

  it('asks for a lazily given signal only when the request has to wait', async () => {
    const s = scheduler({ capacity: 2, readers: 1, writers: 1, writersPerPrincipal: 1 })
    let asked = 0
    const ac = new AbortController()
    const lazy = (): AbortSignal => {
      asked++
      return ac.signal
    }
    const held = await s.acquire('read', '', 'GET /o/:addr', lazy)
    expect(asked).toBe(0) // granted at once: no signal created
    const waiting = s.acquire('read', '', 'GET /o/:addr', lazy)
    expect(asked).toBe(1)
    ac.abort()
    await expect(waiting).rejects.toMatchObject({ code: 'Canceled' })
    expect(s.depth).toBe(0)
    held()
  })

  it('cancels every waiter when the service is force-closed', async () => {
    const shutdown = new AbortController()
    const s = scheduler({ capacity: 4, readers: 1, writers: 1, writersPerPrincipal: 1 }, shutdown.signal)
    const sig = new AbortController().signal
    await s.acquire('write', 'a', 'PUT /o', sig)
    const w = s.acquire('write', 'b', 'PUT /o', sig)
    shutdown.abort()
    await expect(w).rejects.toMatchObject({ code: 'Canceled' })
  })

  it('configure() resizes live: more writers admit waiters at once', async () => {
    const s = scheduler({ capacity: 4, readers: 1, writers: 1, writersPerPrincipal: 1 })
    const sig = new AbortController().signal
    await s.acquire('write', 'a', 'PUT /o', sig)
    const w = s.acquire('write', 'b', 'PUT /o', sig)
    s.configure({ capacity: 4, readers: 1, writers: 2, writersPerPrincipal: 1 })
    await expect(w).resolves.toBeTypeOf('function')
  })
})

describe('pacedBody: minimum rate and whole-upload deadline on a virtual clock', () => {
  it('cuts an upload under the minimum rate once a window has passed (408 min_rate)', async () => {
    const clock = new VirtualClock()
    const f = feed()
    const body = pacedBody(f.body, { minBytesPerSec: 8192, windowMs: 30_000, expectedBytes: undefined, clock, metrics: noopMetrics })
    const drained = outcome(
      (async () => {
        for await (const _ of body) void _
      })(),
    )
    // 1 byte every 3 s: the gap timeout alone would never fire.
    for (let t = 0; t < 40_000; t += 3000) {
      f.push(1)
      await clock.advance(3000)
    }
    expect(await drained).toBe('RequestTimeout:min_rate')
  })

  it('lets an upload at the minimum rate finish, however long it takes', async () => {
    const clock = new VirtualClock()
    const f = feed()
    const body = pacedBody(f.body, { minBytesPerSec: 1000, windowMs: 10_000, expectedBytes: undefined, clock, metrics: noopMetrics })
    let got = 0
    const drained = outcome(
      (async () => {
        for await (const c of body) got += c.byteLength
      })(),
    )
    for (let t = 0; t < 60_000; t += 500) {
      f.push(600) // 1200 B/s
      await clock.advance(500)
    }
    f.end()
    expect(await drained).toBe('done')
    expect(got).toBe(600 * 120)
  })

  it('enforces the deadline derived from the announced size and the minimum rate (408 deadline)', async () => {
    // The rate counts decoded bytes; the deadline bounds the time on the wire for the announced
    // (encoded) length: a compressed body can decode fast while its bytes arrive too slowly.
    const clock = new VirtualClock()
    const f = feed()
    const expected = 10_000
    const deadline = uploadDeadlineMs(expected, 1000, 10_000)
    expect(deadline).toBe(20_000)
    const body = pacedBody(f.body, { minBytesPerSec: 1000, windowMs: 10_000, expectedBytes: expected, clock, metrics: noopMetrics })
    const drained = outcome(
      (async () => {
        for await (const _ of body) void _
      })(),
    )
    for (let t = 0; t <= deadline + 2000; t += 1000) {
      f.push(2000)
      await clock.advance(1000)
    }
    expect(await drained).toBe('RequestTimeout:deadline')
  })
})
