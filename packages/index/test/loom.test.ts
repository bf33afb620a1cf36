/**
 * The seed's Loom models (svc-index section 10), explored as deterministic schedules with
 * `exploreSchedules` (fast-check's scheduler): every scheduled step is a choice point and each run
 * tries another interleaving, reproducible from the reported seed.
 */
import { describe, expect, it } from 'vitest'
import { MemoryTransport, Supervisor, WorkPool, addressOf, isRonError } from '@ron/core'
import type { DispatchTarget, RonResponse } from '@ron/core'
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

  it("the index's own work queue (capacity 1, one resolver) under requests, a reload and close(): each answered once, none lost, no deadlock", async () => {
    let run = 0
    const seen = new Set<string>()
    await exploreSchedules(
      40,
      async (s) => {
        run++
        const clock = new VirtualClock(1_000_000)
        const transport = new MemoryTransport({ clock })
        const asked = new Map<string, number>()
        // The peer answers "not found" only when the explorer releases it: the resolver's job is
        // held on the index's own queue and pool for as long as the schedule says.
        const peer: DispatchTarget = {
          dispatch: async (req): Promise<RonResponse> => {
            const key = decodeURIComponent(req.url.replace(/^\/resolve\//, ''))
            asked.set(key, (asked.get(key) ?? 0) + 1)
            await s.schedule(Promise.resolve(), `peer answers ${key.slice(0, 12)}`)
            const bytes = new TextEncoder().encode(JSON.stringify({ error: { code: 'NotFound', message: 'no', retryable: false, corr_id: 'x', details: {} } }))
            return { status: 404, headers: { 'content-type': 'application/json' }, body: (async function* () { yield bytes })() }
          },
        }
        transport.mount('peer-1', peer)
        const svc = await createIndexService(
          { amnesia: true, workQueue: 1, resolverWorkers: 1, peers: { targets: ['peer-1'], alpha: 1, beta: 0, tries: 1 }, drainDeadlineMs: 600_000 },
          transport,
          { clock },
        )
        transport.mount('index', svc)
        const keys = [0, 1, 2, 3].map((i) => addressOf(new TextEncoder().encode(`model ${run} ${i}`)))
        const requests = keys.map((key, i) =>
          s
            .schedule(Promise.resolve(), `request ${i}`)
            .then(() => transport.request('index', { method: 'GET', path: `/resolve/${key}` }))
            .then(async (r) => {
              const code = r.status === 404 ? 'NotFound' : (await r.json<{ error: { code: string } }>()).error.code
              if (r.status === 404) await r.dump()
              return { key, status: r.status, code }
            }),
        )
        let closing = false
        const reload = s.schedule(Promise.resolve(), 'reload').then(() =>
          svc.reload({ cache: { negativeTtlMs: 50 } }).then(
            () => 'reloaded',
            (e: unknown) => {
              // Only a closing service refuses a valid reload.
              expect(closing).toBe(true)
              return isRonError(e) ? e.code : 'error'
            },
          ),
        )
        const shutdown = s.schedule(Promise.resolve(), 'close').then(() => {
          closing = true
          return svc.close()
        })
        const [answers] = await settleWith(s, Promise.all([Promise.all(requests), reload, shutdown]), 'requests, reload and close')
        for (const a of answers) {
          // Answered (not found), refused by the full queue, or refused by the drain: never a 500.
          expect(['404 NotFound', '429 Busy', '503 Draining', '503 Closed'], `${a.key}`).toContain(`${a.status} ${a.code}`)
          seen.add(String(a.status))
          const n = asked.get(a.key) ?? 0
          // A job runs once: an answered key was asked exactly once, a refused one never.
          expect(n, `${a.key} ${a.status}`).toBe(a.status === 404 ? 1 : 0)
        }
        expect(svc.health().ready).toBe(false)
        expect(await svc.metricsText()).toMatch(/queue_depth\{queue="work"[^}]*\} 0/)
        await transport.close()
      },
      { seed: 11 },
    )
    // The schedules explored reach every outcome: answered, refused by the full queue, by the drain.
    expect([...seen].sort()).toEqual(['404', '429', '503'])
  })
})
