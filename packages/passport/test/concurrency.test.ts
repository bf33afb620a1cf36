import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { Supervisor, WorkPool, isRonError } from '@ron/core'
import { VirtualClock, concurrencyDocProblems, exploreSchedules, settleWith, type Scheduler } from '@ron/core/testing'
import { createMemoryKeystore, createPassportService, passportTopology, resolvePassportConfig, type Kms } from '../src/index.js'
import { controllableKms, rejection, setup, until } from './helpers.js'

const metric = (text: string, name: string, label: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label))
  return line === undefined ? NaN : Number(line.split(' ').at(-1))
}

describe('backpressure', () => {
  it('a full issue queue answers 429 Busy with Retry-After, counted in busy_rejections_total and queue_dropped_total; issue sheds before verify', async () => {
    const kms = controllableKms()
    const { client, passport, transport, admin, close } = await setup({ keystore: kms, issueWorkers: 1, issueQueue: 2 })
    try {
      const good = (await client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:read'] })).token
      kms.hold()
      const req = { sub: 'x', aud: ['storage'], scope: ['storage:write'] }
      const inflight = [client.issue(req), client.issue(req), client.issue(req)] // 1 running + 2 queued
      await until(() => kms.held === 1, 'one issuance signing')
      await until(async () => metric(await passport.metricsText(), 'queue_depth', 'queue="issue"') === 2, 'two issuances queued')
      expect(passport.health().paths).toEqual({ issue: false, revoke: true, verify: true })
      const res = await transport.request('passport', {
        method: 'POST',
        path: '/v1/passport/issue',
        headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(req),
      })
      expect(res.status).toBe(429)
      expect(res.headers['retry-after']).toBeDefined()
      expect((await res.json<{ error: { code: string } }>()).error.code).toBe('Busy')
      // Verification is unaffected.
      expect(await client.verify(good)).toMatchObject({ valid: true })
      kms.release()
      expect(await Promise.all(inflight)).toHaveLength(3)
      expect(passport.health().paths).toEqual({ issue: true, revoke: true, verify: true })
      const text = await passport.metricsText()
      expect(metric(text, 'queue_dropped_total', 'queue="issue"')).toBe(1)
      expect(metric(text, 'busy_rejections_total', 'endpoint="/v1/passport/issue",queue="issue"')).toBe(1)
    } finally {
      kms.release()
      await close()
    }
  })
})

describe('KMS deadline', () => {
  it('a stalled KMS gives a typed 504 at the 3 s deadline (never a hung request) and turns issue unready; recovery turns it ready', async () => {
    const kms = controllableKms()
    const { client, clock, passport, close } = await setup({ keystore: kms })
    try {
      kms.hold()
      const pending = client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] }).catch((e: unknown) => e)
      // The deadline is armed before the KMS is called: once the sign is held, time may run.
      await until(() => kms.held === 1, 'the sign call reached the KMS')
      await clock.advance(2999)
      let settled = false
      void pending.then(() => (settled = true))
      await new Promise((r) => setImmediate(r))
      expect(settled).toBe(false)
      await clock.advance(1)
      const e = (await pending) as { status: number; code: string; details: Record<string, unknown> }
      expect([e.status, e.code, e.details['op']]).toEqual([504, 'Timeout', 'kms'])
      expect(passport.health().paths).toMatchObject({ issue: false, verify: true })
      expect(metric(await passport.metricsText(), 'io_timeouts_total', 'op="kms"')).toBe(1)
      kms.release()
      await expect(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] })).resolves.toBeDefined()
      expect(passport.health().paths).toEqual({ issue: true, revoke: true, verify: true })
    } finally {
      kms.release()
      await close()
    }
  })

  it('a failing KMS gives 503 NotReady kms_failing and no retry', async () => {
    const kms = controllableKms()
    let signs = 0
    const counting: Kms = { ...kms, sign: (kid, data, s) => (signs++, kms.sign(kid, data, s)) }
    const { client, passport, close } = await setup({ keystore: counting })
    try {
      kms.fail = true
      signs = 0
      const e = await rejection(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:write'] }))
      expect([e.status, e.details['reason']]).toEqual([503, 'kms_failing'])
      expect(signs).toBe(1)
      expect(passport.health().paths['issue']).toBe(false)
    } finally {
      await close()
    }
  })
})

/** A scheduling point: the scheduler decides when this await resumes. */
const point = (s: Scheduler, label: string): Promise<string> => s.schedule(Promise.resolve(label), label)

describe('Loom model of the seed: listener → issue queue(2) → worker, with shutdown', () => {
  it('explores 200 schedules: no deadlock, shutdown observed, every job finalized exactly once', async () => {
    await exploreSchedules(
      200,
      async (s) => {
        const clock = new VirtualClock(0)
        const supervisor = new Supervisor({ name: 'model', clock })
        const pool = new WorkPool({ name: 'issue', capacity: 2, concurrency: 1, supervisor, clock })
        const JOBS = 5
        const finalized = new Map<number, number>()
        const outcome = new Map<number, string>()
        const finalize = (j: number): void => {
          finalized.set(j, (finalized.get(j) ?? 0) + 1)
        }
        const listener = (async () => {
          const submitted: Promise<void>[] = []
          for (let j = 0; j < JOBS; j++) {
            await point(s, `submit ${j}`)
            submitted.push(
              pool
                .submit(async () => {
                  try {
                    await point(s, `sign ${j}`)
                    outcome.set(j, 'issued')
                  } finally {
                    finalize(j) // the job's resources are released by the worker
                  }
                })
                .catch((e: unknown) => {
                  // Refused or canceled before running: the listener releases them.
                  if (!isRonError(e)) throw e
                  if (!outcome.has(j)) {
                    outcome.set(j, e.code)
                    finalize(j)
                  }
                }),
            )
          }
          await Promise.all(submitted)
        })()
        const stopper = (async () => {
          await point(s, 'shutdown')
          pool.stop()
          await Promise.race([pool.drained(), point(s, 'deadline')])
          await supervisor.shutdown(0)
        })()
        await settleWith(s, Promise.all([listener, stopper]), 'listener/worker/shutdown')
        expect(pool.stopped).toBe(true)
        for (let j = 0; j < JOBS; j++) {
          expect(finalized.get(j), `job ${j} (${outcome.get(j)})`).toBe(1)
          expect(['issued', 'Busy', 'Draining', 'Canceled']).toContain(outcome.get(j))
        }
      },
      { seed: 1234 },
    )
  })
})

describe('topology', () => {
  it('docs/CONCURRENCY.md contains exactly the tables of describe()', async () => {
    const doc = await readFile(new URL('../docs/CONCURRENCY.md', import.meta.url), 'utf8')
    const svc = await createPassportService({ issueWorkers: 2 })
    try {
      expect(concurrencyDocProblems(doc, svc.describe())).toEqual([])
      expect(svc.describe()).toEqual(passportTopology(resolvePassportConfig({ issueWorkers: 2 })))
    } finally {
      await svc.close()
    }
  })

  it('follows the seed: issue 512 → min(cores, 8) workers, revoke 256 → one worker, policy broadcast 1024 drop-oldest', () => {
    const t = passportTopology(resolvePassportConfig({}))
    const ch = Object.fromEntries(t.channels.map((c) => [c.name, c]))
    expect(ch['issue']).toMatchObject({ kind: 'mpsc', capacity: 512, overflow: 'reject-new' })
    expect(ch['issue']!.pool!.concurrency).toBeLessThanOrEqual(8)
    expect(ch['revoke']).toMatchObject({ kind: 'mpsc', capacity: 256, overflow: 'reject-new', pool: { concurrency: 1 } })
    expect(ch['policy']).toMatchObject({ kind: 'broadcast', capacity: 1024, overflow: 'drop-oldest' })
  })

  it('rejects unknown config keys and bad values, naming the field', () => {
    expect(() => resolvePassportConfig({ issueQeue: 1 } as never)).toThrow(expect.objectContaining({ code: 'Malformed' }) as Error)
    expect(() => resolvePassportConfig({ policy: { callers: { a: { scopes: [], audiences: ['*'] } } } })).toThrow(/scopes/)
    expect(() => resolvePassportConfig({ kms: { timeoutMs: 0 } })).toThrow(/kms\.timeoutMs/)
  })
})

describe('KMS breaker', () => {
  it('opens after repeated failures: issuance fails fast with 503 BreakerOpen without calling the KMS, then a probe closes it', async () => {
    const kms = controllableKms()
    let signs = 0
    const counting: Kms = { ...kms, sign: (kid, data, s) => (signs++, kms.sign(kid, data, s)) }
    const { client, clock, passport, close } = await setup({ keystore: counting, kms: { breaker: { minCalls: 3, errorRatio: 0.5, windowMs: 60_000, cooldownMs: 10_000 } } })
    try {
      kms.fail = true
      const req = { sub: 'x', aud: ['storage'], scope: ['storage:write'] }
      const codes: string[] = []
      for (let i = 0; i < 5 && codes.at(-1) !== 'BreakerOpen'; i++) codes.push((await rejection(client.issue(req))).code)
      // Failures reach the KMS until the error ratio over at least minCalls signs opens the breaker.
      expect(codes[0]).toBe('NotReady')
      expect(codes.at(-1)).toBe('BreakerOpen')
      signs = 0
      const e = await rejection(client.issue(req))
      expect([e.status, e.code]).toEqual([503, 'BreakerOpen'])
      expect(signs).toBe(0)
      expect(passport.health().paths).toMatchObject({ issue: false, verify: true })
      kms.fail = false
      await clock.advance(10_000)
      await expect(client.issue(req)).resolves.toBeDefined()
      expect(passport.health().paths).toEqual({ issue: true, revoke: true, verify: true })
    } finally {
      await close()
    }
  })
})

describe('startup', () => {
  it('a KMS that fails at startup fails the factory with a typed error and leaves nothing running', async () => {
    const broken: Kms = { ...createMemoryKeystore(), generate: () => Promise.reject(new Error('no hsm')) }
    await expect(createPassportService({ keystore: broken })).rejects.toMatchObject({ code: 'NotReady', details: { reason: 'kms_failing' } })
  })
})
