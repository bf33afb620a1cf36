import { describe, expect, it } from 'vitest'
import { Admission, BusyError } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { holdAdmission, releaseAdmission } from '../../src/resilience/admission.js'

function busy(fn: () => unknown): BusyError {
  try {
    fn()
  } catch (e) {
    if (e instanceof BusyError) return e
    throw e
  }
  throw new Error('expected BusyError')
}

describe('Admission', () => {
  it('caps concurrent admissions per key, naming itself as the endpoint of the Busy error', () => {
    const gate = new Admission({ name: 'ip', maxConcurrentPerKey: 2 })
    const r1 = gate.acquire('10.0.0.1')
    gate.acquire('10.0.0.1')
    const e = busy(() => gate.acquire('10.0.0.1'))
    expect(e.retryAfterMs).toBe(1000)
    expect(e.details).toMatchObject({ key: '10.0.0.1', endpoint: 'ip' })
    // Another key is unaffected.
    gate.acquire('10.0.0.2')
    r1()
    expect(gate.active('10.0.0.1')).toBe(1)
    gate.acquire('10.0.0.1')
  })

  it('release is idempotent', () => {
    const gate = new Admission({ maxConcurrentPerKey: 1 })
    const release = gate.acquire('k')
    release()
    release()
    expect(gate.active('k')).toBe(0)
    const r = gate.acquire('k')
    expect(() => gate.acquire('k')).toThrow(BusyError)
    r()
  })

  it('applies the per-key rate with retryAfterMs from the bucket', async () => {
    const clock = new VirtualClock()
    const gate = new Admission({ rate: { capacity: 2, refillPerSec: 4 }, clock })
    gate.acquire('a')()
    gate.acquire('a')()
    const e = busy(() => gate.acquire('a'))
    expect(e.retryAfterMs).toBe(250)
    gate.acquire('b')()
    await clock.advance(250)
    gate.acquire('a')()
  })

  it('forgets idle keys so memory stays bounded', async () => {
    const clock = new VirtualClock()
    const plain = new Admission({ maxKeys: 3 })
    for (let i = 0; i < 100; i++) plain.acquire(`k${i}`)()
    expect(plain.size).toBeLessThanOrEqual(3)
    const rated = new Admission({ maxKeys: 3, rate: { capacity: 1, refillPerSec: 1 }, clock })
    for (let i = 0; i < 100; i++) rated.acquire(`k${i}`)()
    expect(rated.size).toBeLessThanOrEqual(3)
    await clock.advance(1000)
    rated.acquire('fresh')()
    expect(rated.size).toBeLessThanOrEqual(3)
  })

  it('rejects new keys when maxKeys keys are all busy', () => {
    const gate = new Admission({ maxKeys: 2 })
    gate.acquire('a')
    gate.acquire('b')
    expect(() => gate.acquire('c')).toThrow(BusyError)
    gate.acquire('a')
  })

  it('under key pressure forgets the least recently admitted idle key, and keeps a busy one', () => {
    const clock = new VirtualClock()
    // Spent buckets (capacity 1, no refill while the clock stands): nothing is free to forget.
    const gate = new Admission({ maxKeys: 3, rate: { capacity: 1, refillPerSec: 0.001 }, clock })
    gate.acquire('a')()
    gate.acquire('b')()
    const holdC = gate.acquire('c')
    // A refused attempt on 'a' still counts as its latest use: 'b' is now the least recent idle key.
    expect(() => gate.acquire('a')).toThrow(BusyError)
    gate.acquire('d')()
    expect(() => gate.acquire('a')).toThrow(BusyError) // kept, with its spent bucket
    gate.acquire('b')() // forgotten: it starts over with a full bucket
    expect(gate.size).toBeLessThanOrEqual(3)
    holdC()
  })

  it('evicting an idle key with a spent bucket happens only under key pressure (its rate state is kept otherwise)', async () => {
    const clock = new VirtualClock()
    const gate = new Admission({ maxKeys: 10, rate: { capacity: 1, refillPerSec: 1 }, clock })
    gate.acquire('a')()
    expect(() => gate.acquire('a')).toThrow(BusyError)
    await clock.advance(1000)
    gate.acquire('a')()
  })
})

describe('holdAdmission / releaseAdmission (the host path without a release closure)', () => {
  it('counts against the same per-key cap and rate as acquire, and frees one unit per release', () => {
    const gate = new Admission({ name: 'ip', maxConcurrentPerKey: 2 })
    const h1 = holdAdmission(gate, '10.0.0.1')
    const r2 = gate.acquire('10.0.0.1')
    expect(gate.active('10.0.0.1')).toBe(2)
    expect(busy(() => holdAdmission(gate, '10.0.0.1')).details).toMatchObject({ key: '10.0.0.1', reason: 'per_ip' })
    // A refused hold took nothing.
    expect(gate.active('10.0.0.1')).toBe(2)
    releaseAdmission(h1)
    expect(gate.active('10.0.0.1')).toBe(1)
    holdAdmission(gate, '10.0.0.1')
    r2()
    expect(gate.active('10.0.0.1')).toBe(1)
  })

  it('applies the per-key token bucket', () => {
    const gate = new Admission({ rate: { capacity: 1, refillPerSec: 1 }, clock: new VirtualClock(0) })
    releaseAdmission(holdAdmission(gate, 'k'))
    expect(busy(() => holdAdmission(gate, 'k')).details).toMatchObject({ reason: 'per_ip_rate' })
  })
})
