/**
 * Deterministic schedule exploration (the TypeScript stand-in for the seeds' Loom models), built on
 * fast-check's scheduler: every `await` on a scheduled promise becomes a choice point and each run
 * explores one interleaving, reproducible from the reported seed.
 *
 * @module
 */

import fc from 'fast-check'
import type { Scheduler } from 'fast-check'
import { RonUsageError } from '../errors.js'

export type { Scheduler } from 'fast-check'

/** Options of {@link exploreSchedules}. */
export interface ExploreOptions {
  /** Seed of the exploration, for reproducing a failure. @defaultValue fast-check's random seed */
  seed?: number
  /** Replay path printed by a failing run. */
  path?: string
}

/**
 * Runs `model` under `runs` different deterministic interleavings. The model wraps each
 * concurrency point with `s.schedule(promise)` (or `s.scheduleFunction(fn)`) and must wait for the
 * scheduler to drain (`await s.waitAll()` or {@link settleWith}); it throws (or fails an `expect`)
 * when an invariant breaks, and fast-check shrinks and reports the schedule.
 *
 * @throws Error (from fast-check) describing the failing schedule when any run fails.
 * @example
 * ```ts
 * await exploreSchedules(200, async (s) => {
 *   const q = new BoundedQueue<number>({ name: 'm', capacity: 2 })
 *   const sent = s.schedule(Promise.resolve()).then(() => q.trySend(1))
 *   await s.waitAll()
 *   await sent
 * })
 * ```
 */
export async function exploreSchedules(runs: number, model: (s: Scheduler) => Promise<void>, options: ExploreOptions = {}): Promise<void> {
  const params: fc.Parameters<[Scheduler]> = { numRuns: runs }
  if (options.seed !== undefined) params.seed = options.seed
  if (options.path !== undefined) params.path = options.path
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), async (s) => {
      await model(s)
    }),
    params,
  )
}

/**
 * Lets the scheduler release scheduled tasks until `done` settles, and returns its result. Fails
 * with a "deadlock" error when the scheduler has nothing left to release and `done` is still
 * pending, which is how a model detects a deadlock.
 *
 * @throws {@link RonUsageError} `RON_SCHEDULE_DEADLOCK` when no scheduled task remains and `done` has not settled.
 */
export async function settleWith<T>(s: Scheduler, done: Promise<T>, what = 'model'): Promise<T> {
  let settled = false
  const watched = done.finally(() => {
    settled = true
  })
  // Give every microtask a chance to run before concluding the model is stuck.
  const drainMicrotasks = (): Promise<void> => new Promise<void>((r) => setImmediate(r))
  for (;;) {
    await drainMicrotasks()
    if (settled) return watched
    if (s.count() === 0) {
      await drainMicrotasks()
      if (settled) return watched
      throw new RonUsageError('RON_SCHEDULE_DEADLOCK', `deadlock: ${what} did not finish and nothing is left to schedule`)
    }
    await s.waitOne()
  }
}
