/**
 * The concurrency kit against its peer libraries, side by side in one process:
 *
 * - queue hand-off: `BoundedQueue.trySend` + `recv` (and `WorkPool.submit`, the full
 *   queue → worker path) vs p-queue `add` vs a bare `await fn()`;
 * - resilience wrapper: `retry(() => breaker.execute(fn))` vs cockatiel `wrap(retry, circuitBreaker)`
 *   vs a bare `await fn()`.
 *
 * All calls succeed, so this measures the per-call overhead of the policy machinery.
 */
import {
  ConsecutiveBreaker,
  ExponentialBackoff,
  SamplingBreaker,
  circuitBreaker as ckBreaker,
  handleAll,
  retry as ckRetry,
  wrap,
} from 'cockatiel'
import PQueue from 'p-queue'
import { BoundedQueue, Supervisor, WorkPool } from '../../packages/core/src/concurrency/index.js'
import { CircuitBreaker, retry } from '../../packages/core/src/resilience/index.js'
import { compare, report } from '../lib/harness.js'

const OPS = Number(process.env.KIT_BENCH_OPS ?? 200_000)
const ROUNDS = Number(process.env.KIT_BENCH_ROUNDS ?? 5)

let sink = 0
const fn = (): Promise<number> => Promise.resolve(++sink)

async function queueBench(): Promise<void> {
  const q = new BoundedQueue<() => Promise<number>>({ name: 'bench', capacity: 512 })
  const pq = new PQueue({ concurrency: 1 })
  const supervisor = new Supervisor({ name: 'bench' })
  const pool = new WorkPool({ name: 'bench', capacity: 512, concurrency: 1, supervisor })
  const rows = await compare(
    { name: 'bare await fn()', fn: () => fn() },
    [
      {
        name: 'BoundedQueue trySend + recv + await',
        fn: async () => {
          q.trySend(fn)
          const job = await q.recv()
          await job()
        },
      },
      { name: 'WorkPool.submit (queue -> worker)', fn: () => pool.submit(fn) },
      { name: 'p-queue add (concurrency 1)', fn: () => pq.add(fn) },
    ],
    { ops: OPS, rounds: ROUNDS },
  )
  report('queue hand-off', rows)
  pool.stop()
  await supervisor.shutdown(1000)
}

async function resilienceBench(): Promise<void> {
  const breaker = new CircuitBreaker({ name: 'bench', minCalls: 10, errorRatio: 0.5, windowMs: 10_000, cooldownMs: 5000 })
  const sampling = wrap(
    ckRetry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 2000 }) }),
    ckBreaker(handleAll, { halfOpenAfter: 5000, breaker: new SamplingBreaker({ threshold: 0.5, duration: 10_000 }) }),
  )
  const consecutive = wrap(
    ckRetry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 2000 }) }),
    ckBreaker(handleAll, { halfOpenAfter: 5000, breaker: new ConsecutiveBreaker(5) }),
  )
  const rows = await compare(
    { name: 'bare await fn()', fn: () => fn() },
    [
      { name: 'ron retry(breaker.execute(fn)) (ratio window)', fn: () => retry(() => breaker.execute(fn)) },
      { name: 'ron breaker.execute(fn) only', fn: () => breaker.execute(fn) },
      { name: 'cockatiel wrap(retry, breaker(Sampling))', fn: () => sampling.execute(fn) },
      { name: 'cockatiel wrap(retry, breaker(Consecutive))', fn: () => consecutive.execute(fn) },
    ],
    { ops: OPS / 2, rounds: ROUNDS },
  )
  report('breaker + retry wrapped call', rows)
}

/** Runs both comparisons and prints their tables. */
export async function run(): Promise<void> {
  await queueBench()
  await resilienceBench()
  if (sink < 0) console.log(sink)
}
