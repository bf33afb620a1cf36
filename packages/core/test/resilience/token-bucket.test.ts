import { describe, expect, it } from 'vitest'
import { CanceledError, TokenBucket } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'

describe('TokenBucket', () => {
  it('keeps refilling after the wall clock steps back instead of stalling for the size of the step', () => {
    let now = 100_000
    const clock = { now: () => now, setTimeout: () => ({}), clearTimeout: () => {}, sleep: () => Promise.resolve() }
    const b = new TokenBucket({ capacity: 1, refillPerSec: 10, clock })
    expect(b.tryTake()).toBe(true)
    now -= 60_000
    expect(b.tryTake()).toBe(false)
    now += 100 // one token's worth of time after the step
    expect(b.tryTake()).toBe(true)
  })

  it('starts full, allows a burst of capacity, then refuses until refilled', async () => {
    const clock = new VirtualClock()
    const b = new TokenBucket({ capacity: 3, refillPerSec: 10, clock })
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false])
    await clock.advance(99)
    expect(b.tryTake()).toBe(false)
    await clock.advance(1)
    expect(b.tryTake()).toBe(true)
  })

  it('refills lazily from the clock up to capacity, with no timers', async () => {
    const clock = new VirtualClock()
    const b = new TokenBucket({ capacity: 5, refillPerSec: 2, clock, initial: 0 })
    expect(b.available).toBe(0)
    await clock.advance(1500)
    expect(b.available).toBeCloseTo(3)
    await clock.advance(60_000)
    expect(b.available).toBe(5)
    expect(clock.pending).toBe(0)
  })

  it('msUntil says how long until n tokens are available (for Retry-After)', async () => {
    const clock = new VirtualClock()
    const b = new TokenBucket({ capacity: 10, refillPerSec: 4, clock, initial: 0 })
    expect(b.msUntil()).toBe(250)
    expect(b.msUntil(3)).toBe(750)
    await clock.advance(250)
    expect(b.msUntil()).toBe(0)
    expect(b.tryTake(2)).toBe(false)
    expect(b.tryTake(1)).toBe(true)
  })

  it('take waits on the clock and returns the ms waited; amounts above capacity are taken in steps', async () => {
    const clock = new VirtualClock()
    const b = new TokenBucket({ capacity: 100, refillPerSec: 100, clock, initial: 0 })
    const waited = b.take(250)
    await clock.runAll()
    await expect(waited).resolves.toBe(2500)
    expect(b.available).toBe(0)
    const immediate = new TokenBucket({ capacity: 5, refillPerSec: 1, clock })
    await expect(immediate.take(5)).resolves.toBe(0)
  })

  it('take rejects CanceledError when the signal aborts and leaves no timer', async () => {
    const clock = new VirtualClock()
    const b = new TokenBucket({ capacity: 1, refillPerSec: 1, clock, initial: 0 })
    const ac = new AbortController()
    const p = b.take(1, ac.signal)
    await clock.advance(500)
    ac.abort()
    await expect(p).rejects.toBeInstanceOf(CanceledError)
    expect(clock.pending).toBe(0)
  })

  it('rejects nonsensical options', () => {
    expect(() => new TokenBucket({ capacity: 0, refillPerSec: 1 })).toThrow(expect.objectContaining({ code: 'RON_INVALID_OPTION' }))
    expect(() => new TokenBucket({ capacity: 1, refillPerSec: 0 })).toThrow(expect.objectContaining({ code: 'RON_INVALID_OPTION' }))
  })
})
