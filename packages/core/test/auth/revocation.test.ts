import { describe, expect, it } from 'vitest'
import { RevocationSet } from '../../src/auth/index.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'

const T0 = 1_800_000_000

describe('RevocationSet', () => {
  it('holds a revoked jti until its token exp plus the grace period', async () => {
    const clock = new VirtualClock(T0 * 1000)
    const set = new RevocationSet({ clock, graceSec: 60 })
    set.add('a', T0 + 10)
    expect(set.isRevoked('a')).toBe(true)
    expect(set.isRevoked('b')).toBe(false)
    await clock.advanceTo((T0 + 70) * 1000 - 1)
    expect(set.isRevoked('a')).toBe(true)
    await clock.advance(1)
    expect(set.isRevoked('a')).toBe(false)
    expect(set.size).toBe(0)
  })

  it('ignores entries whose tokens already expired', () => {
    const clock = new VirtualClock(T0 * 1000)
    const set = new RevocationSet({ clock, graceSec: 0 })
    set.add('old', T0 - 1)
    expect(set.size).toBe(0)
    expect(set.isRevoked('old')).toBe(false)
  })

  it('is bounded: purges expired entries first, then evicts the soonest-expiring', async () => {
    const clock = new VirtualClock(T0 * 1000)
    const set = new RevocationSet({ clock, capacity: 3, graceSec: 0 })
    set.add('short', T0 + 5)
    set.add('long', T0 + 500)
    set.add('forever')
    await clock.advance(6000)
    set.add('new1', T0 + 100) // 'short' expired: purged, nothing evicted
    expect(set.evicted).toBe(0)
    expect(set.size).toBe(3)
    set.add('new2', T0 + 1000) // full, none expired: evict soonest (new1)
    expect(set.evicted).toBe(1)
    expect(set.size).toBe(3)
    expect(set.isRevoked('new1')).toBe(false)
    expect(['long', 'forever', 'new2'].every((j) => set.isRevoked(j))).toBe(true)
  })

  it('re-adding a jti keeps the later expiry and does not grow the set', () => {
    const clock = new VirtualClock(T0 * 1000)
    const set = new RevocationSet({ clock, capacity: 1, graceSec: 0 })
    set.add('a', T0 + 100)
    set.add('a', T0 + 10)
    expect(set.size).toBe(1)
    expect(set.evicted).toBe(0)
    set.delete('a')
    expect(set.isRevoked('a')).toBe(false)
  })

  it('purge() drops expired entries and reports how many', async () => {
    const clock = new VirtualClock(T0 * 1000)
    const set = new RevocationSet({ clock, graceSec: 0 })
    for (let i = 1; i <= 10; i++) set.add(`j${i}`, T0 + i)
    await clock.advance(5000)
    expect(set.purge()).toBe(5)
    expect(set.size).toBe(5)
  })
})
