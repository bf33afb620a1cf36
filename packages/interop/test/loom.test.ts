/**
 * The seed's Loom model (svc-interop §10): producer (listener) → bounded mpsc(work=2) → consumer
 * (worker) with shutdown, explored over many deterministic interleavings. Invariants: no deadlock,
 * shutdown is never lost, at most 2 jobs wait in the queue, every job either runs exactly once or
 * is refused with a typed error (never both, never lost).
 */
import { describe, expect, it } from 'vitest'
import { Supervisor, WorkPool, isRonError } from '@ron/core'
import { VirtualClock, exploreSchedules, settleWith } from '@ron/core/testing'

describe('Loom model: listener → work(2) → worker with shutdown', () => {
  it('no deadlock, no lost shutdown, at most 2 queued, every job runs once or is refused', async () => {
    await exploreSchedules(
      150,
      async (s) => {
        const clock = new VirtualClock(0)
        const sup = new Supervisor({ clock })
        const pool = new WorkPool({ name: 'work', capacity: 2, concurrency: 1, supervisor: sup, clock })
        const JOBS = 5
        const ran = new Array<number>(JOBS).fill(0)
        const outcomes: Array<Promise<string>> = []
        let maxQueued = 0
        let shutdownObserved = false

        const listener = async (): Promise<void> => {
          for (let i = 0; i < JOBS; i++) {
            await s.schedule(Promise.resolve(), `request ${i}`)
            const job = pool.submit(async () => {
              ran[i]!++
              await s.schedule(Promise.resolve(), `store receipt ${i}`)
            })
            maxQueued = Math.max(maxQueued, pool.depth)
            outcomes.push(
              job.then(
                () => 'done',
                (e: unknown) => (isRonError(e) ? e.code : 'untyped'),
              ),
            )
          }
        }
        const supervisor = async (): Promise<void> => {
          await s.schedule(Promise.resolve(), 'shutdown')
          pool.stop()
          await pool.drained()
          const report = await sup.shutdown(1000)
          expect(report.aborted).toEqual([])
          shutdownObserved = true
        }

        await settleWith(s, Promise.all([listener(), supervisor()]), 'listener + shutdown')
        const results = await settleWith(s, Promise.all(outcomes), 'job outcomes')
        expect(shutdownObserved).toBe(true)
        expect(maxQueued).toBeLessThanOrEqual(2)
        results.forEach((r, i) => {
          if (r === 'done') expect(ran[i]).toBe(1)
          else {
            expect(['Busy', 'Draining']).toContain(r)
            expect(ran[i]).toBe(0)
          }
        })
        expect(pool.depth).toBe(0)
        expect(pool.inFlight).toBe(0)
      },
      { seed: 20251126 },
    )
  })
})
