/**
 * The seed's Loom models (svc-index section 10), explored as deterministic schedules with
 * `exploreSchedules` (fast-check's scheduler): every scheduled step is a choice point and each run
 * tries another interleaving, reproducible from the reported seed.
 */
import { describe, expect, it } from 'vitest'
import { Supervisor, WorkPool, isRonError } from '@ron/core'
import { VirtualClock, exploreSchedules, settleWith } from '@ron/core/testing'
import { createIndexService } from '../src/index.js'

describe('Loom models by schedule exploration', () => {
  it('producer → work queue (capacity 1) → resolver with shutdown: no deadlock, no lost shutdown, no job run twice or lost', async () => {
    await exploreSchedules(
      150,
      async (s) => {
        const clock = new VirtualClock()
        const supervisor = new Supervisor({ clock })
        const pool = new WorkPool({ name: 'work', capacity: 1, concurrency: 1, supervisor, clock })
        const N = 4
        const ran = new Array<number>(N).fill(0)
        const outcomes: Array<Promise<'ran' | 'busy' | 'draining' | 'canceled'>> = []
        let stopped = false
        for (let i = 0; i < N; i++) {
          outcomes.push(
            s
              .schedule(Promise.resolve(), `submit ${i}`)
              .then(() =>
                pool.submit(async () => {
                  await s.schedule(Promise.resolve(), `job ${i} runs`)
                  ran[i]!++
                }),
              )
              .then(
                () => 'ran' as const,
                (e: unknown) => {
                  if (isRonError(e, 'Busy')) return 'busy' as const
                  if (isRonError(e, 'Draining')) {
                    // A Draining rejection only ever follows the shutdown signal: it was not lost.
                    expect(stopped).toBe(true)
                    return 'draining' as const
                  }
                  if (isRonError(e, 'Canceled')) return 'canceled' as const
                  throw e
                },
              ),
          )
        }
        const shutdown = s.schedule(Promise.resolve(), 'shutdown').then(async () => {
          stopped = true
          pool.stop()
          await pool.drained()
          await supervisor.shutdown(0)
        })
        const results = await settleWith(s, Promise.all([...outcomes, shutdown]), 'producers, worker and shutdown')
        const jobOutcomes = results.slice(0, N) as string[]
        jobOutcomes.forEach((o, i) => {
          // Accepted jobs ran exactly once; refused ones never ran.
          expect(ran[i], `job ${i} (${o})`).toBe(o === 'ran' ? 1 : 0)
        })
        expect(pool.depth).toBe(0)
        expect(pool.inFlight).toBe(0)
        // After shutdown, intake is closed for good.
        await expect(pool.submit(() => Promise.resolve())).rejects.toSatisfy((e: unknown) => isRonError(e, 'Draining'))
      },
      { seed: 4 },
    )
  })

  it('config swap: a reader always sees one whole snapshot, never a torn mix of two reloads', async () => {
    const svc = await createIndexService({ amnesia: true, peers: { alpha: 1, beta: 1 }, cache: { negativeTtlMs: 10 } })
    try {
      let k = 1
      await exploreSchedules(
        60,
        async (s) => {
          const reloads: Array<Promise<void>> = []
          for (let i = 0; i < 3; i++) {
            const n = (k++ % 15) + 1
            reloads.push(s.schedule(Promise.resolve(), `reload ${n}`).then(() => svc.reload({ peers: { alpha: n, beta: n }, cache: { negativeTtlMs: n * 10 } })))
          }
          const readers: Array<Promise<void>> = []
          for (let r = 0; r < 3; r++) {
            readers.push(
              s.schedule(Promise.resolve(), `reader ${r}`).then(async () => {
                const snap = svc.config()
                await s.schedule(Promise.resolve(), `reader ${r} works`)
                // The snapshot a reader holds does not change under it, and is whole.
                expect(snap.peers.alpha).toBe(snap.peers.beta)
                expect(snap.cache.negativeTtlMs).toBe(snap.peers.alpha * 10)
                expect(Object.isFrozen(snap)).toBe(true)
              }),
            )
          }
          await settleWith(s, Promise.all([...reloads, ...readers]), 'reloads and readers')
          const last = svc.config()
          expect(last.peers.alpha).toBe(last.peers.beta)
        },
        { seed: 7 },
      )
    } finally {
      await svc.close()
    }
  })
})
