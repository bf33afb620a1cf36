import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  BoundedQueue,
  Broadcast,
  SseHub,
  TokenBucket,
  UsageErrorCodes,
  createBlake3,
  createHttpHandler,
  createServiceHost,
  createTokenProvider,
  isRonError,
  isRonUsageError,
  type Topology,
  type UsageErrorCode,
} from '@ron/core'
import { VirtualClock, assertConcurrencyDoc, fixedRandom, settleWith } from '@ron/core/testing'
import { mkReq, readJson } from './http/helpers.js'

const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')
const section = doc.slice(doc.indexOf('## Usage errors'))
const documented = [...section.matchAll(/^\| `(RON_\w+)` \|/gm)].map((m) => m[1]!)

/** Runs `fn` and returns what it threw (sync or async). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn()
  } catch (e) {
    return e
  }
  throw new Error('expected a throw')
}

const topology: Topology = {
  service: 'svc',
  tasks: [{ name: 'w', count: 1, criticality: 'critical', description: 'worker' }],
  channels: [{ name: 'work', kind: 'mpsc', capacity: 1, producers: ['http'], consumers: ['w'], overflow: 'reject-new' }],
}

/** One trigger per code: each must throw a RonUsageError with exactly that code. */
const triggers: Record<UsageErrorCode, () => unknown> = {
  RON_INVALID_OPTION: () => new BoundedQueue({ name: 'q', capacity: 0 }),
  RON_ROUTE_CONFIG: () => createHttpHandler({ serviceId: 's', routes: [{ method: 'PUT', path: '/x', handler: () => ({ status: 204 }) }] }),
  RON_ROUTES_FROZEN: async () => {
    const host = createServiceHost({ id: 's', version: '1', topology })
    try {
      await host.service.dispatch(mkReq('GET', '/healthz'))
      host.routes([])
    } finally {
      await host.service.close()
    }
  },
  RON_UNKNOWN_CHANNEL: async () => {
    const host = createServiceHost({ id: 's', version: '1', topology })
    try {
      host.broadcast('work')
    } finally {
      await host.service.close()
    }
  },
  RON_INVALID_REPLY: async () => {
    // The pipeline turns it into 500 Internal; onError sees the usage error as the cause.
    let cause: unknown
    const h = createHttpHandler({
      serviceId: 's',
      routes: [{ method: 'GET', path: '/bad', handler: () => ({ status: 99 }) }],
      hooks: { onError: (err) => (cause = err.cause) },
    })
    await h.dispatch(mkReq('GET', '/bad'))
    throw cause
  },
  RON_HASHER_FINISHED: () => {
    const h = createBlake3()
    h.digest()
    h.update(new Uint8Array(1))
  },
  RON_RECV_PENDING: async () => {
    const b = new Broadcast<number>({ name: 'b', capacity: 1 })
    const sub = b.subscribe()
    const ac = new AbortController()
    const first = sub.recv(ac.signal).catch(() => undefined)
    try {
      await sub.recv()
    } finally {
      ac.abort()
      await first
      b.close()
    }
  },
  RON_CONCURRENCY_DOC: () => assertConcurrencyDoc('# nothing here', topology),
  RON_SCHEDULE_DEADLOCK: () =>
    fc.assert(
      fc.asyncProperty(fc.scheduler(), (s) => settleWith(s, new Promise<void>(() => {}), 'stuck')),
      { numRuns: 1, endOnFailure: true },
    ).catch((e: unknown) => {
      throw (e as { cause?: unknown }).cause ?? e
    }),
  RON_TIMER_LIMIT: async () => {
    const clock = new VirtualClock()
    const tick = (): void => {
      clock.setTimeout(tick, 1)
    }
    tick()
    await clock.runAll(5)
  },
}

describe('usage errors (programmer and startup mistakes)', () => {
  it('docs/errors.md lists exactly the codes of UsageErrorCodes', () => {
    expect([...documented].sort()).toEqual(Object.keys(UsageErrorCodes).sort())
  })

  for (const code of Object.keys(UsageErrorCodes) as UsageErrorCode[]) {
    it(`${code} is thrown with its code`, async () => {
      const e = await thrown(triggers[code])
      expect(isRonUsageError(e, code), String(e)).toBe(true)
      expect(isRonError(e)).toBe(false)
    })
  }

  it('RON_INVALID_REPLY: a handler returning status 99 answers 500 Internal and reports the usage error', async () => {
    const reported: unknown[] = []
    const h = createHttpHandler({
      serviceId: 's',
      routes: [{ method: 'GET', path: '/bad', handler: () => ({ status: 99 }) }],
      hooks: { onError: (err) => reported.push(err.cause) },
    })
    const res = await h.dispatch(mkReq('GET', '/bad'))
    expect(res.status).toBe(500)
    expect(await readJson(res)).toMatchObject({ error: { code: 'Internal' } })
    expect(isRonUsageError(reported[0], 'RON_INVALID_REPLY')).toBe(true)
  })

  it('invalid options of the other primitives are RON_INVALID_OPTION too', async () => {
    const bad: Array<() => unknown> = [
      () => new TokenBucket({ capacity: 0, refillPerSec: 1 }),
      () => new SseHub({ name: 's', bufferPerClient: 0, maxClients: 1, onLag: 'latest' }),
      () => createTokenProvider({ minter: { mint: () => Promise.resolve('') }, ttlSec: 1.5 }),
      () => createHttpHandler({ serviceId: 's', routes: [], limits: { readTimeoutMs: 0 } }),
      () => fixedRandom(),
    ]
    for (const fn of bad) expect(isRonUsageError(await thrown(fn), 'RON_INVALID_OPTION')).toBe(true)
  })
})
