import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { abortReason, BusyError, CanceledError, DrainingError, Supervisor, WorkPool } from '@ron/core'
import { VirtualClock, deferred } from '@ron/core/testing'
import { RecordingMetrics } from '../../src/testing/index.js'

function setup(capacity = 2, concurrency = 1) {
  const clock = new VirtualClock()
  const metrics = new RecordingMetrics()
  const supervisor = new Supervisor({ clock, metrics })
  const pool = new WorkPool({ name: 'put', capacity, concurrency, supervisor, metrics })
  return { clock, metrics, supervisor, pool }
}

describe('WorkPool', () => {
  it('runs submitted jobs on its workers and settles with their result or error', async () => {
    const { pool, supervisor, metrics } = setup(4, 2)
    expect(metrics.counter('tasks_spawned_total', { kind: 'put-worker' })).toBe(2)
    await expect(pool.submit(() => Promise.resolve(21 * 2))).resolves.toBe(42)
    await expect(pool.submit(() => Promise.reject(new Error('job failed')))).rejects.toThrow('job failed')
    // A failing job does not crash the worker.
    await expect(pool.submit(() => Promise.resolve('still up'))).resolves.toBe('still up')
    expect(metrics.counter('tasks_panicked_total', { kind: 'put-worker' })).toBe(0)
    await supervisor.shutdown(0)
  })

  it('rejects with Busy immediately when the queue is full, and never waits for space', async () => {
    const { pool, supervisor } = setup(2, 1)
    const gate = deferred()
    const started = deferred()
    const running = pool.submit(async () => {
      started.resolve()
      await gate.promise
    })
    await started.promise
    expect(pool.inFlight).toBe(1)
    const q1 = pool.submit(() => Promise.resolve(1))
    const q2 = pool.submit(() => Promise.resolve(2))
    expect(pool.depth).toBe(2)
    await expect(pool.submit(() => Promise.resolve(3))).rejects.toBeInstanceOf(BusyError)
    gate.resolve()
    await expect(Promise.all([running, q1, q2])).resolves.toEqual([undefined, 1, 2])
    await supervisor.shutdown(0)
  })

  it('a job whose caller aborts while queued is skipped and rejects CanceledError', async () => {
    const { pool, supervisor } = setup(4, 1)
    const gate = deferred()
    const first = pool.submit(() => gate.promise)
    let ran = false
    const ac = new AbortController()
    const skipped = pool.submit(() => {
      ran = true
      return Promise.resolve()
    }, ac.signal)
    ac.abort()
    await expect(skipped).rejects.toBeInstanceOf(CanceledError)
    gate.resolve()
    await first
    await pool.submit(() => Promise.resolve())
    expect(ran).toBe(false)
    await expect(pool.submit(() => Promise.resolve(), AbortSignal.abort())).rejects.toBeInstanceOf(CanceledError)
    await supervisor.shutdown(0)
  })

  it('the caller signal aborting mid-job aborts the job signal', async () => {
    const { pool, supervisor } = setup(4, 1)
    const ac = new AbortController()
    const started = deferred()
    const job = pool.submit(async (signal) => {
      started.resolve()
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true }))
    }, ac.signal)
    await started.promise
    ac.abort()
    await expect(job).rejects.toBeInstanceOf(CanceledError)
    await supervisor.shutdown(0)
  })

  it('stop drains queued jobs, then rejects new ones with Draining; drained() resolves when idle', async () => {
    const { pool, supervisor } = setup(4, 1)
    const gate = deferred()
    const started = deferred()
    const done: number[] = []
    const jobs = [0, 1, 2].map((i) =>
      pool.submit(async () => {
        if (i === 0) {
          started.resolve()
          await gate.promise
        }
        done.push(i)
      }),
    )
    pool.stop()
    pool.stop()
    await expect(pool.submit(() => Promise.resolve())).rejects.toBeInstanceOf(DrainingError)
    let drained = false
    const d = pool.drained().then(() => {
      drained = true
    })
    await started.promise
    // Job 0 holds the only worker and two jobs are queued: not drained yet.
    expect(pool.inFlight + pool.depth).toBe(3)
    expect(drained).toBe(false)
    gate.resolve()
    await Promise.all(jobs)
    await d
    expect(done).toEqual([0, 1, 2])
    // Workers exit once the queue is closed and empty.
    await expect.poll(() => supervisor.describe()).toEqual([])
    expect(await supervisor.shutdown(0)).toEqual({ drained: [], aborted: [] })
  })

  it('supervisor shutdown aborts the in-flight job and rejects queued ones with CanceledError', async () => {
    const { pool, supervisor, clock } = setup(4, 1)
    const started = deferred()
    const inflight = pool.submit(
      (signal) =>
        new Promise((_, reject) => {
          started.resolve()
          signal.addEventListener('abort', () => reject(new CanceledError('aborted')), { once: true })
        }),
    )
    const queued = pool.submit(() => Promise.resolve('never'))
    await started.promise
    const report = await supervisor.shutdown(1000)
    await expect(inflight).rejects.toBeInstanceOf(CanceledError)
    await expect(queued).rejects.toBeInstanceOf(CanceledError)
    expect(report.aborted).toEqual([])
    expect(pool.depth).toBe(0)
    expect(clock.pending).toBe(0)
    await pool.drained()
  })

  it('leaves no abort listener on the caller signal or the worker signal once jobs settle', async () => {
    const { pool, supervisor } = setup(4, 2)
    const ac = new AbortController()
    await Promise.all([1, 2, 3].map((i) => pool.submit(() => Promise.resolve(i), ac.signal)))
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0)
    const skipped = new AbortController()
    const gate = pool.submit(() => new Promise<void>((r) => setImmediate(r)))
    const p = pool.submit(() => Promise.resolve(), skipped.signal)
    skipped.abort()
    await expect(p).rejects.toBeInstanceOf(CanceledError)
    await gate
    await pool.drained()
    expect(getEventListeners(skipped.signal, 'abort')).toHaveLength(0)
    await supervisor.shutdown(0)
  })
})
