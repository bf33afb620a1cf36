import { describe, expect, it } from 'vitest'
import {
  BoundedQueue,
  Broadcast,
  HttpTransport,
  MemoryTransport,
  Supervisor,
  Watch,
  WakeableSleep,
  WorkPool,
  isRonError,
  linkSignals,
  onAbort,
  raceAbort,
  waitUnlessAborted,
} from '@ron/core'
import { VirtualClock, abortListenerCount, deferred } from '@ron/core/testing'

const listeners = abortListenerCount

describe('waitUnlessAborted', () => {
  it('rejects at once with Canceled for an aborted signal, without starting the wait', async () => {
    const ac = new AbortController()
    ac.abort()
    let started = false
    await expect(
      waitUnlessAborted(ac.signal, () => {
        started = true
      }),
    ).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    expect(started).toBe(false)
  })

  it('runs cancel and rejects with the signal reason when aborted; removes its listener when settled', async () => {
    const ac = new AbortController()
    let canceled = 0
    const p = waitUnlessAborted<number>(ac.signal, () => () => canceled++)
    expect(listeners(ac.signal)).toBe(1)
    const reason = new Error('stop')
    ac.abort(reason)
    await expect(p).rejects.toBe(reason)
    expect(canceled).toBe(1)

    const ac2 = new AbortController()
    let settle!: (v: number) => void
    const q = waitUnlessAborted<number>(ac2.signal, (w) => {
      settle = w.resolve
    })
    settle(7)
    expect(await q).toBe(7)
    expect(listeners(ac2.signal)).toBe(0)
  })
})

describe('raceAbort', () => {
  it('settles with the promise, or rejects on abort and hands a late value to onLoser', async () => {
    expect(await raceAbort(Promise.resolve(1), new AbortController().signal)).toBe(1)
    const ac = new AbortController()
    const late = deferred<string>()
    const lost = deferred<string>()
    const p = raceAbort(late.promise, ac.signal, (v) => lost.resolve(v))
    ac.abort()
    await expect(p).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    late.resolve('body')
    expect(await lost.promise).toBe('body')
  })

  it('with an already-aborted signal still releases the late value', async () => {
    const ac = new AbortController()
    ac.abort()
    const got = deferred<string>()
    await expect(raceAbort(Promise.resolve('x'), ac.signal, (v) => got.resolve(v))).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    expect(await got.promise).toBe('x')
  })
})

describe('onAbort', () => {
  it('calls fn once on abort, at once when already aborted, and its disposer removes the listener', () => {
    const ac = new AbortController()
    let n = 0
    const off = onAbort(ac.signal, () => n++)
    off()
    ac.abort()
    expect(n).toBe(0)
    onAbort(ac.signal, () => n++)
    expect(n).toBe(1)
  })
})

describe('waiting primitives share the helper', () => {
  it('recv/changed accept a signal or { signal } and leave no listener behind', async () => {
    const ac = new AbortController()
    const q = new BoundedQueue<number>({ name: 'q', capacity: 1 })
    const w = new Watch(0)
    const b = new Broadcast<number>({ name: 'b', capacity: 1 })
    const sub = b.subscribe()
    const waits = [q.recv({ signal: ac.signal }), w.changed({ signal: ac.signal }), sub.recv(ac.signal)]
    expect(listeners(ac.signal)).toBe(3)
    ac.abort()
    for (const p of waits) await expect(p).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    expect(listeners(ac.signal)).toBe(0)
    expect(w.listenerCount).toBe(0)
    const ac2 = new AbortController()
    const got = q.recv({ signal: ac2.signal })
    q.trySend(5)
    expect(await got).toBe(5)
    expect(listeners(ac2.signal)).toBe(0)
  })
})

describe('WakeableSleep', () => {
  it('sleeps on the clock, ends early on wake(), remembers a wake while nobody sleeps, and cancels on abort', async () => {
    const clock = new VirtualClock()
    const s = new WakeableSleep(clock)
    const slept = s.sleep(1000)
    await clock.advance(1000)
    await slept
    const woken = s.sleep(60_000)
    s.wake()
    await woken
    expect(clock.pending).toBe(0)
    s.wake()
    await s.sleep(60_000) // the remembered wake ends it at once
    const ac = new AbortController()
    const aborted = s.sleep(60_000, ac.signal)
    ac.abort()
    await expect(aborted).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    expect(clock.pending).toBe(0)
  })
})

describe('linkSignals', () => {
  it('aborts with the reason of whichever source aborts first, then detaches from both', () => {
    for (const first of ['a', 'b'] as const) {
      const a = new AbortController()
      const b = new AbortController()
      const link = linkSignals(a.signal, b.signal)
      expect(link.signal).not.toBe(a.signal)
      expect(listeners(a.signal)).toBe(1)
      expect(listeners(b.signal)).toBe(1)
      const reason = new Error(`from ${first}`)
      ;(first === 'a' ? a : b).abort(reason)
      expect(link.signal.aborted).toBe(true)
      expect(link.signal.reason).toBe(reason)
      expect(listeners(a.signal)).toBe(0)
      expect(listeners(b.signal)).toBe(0)
    }
  })

  it('dispose() detaches without aborting, so a long-lived source keeps no listener per operation', () => {
    const service = new AbortController()
    for (let i = 0; i < 100; i++) {
      const req = new AbortController()
      const link = linkSignals(service.signal, req.signal)
      link.dispose()
      link.dispose()
      expect(link.signal.aborted).toBe(false)
    }
    expect(listeners(service.signal)).toBe(0)
    service.abort()
  })

  it('many links in flight on one long-lived source raise no MaxListenersExceededWarning', async () => {
    const warnings: string[] = []
    const onWarning = (w: Error): void => void warnings.push(w.name)
    process.on('warning', onWarning)
    try {
      const service = new AbortController()
      const links = Array.from({ length: 64 }, () => linkSignals(service.signal, new AbortController().signal))
      expect(listeners(service.signal)).toBe(64)
      await new Promise((r) => setImmediate(r)) // warnings are emitted on the next tick
      for (const l of links) l.dispose()
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('makes no new signal when there is nothing to link', () => {
    const a = new AbortController()
    expect(linkSignals(a.signal, undefined).signal).toBe(a.signal)
    expect(linkSignals(a.signal, a.signal).signal).toBe(a.signal)
    const done = new AbortController()
    done.abort()
    expect(linkSignals(a.signal, done.signal).signal).toBe(done.signal)
    expect(linkSignals(done.signal, a.signal).signal).toBe(done.signal)
    expect(listeners(a.signal)).toBe(0)
  })
})

describe('WorkPool job signals', () => {
  it("a job's signal follows the caller's and the worker's, and the pool detaches from the caller's when the job ends", async () => {
    const sup = new Supervisor({ name: 's' })
    const pool = new WorkPool({ name: 'p', capacity: 4, concurrency: 1, supervisor: sup })
    try {
      const caller = new AbortController()
      let seen: AbortSignal | undefined
      await pool.submit((signal) => {
        seen = signal
        expect(listeners(caller.signal)).toBe(1)
        return Promise.resolve()
      }, caller.signal)
      expect(listeners(caller.signal)).toBe(0)
      caller.abort()
      expect(seen!.aborted).toBe(false)

      const caller2 = new AbortController()
      const started = deferred()
      const running = pool.submit(async (signal) => {
        started.resolve()
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
        return signal.reason as unknown
      }, caller2.signal)
      await started.promise
      const reason = new Error('client gone')
      caller2.abort(reason)
      await expect(running).resolves.toBe(reason)
    } finally {
      await pool.close()
      await sup.close()
    }
  })
})

describe('close verbs', () => {
  it('every core resource has an idempotent close() and Symbol.asyncDispose', async () => {
    const sup = new Supervisor({ name: 's' })
    const pool = new WorkPool({ name: 'p', capacity: 1, concurrency: 1, supervisor: sup })
    const resources = [
      new BoundedQueue({ name: 'q', capacity: 1 }),
      new Broadcast({ name: 'b', capacity: 1 }),
      new Watch(0),
      pool,
      sup,
      new MemoryTransport(),
      new HttpTransport(),
    ]
    for (const r of resources) {
      expect(typeof r.close, r.constructor.name).toBe('function')
      expect(typeof r[Symbol.asyncDispose], r.constructor.name).toBe('function')
    }
    const done = deferred()
    await pool.submit(() => {
      done.resolve()
      return Promise.resolve()
    })
    await done.promise
    for (const r of resources) {
      await r[Symbol.asyncDispose]()
      await r.close()
    }
    await expect(pool.submit(() => Promise.resolve())).rejects.toSatisfy((e) => isRonError(e))
  })
})
