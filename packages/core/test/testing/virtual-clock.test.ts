import { describe, expect, it } from 'vitest'
import { CanceledError } from '@ron/core'
import { VirtualClock, fixedRandom, seededRandom } from '@ron/core/testing'

describe('VirtualClock', () => {
  it('fires due timers in deadline order and leaves later ones pending', async () => {
    const clock = new VirtualClock(1000)
    const fired: string[] = []
    clock.setTimeout(() => fired.push('b@20'), 20)
    clock.setTimeout(() => fired.push('a@10'), 10)
    clock.setTimeout(() => fired.push('c@30'), 30)
    clock.setTimeout(() => fired.push('a2@10'), 10)
    await clock.advance(20)
    expect(fired).toEqual(['a@10', 'a2@10', 'b@20'])
    expect(clock.now()).toBe(1020)
    expect(clock.pending).toBe(1)
  })

  it('runs microtasks between timers so chained sleeps fire within one advance', async () => {
    const clock = new VirtualClock()
    const seen: number[] = []
    const chain = (async () => {
      await clock.sleep(10)
      seen.push(clock.now())
      await clock.sleep(10)
      seen.push(clock.now())
    })()
    await clock.advance(25)
    await chain
    expect(seen).toEqual([10, 20])
    expect(clock.now()).toBe(25)
  })

  it('clearTimeout cancels and sleep rejects with CanceledError on abort without leaving a timer', async () => {
    const clock = new VirtualClock()
    const h = clock.setTimeout(() => {
      throw new Error('must not fire')
    }, 5)
    clock.clearTimeout(h)
    const ac = new AbortController()
    const slept = clock.sleep(100, ac.signal)
    expect(clock.pending).toBe(1)
    ac.abort()
    await expect(slept).rejects.toBeInstanceOf(CanceledError)
    expect(clock.pending).toBe(0)
    await clock.advance(200)
  })

  it('runAll jumps to each deadline and stops runaway rescheduling at the limit', async () => {
    const clock = new VirtualClock()
    let n = 0
    clock.setTimeout(() => n++, 500)
    clock.setTimeout(() => n++, 50)
    expect(await clock.runAll()).toBe(2)
    expect(clock.now()).toBe(500)
    const again = (): void => {
      clock.setTimeout(again, 1)
    }
    again()
    await expect(clock.runAll(10)).rejects.toThrow(/more than 10/)
  })
})

describe('seededRandom', () => {
  it('is deterministic per seed, in [0,1) and differs across seeds', () => {
    const a = seededRandom(7)
    const b = seededRandom(7)
    const c = seededRandom(8)
    const xs = Array.from({ length: 1000 }, () => a.next())
    expect(Array.from({ length: 1000 }, () => b.next())).toEqual(xs)
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true)
    expect(c.next()).not.toBe(xs[0])
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length
    expect(mean).toBeGreaterThan(0.4)
    expect(mean).toBeLessThan(0.6)
  })

  it('fixedRandom cycles through its values', () => {
    const r = fixedRandom(0, 0.5)
    expect([r.next(), r.next(), r.next()]).toEqual([0, 0.5, 0])
  })
})
