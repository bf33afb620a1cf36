import { describe, expect, it } from 'vitest'
import { BoundedQueue, BusyError, ClosedError, Supervisor, Watch, WorkPool, isRonError } from '@ron/core'
import { VirtualClock, exploreSchedules, settleWith } from '@ron/core/testing'
import type { Scheduler } from '@ron/core/testing'

/** A scheduling point: the scheduler decides when this await resumes. */
function point(s: Scheduler, label: string): Promise<string> {
  return s.schedule(Promise.resolve(label), label)
}

describe('Loom model: producer -> BoundedQueue(2) -> worker with shutdown watch', () => {
  it('explores 300 schedules: no deadlock, shutdown observed, every job processed once or reported, at most 2 queued', async () => {
    await exploreSchedules(300, async (s) => {
      const JOBS = 6
      const q = new BoundedQueue<number>({ name: 'model', capacity: 2 })
      const shutdown = new Watch(false)
      const processed: number[] = []
      const rejected: number[] = []
      const undelivered: number[] = []
      let maxDepth = 0
      let workerSawShutdown = false

      const producer = (async () => {
        for (let job = 0; job < JOBS; job++) {
          await point(s, `send ${job}`)
          if (shutdown.get()) {
            undelivered.push(job) // intake stopped: the producer reports it instead of sending
            continue
          }
          try {
            q.trySend(job)
          } catch (e) {
            if (!(e instanceof BusyError)) throw e
            rejected.push(job)
          }
          maxDepth = Math.max(maxDepth, q.depth)
        }
      })()

      const worker = (async () => {
        const ac = new AbortController()
        const off = shutdown.subscribe((v) => {
          if (v) ac.abort()
        })
        try {
          for (;;) {
            let job: number
            try {
              job = await q.recv(ac.signal)
            } catch (e) {
              if (!isRonError(e, 'Canceled') && !(e instanceof ClosedError)) throw e
              workerSawShutdown = true
              return
            }
            await point(s, `process ${job}`)
            processed.push(job)
          }
        } finally {
          off()
        }
      })()

      const stopper = (async () => {
        await point(s, 'shutdown')
        shutdown.set(true)
        q.close()
      })()

      await settleWith(s, Promise.all([producer, worker, stopper]), 'producer/worker/shutdown')
      // What the worker did not take is still in the queue: report it as undelivered.
      for (let j = q.tryRecv(); j !== undefined; j = q.tryRecv()) undelivered.push(j)

      expect(workerSawShutdown).toBe(true)
      expect(maxDepth).toBeLessThanOrEqual(2)
      expect(new Set(processed).size).toBe(processed.length)
      const all = [...processed, ...rejected, ...undelivered].sort((a, b) => a - b)
      expect(all).toEqual(Array.from({ length: JOBS }, (_, i) => i))
      // FIFO: the worker processes in send order.
      expect(processed).toEqual([...processed].sort((a, b) => a - b))
    })
  })

  it('explores 200 schedules of a WorkPool(capacity 2) under supervisor shutdown: every submit settles exactly once', async () => {
    await exploreSchedules(200, async (s) => {
      const clock = new VirtualClock()
      const supervisor = new Supervisor({ clock })
      const pool = new WorkPool({ name: 'model', capacity: 2, concurrency: 1, supervisor })
      const outcomes = new Map<number, string>()
      const runs = new Map<number, number>()
      const submits: Promise<void>[] = []

      const producer = (async () => {
        for (let job = 0; job < 5; job++) {
          await point(s, `submit ${job}`)
          submits.push(
            pool
              .submit(async () => {
                runs.set(job, (runs.get(job) ?? 0) + 1)
                await point(s, `run ${job}`)
                return job
              })
              .then(
                () => void outcomes.set(job, 'ok'),
                (e: unknown) => {
                  expect(outcomes.has(job)).toBe(false)
                  outcomes.set(job, isRonError(e) ? e.code : 'other')
                },
              ),
          )
          expect(pool.depth).toBeLessThanOrEqual(2)
        }
      })()

      const stopper = (async () => {
        await point(s, 'stop')
        pool.stop()
        await point(s, 'shutdown')
        // Deadline 0 with virtual time: cooperative abort only.
        const report = supervisor.shutdown(0)
        await clock.advance(0)
        await report
      })()

      await settleWith(s, Promise.all([producer, stopper]).then(() => Promise.all(submits)), 'pool model')
      for (let job = 0; job < 5; job++) {
        expect(['ok', 'Busy', 'Draining', 'Canceled']).toContain(outcomes.get(job))
        expect(runs.get(job) ?? 0).toBeLessThanOrEqual(1)
      }
      expect(clock.pending).toBe(0)
    })
  })
})

describe('Loom model: Watch swap', () => {
  it('explores 200 schedules: readers see the old or the new snapshot, never a mix, and versions never go back', async () => {
    await exploreSchedules(200, async (s) => {
      interface Config {
        readonly gen: number
        readonly a: string
        readonly b: string
      }
      const make = (gen: number): Config => Object.freeze({ gen, a: `a${gen}`, b: `b${gen}` })
      const cfg = new Watch<Config>(make(0))
      const seen: number[][] = [[], [], []]

      const writer = (async () => {
        for (let gen = 1; gen <= 3; gen++) {
          await point(s, `set ${gen}`)
          cfg.set(make(gen))
        }
      })()

      const readers = seen.map(async (log, r) => {
        for (let i = 0; i < 4; i++) {
          const snap = cfg.get()
          await point(s, `reader ${r} read ${i}`)
          // The snapshot held across an await is internally consistent and still the same object.
          expect(snap.a).toBe(`a${snap.gen}`)
          expect(snap.b).toBe(`b${snap.gen}`)
          log.push(snap.gen)
        }
      })

      const waiter = (async () => {
        const before = cfg.get().gen
        if (before === 3) return
        const next = await cfg.changed()
        expect(next.gen).toBeGreaterThan(before)
        expect(next.b).toBe(`b${next.gen}`)
      })()

      await settleWith(s, Promise.all([writer, waiter, ...readers]), 'watch swap')
      for (const log of seen) expect(log).toEqual([...log].sort((x, y) => x - y))
      expect(cfg.get().gen).toBe(3)
      expect(cfg.version).toBe(3)
    })
  })
})
