import { describe, expect, it } from 'vitest'
import { BusyError, CanceledError, InternalError, RetryBudget, TimeoutError, retry } from '@ron/core'
import { VirtualClock, fixedRandom, seededRandom } from '@ron/core/testing'
import { RecordingMetrics } from '../../src/testing/index.js'

/** Runs `retry` to completion on virtual time, recording when each attempt started. */
async function drive<T>(clock: VirtualClock, p: Promise<T>): Promise<T> {
  const out = p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  )
  await clock.runAll()
  const r = await out
  if (r.ok) return r.v
  throw r.e
}

describe('retry', () => {
  it('retries retryable errors up to 3 tries by default and returns the first success', async () => {
    const clock = new VirtualClock()
    const attempts: number[] = []
    const v = await drive(
      clock,
      retry(
        (attempt) => {
          attempts.push(attempt)
          return attempt < 3 ? Promise.reject(new TimeoutError()) : Promise.resolve('ok')
        },
        { clock },
      ),
    )
    expect(v).toBe('ok')
    expect(attempts).toEqual([1, 2, 3])
  })

  it('throws the last error once attempts run out, and counts backoff_retries_total{op}', async () => {
    const clock = new VirtualClock()
    const metrics = new RecordingMetrics()
    let n = 0
    const p = retry(
      () => {
        n++
        return Promise.reject(new TimeoutError(`t${n}`))
      },
      { clock, metrics, op: 'peer.get' },
    )
    await expect(drive(clock, p)).rejects.toThrow('t3')
    expect(metrics.counter('backoff_retries_total', { op: 'peer.get' })).toBe(2)
  })

  it('does not retry non-retryable errors by default, and honours shouldRetry', async () => {
    const clock = new VirtualClock()
    let n = 0
    await expect(
      retry(() => {
        n++
        return Promise.reject(new InternalError())
      }, { clock }),
    ).rejects.toBeInstanceOf(InternalError)
    expect(n).toBe(1)
    n = 0
    await expect(
      drive(
        clock,
        retry(
          () => {
            n++
            return Promise.reject(new Error('plain'))
          },
          { clock, shouldRetry: () => true, tries: 4 },
        ),
      ),
    ).rejects.toThrow('plain')
    expect(n).toBe(4)
  })

  it('backoff is drawn in [baseMin, baseMax], doubles per attempt and is capped', async () => {
    for (const [r, expected] of [
      [0, [50, 100, 200, 400, 800, 1000]],
      [0.999999, [100, 200, 400, 800, 1000, 1000]],
    ] as const) {
      const clock = new VirtualClock()
      const starts: number[] = []
      const p = retry(
        () => {
          starts.push(clock.now())
          return Promise.reject(new TimeoutError())
        },
        { clock, random: fixedRandom(r), tries: 7, capMs: 1000 },
      )
      await expect(drive(clock, p)).rejects.toBeInstanceOf(TimeoutError)
      const gaps = starts.slice(1).map((t, i) => Math.round(t - starts[i]!))
      expect(gaps).toEqual(expected)
    }
  })

  it('jittered delays stay within bounds for a seeded random', async () => {
    const clock = new VirtualClock()
    const starts: number[] = []
    const p = retry(
      () => {
        starts.push(clock.now())
        return Promise.reject(new TimeoutError())
      },
      { clock, random: seededRandom(3), tries: 6 },
    )
    await expect(drive(clock, p)).rejects.toBeInstanceOf(TimeoutError)
    starts.slice(1).forEach((t, i) => {
      const gap = t - starts[i]!
      expect(gap).toBeGreaterThanOrEqual(Math.min(2000, 50 * 2 ** i))
      expect(gap).toBeLessThanOrEqual(Math.min(2000, 100 * 2 ** i))
    })
  })

  it('honours a larger retryAfterMs of a Busy error, still capped', async () => {
    const clock = new VirtualClock()
    const starts: number[] = []
    const p = retry(
      () => {
        starts.push(clock.now())
        return Promise.reject(new BusyError('full', { retryAfterMs: starts.length === 1 ? 700 : 10_000 }))
      },
      { clock, random: fixedRandom(0), capMs: 2000 },
    )
    await expect(drive(clock, p)).rejects.toBeInstanceOf(BusyError)
    expect(starts).toEqual([0, 700, 2700])
  })

  it('aborting the signal during a backoff sleep rejects CanceledError and stops retrying', async () => {
    const clock = new VirtualClock()
    const ac = new AbortController()
    let n = 0
    const p = retry(
      (_, signal) => {
        n++
        expect(signal).toBe(ac.signal)
        return Promise.reject(new TimeoutError())
      },
      { clock, signal: ac.signal },
    )
    await clock.flush()
    expect(clock.pending).toBe(1)
    ac.abort()
    await expect(p).rejects.toBeInstanceOf(CanceledError)
    expect(n).toBe(1)
    expect(clock.pending).toBe(0)
  })

  it('a spent retry budget stops retries so they cannot amplify an outage', async () => {
    const clock = new VirtualClock()
    const budget = new RetryBudget({ ratio: 0.1, minPerSec: 0.2, windowMs: 10_000, clock }) // reserve 2 retries
    const metrics = new RecordingMetrics()
    let calls = 0
    const failing = (): Promise<never> => {
      calls++
      return Promise.reject(new TimeoutError())
    }
    for (let i = 0; i < 5; i++) {
      await drive(clock, retry(failing, { clock, budget, metrics, tries: 3 })).catch(() => undefined)
    }
    // The first request spends the reserve (2 retries <= 0.1*1 + 2); the next four may not retry
    // (3 > 0.1*n + 2 for n <= 5), so 5 requests cost 7 calls instead of 15.
    expect(calls).toBe(7)
    expect(metrics.counter('retry_budget_exhausted_total', { op: 'op' })).toBe(4)
  })
})

describe('RetryBudget', () => {
  it('allows retries up to ratio * requests + reserve over the window, then refills as the window rolls', async () => {
    const clock = new VirtualClock()
    const budget = new RetryBudget({ ratio: 0.5, minPerSec: 0, windowMs: 1000, clock })
    expect(budget.tryRetry()).toBe(false)
    for (let i = 0; i < 4; i++) budget.recordRequest()
    expect(budget.available).toBe(2)
    expect(budget.tryRetry()).toBe(true)
    expect(budget.tryRetry()).toBe(true)
    expect(budget.tryRetry()).toBe(false)
    await clock.advance(1000)
    expect(budget.available).toBe(0)
    budget.recordRequest()
    budget.recordRequest()
    expect(budget.tryRetry()).toBe(true)
  })
})
