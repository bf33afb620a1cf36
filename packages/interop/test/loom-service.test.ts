/**
 * The seed's Loom model (svc-interop §10) on interop's OWN queue and tasks (issue 21): a real
 * interop service with `work` = 2 and one worker, deliveries from the listener (some repeated),
 * storage writing receipts at points the scheduler picks, and `close()` at any point — explored
 * over many deterministic interleavings (`exploreSchedules`). Invariants (safety: no duplicate
 * apply; liveness: everything drains):
 * - every delivery gets an answer, and it is typed: 202 accepted, 200 duplicate, 429 Busy or 503
 *   Draining/Closed/Brownout (the queue fills: writes shed) — never a 500, never a hang;
 * - at most one 202 per delivery id, and a duplicate names the receipt of that 202;
 * - an acknowledged receipt is in storage (nothing acknowledged before it is stored);
 * - storage never sees more concurrent receipt writes than interop has workers (1);
 * - `close()` resolves, and afterwards the service is unready.
 */
import { describe, expect, it } from 'vitest'
import { MemoryTransport, type DispatchTarget } from '@ron/core'
import { VirtualClock, createTestIssuer, exploreSchedules, type Scheduler } from '@ron/core/testing'
import { createStorageService } from '@ron/storage'
import { createInteropService, signWebhook, toServiceTokens } from '../src/index.js'
import { SECRETS, T0, closeOnVirtualTime, readJson } from './helpers.js'

/**
 * Releases scheduled tasks, and moves virtual time on only when none is left (deadlines of work
 * the drain aborted), until `done` settles; bounded, so a hang fails rather than times out.
 */
async function drive<T>(s: Scheduler, clock: VirtualClock, done: Promise<T>): Promise<T> {
  let settled = false
  const watched = done.finally(() => (settled = true))
  for (let i = 0; i < 5000 && !settled; i++) {
    await new Promise<void>((r) => setImmediate(r))
    if (settled) break
    if (s.count() > 0) await s.waitOne()
    else await clock.advance(100)
  }
  expect(settled, 'the model settles (no deadlock)').toBe(true)
  return watched
}

describe('Loom model: interop listener → work(2) → 1 worker → storage, with shutdown', () => {
  it('no duplicate apply, nothing acknowledged before stored, at most 1 receipt write at once, every delivery answered, close() completes', async () => {
    const clock = new VirtualClock(T0)
    const issuer = createTestIssuer({ clock })
    const storage = await createStorageService({}, undefined, { auth: { keys: issuer.keys }, clock })
    const token = issuer.mint({ sub: 'node:test', scope: ['storage:write'], aud: ['storage'], ttlSec: 86_400 * 30, ron: { maxBytes: 1 << 30 } })
    let run = 0
    // Across runs the interleavings must reach the interesting outcomes, or the model proves nothing.
    const seen = { accepted: 0, duplicate: 0, refused: 0 }
    try {
      await exploreSchedules(
        40,
        async (s: Scheduler) => {
          run++
          let active = 0
          let maxActive = 0
          // Storage as interop sees it: each receipt write reaches storage at a point the scheduler picks.
          const gated: DispatchTarget = {
            async dispatch(req) {
              if (req.method !== 'PUT') return storage.dispatch(req)
              active++
              maxActive = Math.max(maxActive, active)
              try {
                await s.schedule(Promise.resolve(), 'storage writes a receipt')
                return await storage.dispatch(req)
              } finally {
                active--
              }
            },
          }
          const t = new MemoryTransport({ clock, timeoutMs: 600_000 })
          t.mount('storage', gated)
          const interop = await createInteropService(
            { webhooks: { providers: { github: { secrets: [SECRETS.github] } } }, workQueue: 2, workers: 1, drainReadWindowMs: 0, drainDeadlineMs: 5000, rateLimit: false },
            t,
            { clock, tokens: toServiceTokens(token) },
          )
          t.mount('interop', interop)
          const ids = ['a', 'b', 'c', 'a', 'd']
          const answers: Array<Promise<{ id: string; status: number; receipt?: string; code?: string }>> = []
          const listener = async (): Promise<void> => {
            for (const [i, id] of ids.entries()) {
              await s.schedule(Promise.resolve(), `delivery ${i} (${id})`)
              const w = signWebhook({ provider: 'github', secret: SECRETS.github, body: `{"run":${run},"id":"${id}"}`, nowMs: T0, deliveryId: `${run}-${id}` })
              answers.push(
                t.request('interop', { method: w.method, path: w.path, headers: w.headers, body: w.body }).then(async (res) => {
                  const body = await readJson<{ receipt?: string; error?: { code: string } }>(res)
                  return { id, status: res.status, ...(body.receipt === undefined ? {} : { receipt: body.receipt }), ...(body.error === undefined ? {} : { code: body.error.code }) }
                }),
              )
            }
          }
          let closed = false
          const shutdown = async (): Promise<void> => {
            await s.schedule(Promise.resolve(), 'shutdown')
            await interop.close()
            closed = true
          }
                    // The drain waits on virtual time (its deadline): drive() moves it on when nothing is scheduled.
          await drive(s, clock, Promise.all([listener(), shutdown()]))
          const results = await drive(s, clock, Promise.all(answers))
          expect(closed).toBe(true)
          expect(interop.health().ready).toBe(false)
          expect(maxActive).toBeLessThanOrEqual(1)
          const accepted = new Map<string, string>()
          for (const r of results) {
            expect([200, 202, 429, 503], JSON.stringify(r)).toContain(r.status)
            if (r.status === 429) expect(r.code).toBe('Busy')
            if (r.status === 503) expect(['Draining', 'Closed', 'Brownout']).toContain(r.code)
            if (r.status === 202) {
              expect(accepted.has(r.id), `a second 202 for delivery ${r.id}`).toBe(false)
              accepted.set(r.id, r.receipt!)
              const stored = await storage.store.open(r.receipt as never)
              expect(stored, 'an acknowledged receipt is stored').toBeDefined()
              await stored?.close()
            }
          }
          for (const r of results) if (r.status === 200) expect(r.receipt).toBe(accepted.get(r.id))
          seen.accepted += accepted.size
          seen.duplicate += results.filter((r) => r.status === 200).length
          seen.refused += results.filter((r) => r.status >= 429).length
          await t.close()
        },
        { seed: 20261127 },
      )
      expect(seen.accepted).toBeGreaterThan(0)
      expect(seen.duplicate).toBeGreaterThan(0)
      expect(seen.refused).toBeGreaterThan(0)
    } finally {
      await closeOnVirtualTime(clock, storage.close())
    }
  })
})
