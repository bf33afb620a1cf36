import { describe, expect, it } from 'vitest'
import { ClosedError, Supervisor } from '@ron/core'
import type { SupervisorEvent } from '@ron/core'
import { VirtualClock, seededRandom } from '@ron/core/testing'
import { RecordingMetrics } from '../../src/testing/index.js'

function crashing(): (signal: AbortSignal) => Promise<void> {
  return () => Promise.reject(new Error('boom'))
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

function setup(opts: ConstructorParameters<typeof Supervisor>[0] = {}) {
  const clock = new VirtualClock()
  const metrics = new RecordingMetrics()
  const events: SupervisorEvent[] = []
  const sup = new Supervisor({ clock, metrics, random: seededRandom(1), onEvent: (e) => events.push(e), ...opts })
  const delays = (): number[] => events.flatMap((e) => (e.type === 'task:restarting' ? [e.delayMs] : []))
  return { clock, metrics, events, sup, delays }
}

describe('Supervisor backoff', () => {
  it('restart delays double from 100 ms and are capped at 5 s', async () => {
    const { clock, sup, delays } = setup({ backoff: { jitter: 'none' }, intensity: { maxRestarts: 100 } })
    const h = sup.spawn('loop', crashing())
    await clock.advance(60_000)
    expect(delays().slice(0, 9)).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000])
    expect(h.restarts).toBeGreaterThanOrEqual(9)
    await sup.shutdown(0)
  })

  it('equal jitter keeps each delay in [d/2, d) and full jitter in [0, d), reproducibly for a seed', async () => {
    for (const jitter of ['equal', 'full'] as const) {
      const runs: number[][] = []
      for (let i = 0; i < 2; i++) {
        const { clock, sup, delays } = setup({ backoff: { jitter }, intensity: { maxRestarts: 100 }, random: seededRandom(99) })
        sup.spawn('j', crashing())
        await clock.advance(60_000)
        const ds = delays().slice(0, 10)
        ds.forEach((d, k) => {
          const exp = Math.min(5000, 100 * 2 ** k)
          expect(d).toBeLessThan(exp)
          expect(d).toBeGreaterThanOrEqual(jitter === 'equal' ? exp / 2 : 0)
        })
        runs.push(ds)
        await sup.shutdown(0)
      }
      expect(runs[0]).toEqual(runs[1])
      expect(new Set(runs[0]).size).toBeGreaterThan(5)
    }
  })

  it('backoff starts again from the base once earlier crashes left the 60 s window', async () => {
    const { clock, sup, delays } = setup({ backoff: { jitter: 'none' } })
    let runs = 0
    sup.spawn('healed', async (signal) => {
      runs++
      if (runs === 4) await clock.sleep(61_000, signal)
      throw new Error('crash')
    })
    await clock.advance(70_000)
    expect(delays().slice(0, 4)).toEqual([100, 200, 400, 100])
    await sup.shutdown(0)
  })

  it('actually waits the backoff on the clock before restarting', async () => {
    const { clock, sup } = setup({ backoff: { jitter: 'none' } })
    let runs = 0
    sup.spawn('w', () => {
      runs++
      return Promise.reject(new Error('x'))
    })
    await clock.advance(0)
    expect(runs).toBe(1)
    await clock.advance(99)
    expect(runs).toBe(1)
    await clock.advance(1)
    expect(runs).toBe(2)
    await sup.shutdown(0)
  })
})

describe('Supervisor crash-loop escalation', () => {
  it('escalates on the 6th crash within 60 s: task stopped, supervisor not live with the reason', async () => {
    const { clock, sup, metrics } = setup()
    const h = sup.spawn('repair', crashing())
    await clock.runAll()
    await h.done
    expect(h.state).toBe('escalated')
    expect(h.restarts).toBe(5)
    expect(metrics.counter('tasks_panicked_total', { kind: 'repair' })).toBe(6)
    expect(sup.health()).toEqual({ live: false, reason: 'crash loop: repair restarted 6 times in 60s' })
    expect(clock.pending).toBe(0)
    expect(sup.describe()).toMatchObject([{ kind: 'repair', state: 'escalated', restarts: 5 }])
    expect(await sup.shutdown(100)).toEqual({ drained: [], aborted: [] })
  })

  it('does not escalate after only 5 crashes', async () => {
    const { clock, sup } = setup()
    let runs = 0
    const h = sup.spawn('five', async (signal) => {
      runs++
      if (runs <= 5) throw new Error('crash')
      await untilAborted(signal)
    })
    await clock.advance(60_000)
    expect(runs).toBe(6)
    expect(h.state).toBe('running')
    expect(sup.health()).toEqual({ live: true })
    await sup.shutdown(0)
  })

  it('does not escalate when the crashes are spread over more than 60 s', async () => {
    const { clock, sup } = setup()
    let runs = 0
    const h = sup.spawn('slow-crash', async (signal) => {
      runs++
      await clock.sleep(15_000, signal)
      throw new Error('crash')
    })
    await clock.advance(300_000)
    expect(runs).toBeGreaterThanOrEqual(12)
    expect(h.state).not.toBe('escalated')
    expect(sup.health().live).toBe(true)
    await sup.shutdown(0)
  })

  it('a non-critical crash loop is reported but the supervisor stays live', async () => {
    const { clock, sup, events } = setup()
    const h = sup.spawn('optional', crashing(), { critical: false })
    await clock.runAll()
    await h.done
    expect(h.state).toBe('escalated')
    expect(sup.health()).toEqual({ live: true, reason: 'crash loop: optional restarted 6 times in 60s' })
    expect(events.some((e) => e.type === 'task:escalated' && !e.critical)).toBe(true)
  })
})

describe('Supervisor policies and counters', () => {
  it('returning normally ends an on-failure task; never does not restart; always restarts after a return', async () => {
    const { clock, sup, metrics } = setup()
    const ok = sup.spawn('ok', () => Promise.resolve())
    const never = sup.spawn('never', crashing(), { restart: 'never' })
    let alwaysRuns = 0
    sup.spawn('always', () => {
      alwaysRuns++
      return Promise.resolve()
    }, { restart: 'always' })
    await clock.advance(1000)
    await ok.done
    await never.done
    expect(ok.state).toBe('completed')
    expect(never.state).toBe('failed')
    expect(never.lastError).toBeInstanceOf(Error)
    expect(alwaysRuns).toBeGreaterThan(5)
    expect(metrics.counter('tasks_spawned_total', { kind: 'ok' })).toBe(1)
    expect(metrics.counter('tasks_panicked_total', { kind: 'never' })).toBe(1)
    await sup.shutdown(0)
    expect(metrics.counter('tasks_canceled_total', { kind: 'always' })).toBe(1)
  })

  it('handle.stop aborts only that task and counts it canceled', async () => {
    const { sup, metrics } = setup()
    const a = sup.spawn('a', untilAborted)
    const b = sup.spawn('b', untilAborted)
    await a.stop()
    expect(a.state).toBe('canceled')
    expect(b.state).toBe('running')
    expect(metrics.counter('tasks_canceled_total', { kind: 'a' })).toBe(1)
    expect(sup.describe().map((t) => t.kind)).toEqual(['b'])
    await sup.shutdown(0)
  })

  it('describe lists tasks with their state', async () => {
    const { clock, sup } = setup()
    sup.spawn('idle', untilAborted)
    sup.spawn('flaky', crashing())
    await clock.advance(0)
    expect(sup.describe()).toEqual([
      { kind: 'idle', state: 'running', restarts: 0, restart: 'on-failure', critical: true },
      { kind: 'flaky', state: 'backoff', restarts: 0, restart: 'on-failure', critical: true },
    ])
    await sup.shutdown(0)
  })
})

describe('Supervisor shutdown', () => {
  it('drains tasks that honour their signal and reports stragglers as aborted at the deadline', async () => {
    const { clock, sup, metrics } = setup()
    sup.spawn('polite', async (signal) => {
      await untilAborted(signal)
      await clock.sleep(500) // cleanup that takes a while but fits in the deadline
    })
    sup.spawn('stubborn', () => new Promise<void>(() => {}))
    const done = sup.shutdown(1000)
    await clock.advance(999)
    let settled = false
    void done.then(() => {
      settled = true
    })
    await clock.flush()
    expect(settled).toBe(false)
    await clock.advance(1)
    expect(await done).toEqual({ drained: ['polite'], aborted: ['stubborn'] })
    expect(metrics.counter('tasks_aborted_total', { kind: 'stubborn' })).toBe(1)
    expect(metrics.counter('tasks_aborted_total', { kind: 'polite' })).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('shutdown(0) reports a task busy with work as aborted (not canceled) even when it ends at once; an idle one is canceled', async () => {
    const { sup, metrics } = setup()
    sup.spawn('worker', async (signal, self) => {
      self.setBusy(true)
      await untilAborted(signal)
      self.setBusy(false)
    })
    sup.spawn('idle', untilAborted)
    expect(await sup.shutdown(0)).toEqual({ drained: ['idle'], aborted: ['worker'] })
    expect(metrics.counter('tasks_aborted_total', { kind: 'worker' })).toBe(1)
    expect(metrics.counter('tasks_canceled_total', { kind: 'worker' })).toBe(0)
    expect(metrics.counter('tasks_canceled_total', { kind: 'idle' })).toBe(1)
  })

  it('resolves as soon as everything drained, without waiting for the deadline, and leaves no timer', async () => {
    const { clock, sup } = setup()
    sup.spawn('a', untilAborted)
    sup.spawn('b', crashing()) // in backoff: its sleep must be aborted
    await clock.advance(0)
    expect(clock.pending).toBe(1)
    const report = await sup.shutdown(3000)
    expect(report).toEqual({ drained: ['a', 'b'], aborted: [] })
    expect(clock.pending).toBe(0)
    expect(clock.now()).toBe(0)
  })

  it('is idempotent and spawn after shutdown throws ClosedError', async () => {
    const { sup } = setup()
    sup.spawn('a', untilAborted)
    const first = sup.shutdown(100)
    expect(sup.shutdown(5)).toBe(first)
    await first
    expect(() => sup.spawn('late', untilAborted)).toThrow(ClosedError)
  })
})
