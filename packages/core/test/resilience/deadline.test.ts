import { describe, expect, it } from 'vitest'
import { CanceledError, TimeoutError, deadlineSignal, withDeadline } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { RecordingMetrics } from '../../src/testing/index.js'

function waitForAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('inner saw abort')), { once: true }))
}

describe('withDeadline', () => {
  it('returns the result when fn finishes first and clears its timer', async () => {
    const clock = new VirtualClock()
    await expect(withDeadline(1000, () => Promise.resolve('ok'), { clock })).resolves.toBe('ok')
    expect(clock.pending).toBe(0)
  })

  it('rejects TimeoutError with details.op at the deadline, aborts the inner signal and counts io_timeouts_total', async () => {
    const clock = new VirtualClock()
    const metrics = new RecordingMetrics()
    let inner: AbortSignal | undefined
    const p = withDeadline(
      500,
      (signal) => {
        inner = signal
        return waitForAbort(signal)
      },
      { clock, op: 'storage.get', metrics },
    )
    const outcome = p.catch((e: unknown) => e)
    await clock.advance(499)
    expect(inner?.aborted).toBe(false)
    await clock.advance(1)
    const e = await outcome
    expect(e).toBeInstanceOf(TimeoutError)
    expect((e as TimeoutError).details).toEqual({ op: 'storage.get' })
    expect(inner?.aborted).toBe(true)
    expect(inner?.reason).toBe(e)
    expect(metrics.counter('io_timeouts_total', { op: 'storage.get' })).toBe(1)
  })

  it('rejects CanceledError when the caller signal aborts, and clears the timer and listener', async () => {
    const clock = new VirtualClock()
    const ac = new AbortController()
    let inner: AbortSignal | undefined
    const p = withDeadline(
      1000,
      (signal) => {
        inner = signal
        return waitForAbort(signal)
      },
      { clock, signal: ac.signal },
    )
    ac.abort()
    await expect(p).rejects.toBeInstanceOf(CanceledError)
    expect(inner?.aborted).toBe(true)
    expect(clock.pending).toBe(0)
    await expect(withDeadline(10, () => Promise.resolve(1), { clock, signal: ac.signal })).rejects.toBeInstanceOf(CanceledError)
  })

  it('accepts a signal as the deadline', async () => {
    const deadline = new AbortController()
    const p = withDeadline(deadline.signal, (signal) => waitForAbort(signal), { op: 'x' })
    deadline.abort()
    await expect(p).rejects.toBeInstanceOf(TimeoutError)
    await expect(withDeadline(AbortSignal.abort(), () => Promise.resolve(1))).rejects.toBeInstanceOf(TimeoutError)
  })

  it('propagates what fn throws, even synchronously', async () => {
    const clock = new VirtualClock()
    await expect(withDeadline(10, () => Promise.reject(new RangeError('bad')), { clock })).rejects.toBeInstanceOf(RangeError)
    await expect(
      withDeadline(
        10,
        () => {
          throw new TypeError('sync')
        },
        { clock },
      ),
    ).rejects.toBeInstanceOf(TypeError)
    expect(clock.pending).toBe(0)
  })
})

describe('deadlineSignal', () => {
  it('aborts with TimeoutError after ms, or with the parent reason, and dispose clears everything', async () => {
    const clock = new VirtualClock()
    const d = deadlineSignal(100, clock)
    await clock.advance(100)
    expect(d.signal.reason).toBeInstanceOf(TimeoutError)
    const parent = new AbortController()
    const d2 = deadlineSignal(100, clock, parent.signal)
    parent.abort()
    expect(d2.signal.reason).toBeInstanceOf(CanceledError)
    expect(clock.pending).toBe(0)
    const d3 = deadlineSignal(100, clock)
    d3.dispose()
    d3.dispose()
    expect(clock.pending).toBe(0)
    expect(d3.signal.aborted).toBe(false)
  })
})
