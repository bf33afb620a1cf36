import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BoundedQueue, BusyError, CanceledError, ClosedError } from '@ron/core'
import { RecordingMetrics } from '../../src/testing/index.js'

describe('BoundedQueue', () => {
  it('trySend rejects with Busy at capacity, naming the queue', () => {
    const metrics = new RecordingMetrics()
    const q = new BoundedQueue<number>({ name: 'work', capacity: 2, metrics, retryAfterMs: 250 })
    q.trySend(1)
    q.trySend(2)
    let err: unknown
    try {
      q.trySend(3)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(BusyError)
    expect((err as BusyError).details).toEqual({ queue: 'work' })
    expect((err as BusyError).retryAfterMs).toBe(250)
    // A rejected send is not a 429 yet: the service host counts busy_rejections_total when it answers one.
    expect(metrics.counter('busy_rejections_total', { queue: 'work' })).toBe(0)
    expect(q.depth).toBe(2)
    expect(q.tryRecv()).toBe(1)
  })

  it('drop-oldest evicts and returns the oldest item and counts queue_dropped_total', () => {
    const metrics = new RecordingMetrics()
    const q = new BoundedQueue<string>({ name: 'audit', capacity: 2, overflow: 'drop-oldest', metrics })
    expect(q.trySend('a')).toBeUndefined()
    q.trySend('b')
    expect(q.trySend('c')).toBe('a')
    expect(metrics.counter('queue_dropped_total', { queue: 'audit' })).toBe(1)
    expect([q.tryRecv(), q.tryRecv(), q.tryRecv()]).toEqual(['b', 'c', undefined])
  })

  it('reports queue_depth on every change', () => {
    const metrics = new RecordingMetrics()
    const q = new BoundedQueue<number>({ name: 'd', capacity: 3, metrics })
    q.trySend(1)
    q.trySend(2)
    q.tryRecv()
    expect(metrics.gaugeHistory.map((g) => g.value)).toEqual([0, 1, 2, 1])
    expect(metrics.gauge('queue_depth', { queue: 'd' })).toBe(1)
  })

  it('recv waits for an item and a waiting receiver gets it directly', async () => {
    const q = new BoundedQueue<number>({ name: 'w', capacity: 1 })
    const r = q.recv()
    expect(q.waiting).toBe(1)
    q.trySend(42)
    await expect(r).resolves.toBe(42)
    expect(q.depth).toBe(0)
  })

  it('recv rejects CanceledError on abort and the next item goes to the next receiver, not the aborted one', async () => {
    const q = new BoundedQueue<number>({ name: 'c', capacity: 4 })
    const ac = new AbortController()
    const aborted = q.recv(ac.signal)
    const live = q.recv()
    ac.abort()
    await expect(aborted).rejects.toBeInstanceOf(CanceledError)
    q.trySend(7)
    await expect(live).resolves.toBe(7)
    await expect(q.recv(AbortSignal.abort())).rejects.toBeInstanceOf(CanceledError)
  })

  it('close stops intake, lets consumers drain, then recv rejects ClosedError', async () => {
    const q = new BoundedQueue<number>({ name: 'x', capacity: 3 })
    q.trySend(1)
    q.trySend(2)
    q.close()
    q.close()
    expect(q.closed).toBe(true)
    expect(() => q.trySend(3)).toThrow(ClosedError)
    await expect(q.recv()).resolves.toBe(1)
    await expect(q.recv()).resolves.toBe(2)
    await expect(q.recv()).rejects.toBeInstanceOf(ClosedError)
  })

  it('close wakes waiting receivers with ClosedError and removes their abort listeners', async () => {
    const q = new BoundedQueue<number>({ name: 'x', capacity: 1 })
    const ac = new AbortController()
    let added = 0
    let removed = 0
    const sig = ac.signal
    const add = sig.addEventListener.bind(sig)
    const rem = sig.removeEventListener.bind(sig)
    sig.addEventListener = ((...a: Parameters<typeof add>) => {
      added++
      add(...a)
    }) as typeof sig.addEventListener
    sig.removeEventListener = ((...a: Parameters<typeof rem>) => {
      removed++
      rem(...a)
    }) as typeof sig.removeEventListener
    const r = q.recv(sig)
    q.close()
    await expect(r).rejects.toBeInstanceOf(ClosedError)
    expect(added).toBe(1)
    expect(removed).toBe(1)
    expect(q.waiting).toBe(0)
  })

  it('rejects a non-positive capacity', () => {
    expect(() => new BoundedQueue({ name: 'bad', capacity: 0 })).toThrow(expect.objectContaining({ code: 'RON_INVALID_OPTION' }))
  })

  it('wraps around its ring many times keeping FIFO order', () => {
    const q = new BoundedQueue<number>({ name: 'ring', capacity: 3 })
    const out: number[] = []
    for (let i = 0; i < 100; i++) {
      q.trySend(i)
      if (i % 2 === 1) {
        out.push(q.tryRecv()!, q.tryRecv()!)
      }
    }
    expect(out).toEqual(Array.from({ length: 100 }, (_, i) => i))
  })
})

type Op = { t: 'send' } | { t: 'recv' } | { t: 'recvWait'; abortAfter: boolean } | { t: 'abort' } | { t: 'tick' }

describe('BoundedQueue properties', () => {
  it('depth never exceeds capacity, order is FIFO, and every item is received once or rejected (reject-new)', async () => {
    const op = fc.oneof(
      fc.constant<Op>({ t: 'send' }),
      fc.constant<Op>({ t: 'recv' }),
      fc.record({ t: fc.constant('recvWait' as const), abortAfter: fc.boolean() }),
      fc.constant<Op>({ t: 'abort' }),
      fc.constant<Op>({ t: 'tick' }),
    )
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 60 }), async (capacity, ops) => {
        const q = new BoundedQueue<number>({ name: 'p', capacity })
        let next = 0
        const accepted: number[] = []
        const received: number[] = []
        const syncReceived: number[] = []
        const controllers: AbortController[] = []
        const pending: Promise<void>[] = []
        for (const o of ops) {
          if (o.t === 'send') {
            const v = next++
            try {
              q.trySend(v)
              accepted.push(v)
            } catch (e) {
              expect(e).toBeInstanceOf(BusyError)
              expect(q.depth).toBe(capacity)
            }
          } else if (o.t === 'recv') {
            const v = q.tryRecv()
            if (v !== undefined) {
              received.push(v)
              syncReceived.push(v)
            }
          } else if (o.t === 'recvWait') {
            const ac = new AbortController()
            if (o.abortAfter) controllers.push(ac)
            pending.push(
              q.recv(ac.signal).then(
                (v) => {
                  received.push(v)
                },
                (e: unknown) => {
                  // Aborted receivers get Canceled; receivers still waiting at close() get Closed.
                  expect(e instanceof CanceledError || e instanceof ClosedError).toBe(true)
                },
              ),
            )
          } else if (o.t === 'abort') {
            controllers.shift()?.abort()
          } else {
            await Promise.resolve()
          }
          expect(q.depth).toBeLessThanOrEqual(capacity)
        }
        for (const c of controllers) c.abort()
        q.close()
        await Promise.all(pending)
        for (let v = q.tryRecv(); v !== undefined; v = q.tryRecv()) received.push(v)
        // No loss, no duplicate (async receivers record later than they dequeue, so compare sorted).
        expect([...received].sort((a, b) => a - b)).toEqual(accepted)
        // FIFO: what tryRecv takes synchronously is always increasing.
        expect(syncReceived).toEqual([...syncReceived].sort((a, b) => a - b))
      }),
      { numRuns: 300 },
    )
  })

  it('drop-oldest keeps exactly the newest `capacity` items in order and counts every drop', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 40 }), (capacity, n) => {
        const metrics = new RecordingMetrics()
        const q = new BoundedQueue<number>({ name: 'dp', capacity, overflow: 'drop-oldest', metrics })
        for (let i = 0; i < n; i++) q.trySend(i)
        const out: number[] = []
        for (let v = q.tryRecv(); v !== undefined; v = q.tryRecv()) out.push(v)
        const kept = Math.min(capacity, n)
        expect(out).toEqual(Array.from({ length: kept }, (_, i) => n - kept + i))
        expect(metrics.counter('queue_dropped_total', { queue: 'dp' })).toBe(n - kept)
      }),
      { numRuns: 200 },
    )
  })
})
