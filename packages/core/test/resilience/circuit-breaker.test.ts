import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BreakerOpenError, CanceledError, CircuitBreaker } from '@ron/core'
import type { BreakerStateChange } from '@ron/core'
import { VirtualClock, deferred, type Deferred } from '@ron/core/testing'
import { RecordingMetrics } from '../../src/testing/index.js'

const ok = (): Promise<string> => Promise.resolve('ok')
const fail = (): Promise<never> => Promise.reject(new Error('down'))

async function run(b: CircuitBreaker, outcomes: boolean[]): Promise<void> {
  for (const good of outcomes) await b.execute(good ? ok : fail).catch(() => undefined)
}

describe('CircuitBreaker', () => {
  it('stays closed below minCalls even at 100% failures, and opens once minCalls and the ratio are met', async () => {
    const clock = new VirtualClock()
    const b = new CircuitBreaker({ clock, minCalls: 4, errorRatio: 0.5 })
    await run(b, [false, false, false])
    expect(b.state).toBe('closed')
    await run(b, [false])
    expect(b.state).toBe('open')
  })

  it('does not open while the failure ratio is under the threshold', async () => {
    const b = new CircuitBreaker({ clock: new VirtualClock(), minCalls: 4, errorRatio: 0.5 })
    await run(b, [true, true, true, false, true, false, true])
    expect(b.state).toBe('closed')
  })

  it('rejects with BreakerOpen and the cooldown left while open, without calling fn', async () => {
    const clock = new VirtualClock()
    const b = new CircuitBreaker({ name: 'peer-a', clock, minCalls: 1, cooldownMs: 5000 })
    await run(b, [false])
    await clock.advance(1200)
    let called = false
    const e = await b
      .execute(() => {
        called = true
        return ok()
      })
      .catch((x: unknown) => x)
    expect(called).toBe(false)
    expect(e).toBeInstanceOf(BreakerOpenError)
    expect((e as BreakerOpenError).retryAfterMs).toBe(3800)
    expect((e as BreakerOpenError).details).toEqual({ breaker: 'peer-a' })
  })

  it('goes half-open after the cooldown (lazily, no timer), closes when the probe succeeds', async () => {
    const clock = new VirtualClock()
    const metrics = new RecordingMetrics()
    const events: BreakerStateChange['type'][] = []
    const b = new CircuitBreaker({ name: 'x', clock, minCalls: 1, cooldownMs: 5000, metrics })
    const off = b.onStateChange((e) => events.push(e.type))
    await run(b, [false])
    // SPEC.md 4: breaker_state{target} is 0 closed, 1 open, 2 half-open.
    expect(metrics.gauge('breaker_state', { target: 'x' })).toBe(1)
    expect(clock.pending).toBe(0)
    await clock.advance(5000)
    expect(b.state).toBe('half-open')
    expect(metrics.gauge('breaker_state', { target: 'x' })).toBe(2)
    await expect(b.execute(ok)).resolves.toBe('ok')
    expect(b.state).toBe('closed')
    expect(metrics.gauge('breaker_state', { target: 'x' })).toBe(0)
    expect(events).toEqual(['breaker:opened', 'breaker:half-opened', 'breaker:closed'])
    off()
    await run(b, [false])
    expect(events).toHaveLength(3)
  })

  it('a failed probe opens it again for a new cooldown', async () => {
    const clock = new VirtualClock()
    const b = new CircuitBreaker({ clock, minCalls: 1, cooldownMs: 1000 })
    await run(b, [false])
    await clock.advance(1000)
    await run(b, [false])
    expect(b.state).toBe('open')
    expect(b.toJSON()).toMatchObject({ state: 'open', retryAfterMs: 1000, openedAt: 1000 })
  })

  it('regression: a canceled half-open probe neither closes nor reopens it, and frees its slot', async () => {
    const clock = new VirtualClock()
    const b = new CircuitBreaker({ clock, minCalls: 1, cooldownMs: 1000 })
    await run(b, [false])
    await clock.advance(1000)
    expect(b.state).toBe('half-open')
    await expect(b.execute(() => Promise.reject(new CanceledError('caller gave up')))).rejects.toBeInstanceOf(CanceledError)
    expect(b.state).toBe('half-open')
    await expect(b.execute(ok)).resolves.toBe('ok')
    expect(b.state).toBe('closed')
  })

  it('backwards clock steps do not extend an open cooldown', async () => {
    let now = 10_000
    const clock = { now: () => now, setTimeout: () => ({}), clearTimeout: () => {}, sleep: () => Promise.resolve() }
    const b = new CircuitBreaker({ clock, minCalls: 1, cooldownMs: 1000 })
    await run(b, [false])
    now -= 60_000 // the wall clock steps back a minute (NTP, VM resume)
    expect(b.state).toBe('open')
    now += 1000 // one cooldown later, not 61 s later
    expect(b.state).toBe('half-open')
  })

  it('half-open admits only halfOpenProbes concurrent probes and needs all of them to succeed', async () => {
    const clock = new VirtualClock()
    const b = new CircuitBreaker({ clock, minCalls: 1, cooldownMs: 10, halfOpenProbes: 2 })
    await run(b, [false])
    await clock.advance(10)
    const p1 = deferred()
    const p2 = deferred()
    const a = b.execute(() => p1.promise)
    const c = b.execute(() => p2.promise)
    await expect(b.execute(ok)).rejects.toBeInstanceOf(BreakerOpenError)
    p1.resolve()
    await a
    expect(b.state).toBe('half-open')
    p2.resolve()
    await c
    expect(b.state).toBe('closed')
  })

  it('errors that are not failures (CanceledError by default, or per isFailure) do not open it', async () => {
    const b = new CircuitBreaker({ clock: new VirtualClock(), minCalls: 2 })
    for (let i = 0; i < 5; i++) await b.execute(() => Promise.reject(new CanceledError())).catch(() => undefined)
    expect(b.state).toBe('closed')
    const b2 = new CircuitBreaker({ clock: new VirtualClock(), minCalls: 2, isFailure: (e) => !(e instanceof RangeError) })
    for (let i = 0; i < 5; i++) await b2.execute(() => Promise.reject(new RangeError())).catch(() => undefined)
    expect(b2.state).toBe('closed')
  })

  it('forgets failures that fall out of the rolling window', async () => {
    const clock = new VirtualClock()
    const b = new CircuitBreaker({ clock, minCalls: 4, windowMs: 10_000 })
    await run(b, [false, false, false])
    await clock.advance(11_000)
    await run(b, [true, true, true])
    expect(b.toJSON()).toMatchObject({ calls: 3, failures: 0, state: 'closed' })
    // With the old failures still counted this would be 4 of 7 and open.
    await run(b, [false])
    expect(b.toJSON()).toMatchObject({ calls: 4, failures: 1, state: 'closed' })
  })

  it('toJSON is a serialisable snapshot', async () => {
    const b = new CircuitBreaker({ name: 'snap', clock: new VirtualClock(), minCalls: 10 })
    await run(b, [true, false])
    expect(JSON.parse(JSON.stringify(b))).toEqual({ name: 'snap', state: 'closed', calls: 2, failures: 1 })
  })
})

describe('CircuitBreaker properties', () => {
  it('opens only when minCalls and the error ratio are met, and always when they are', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.double({ min: 0.1, max: 1, noNaN: true }),
        fc.array(fc.oneof(fc.boolean(), fc.constant('wait' as const)), { maxLength: 60 }),
        async (minCalls, errorRatio, ops) => {
          const clock = new VirtualClock()
          const b = new CircuitBreaker({ clock, minCalls, errorRatio, cooldownMs: 100, windowMs: 1_000_000 })
          let calls = 0
          let failures = 0
          for (const op of ops) {
            if (op === 'wait') {
              await clock.advance(100)
              continue
            }
            const before = b.state
            await b.execute(op ? ok : fail).catch(() => undefined)
            const after = b.state
            if (before === 'closed') {
              calls++
              if (!op) failures++
              const met = calls >= minCalls && failures / calls >= errorRatio
              expect(after).toBe(met && !op ? 'open' : 'closed')
            }
            if (before === 'half-open') expect(after).toBe(op ? 'closed' : 'open')
            if (after !== 'closed') {
              calls = 0
              failures = 0
            }
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('never has more than halfOpenProbes probes in flight in one half-open episode', async () => {
    type Op = { t: 'call' } | { t: 'settle'; index: number; good: boolean } | { t: 'wait' }
    const op = fc.oneof(
      fc.constant<Op>({ t: 'call' }),
      fc.record({ t: fc.constant('settle' as const), index: fc.nat(20), good: fc.boolean() }),
      fc.constant<Op>({ t: 'wait' }),
    )
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 80 }), async (probes, ops) => {
        const clock = new VirtualClock()
        const b = new CircuitBreaker({ clock, minCalls: 1, errorRatio: 0.5, cooldownMs: 50, halfOpenProbes: probes })
        let episode = 0
        b.onStateChange((e) => {
          if (e.type === 'breaker:half-opened') episode++
        })
        const pending: { d: Deferred<void>; episode: number | undefined; done: Promise<unknown> }[] = []
        for (const o of ops) {
          if (o.t === 'call') {
            const halfOpen = b.state === 'half-open'
            const d = deferred()
            let admitted = false
            const done = b.execute(() => {
              admitted = true
              return d.promise
            }).catch(() => undefined)
            if (admitted) pending.push({ d, episode: halfOpen ? episode : undefined, done })
            const inEpisode = pending.filter((p) => p.episode === episode && b.state === 'half-open').length
            expect(inEpisode).toBeLessThanOrEqual(probes)
          } else if (o.t === 'settle' && pending.length > 0) {
            const [p] = pending.splice(o.index % pending.length, 1)
            if (o.good) p!.d.resolve()
            else p!.d.reject(new Error('x'))
            await p!.done
          } else if (o.t === 'wait') {
            await clock.advance(50)
          }
        }
        for (const p of pending) p.d.resolve()
        await Promise.all(pending.map((p) => p.done))
      }),
      { numRuns: 300 },
    )
  })
})
