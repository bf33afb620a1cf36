import { describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { Broadcast, createServiceMetrics, isRonError, noopLogger } from '@ron/core'
import { VirtualClock, exploreSchedules, settleWith } from '@ron/core/testing'
import { Committer, type RegistryUpdated } from '../src/committer.js'
import { RegistryLog } from '../src/log.js'
import { createMemoryStore } from '../src/store/index.js'
import { approve, genesisFor, payload, setOf, signers } from './helpers.js'

const keys = signers(3)
const genesis = genesisFor(setOf(keys, 2))

async function setup(
  capacity = 512,
  settings: () => { proposalTtlMs: number; maxProposals: number; slowCommitMs: number } = () => ({ proposalTtlMs: 60_000, maxProposals: 4096, slowCommitMs: 2000 }),
): Promise<{ committer: Committer; log: RegistryLog; committed: Broadcast<RegistryUpdated>; clock: VirtualClock; metrics: ReturnType<typeof createServiceMetrics> }> {
  const clock = new VirtualClock(1000)
  const metrics = createServiceMetrics({ service: 'registry' })
  const log = await RegistryLog.open(createMemoryStore(), genesis)
  const committed = new Broadcast<RegistryUpdated>({ name: 'committed', capacity: 1024, metrics: metrics.sink })
  const committer = new Committer({
    log,
    committed,
    capacity: { proposals: capacity, approvals: capacity },
    settings,
    clock,
    metrics: metrics.sink,
    logger: noopLogger,
  })
  return { committer, log, committed, clock, metrics }
}

describe('proposal ids', () => {
  it('are p- and 24 hex digits, distinct across several refills of the id pool', async () => {
    const { committer } = await setup()
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    const ids = new Set<string>()
    for (let i = 0; i < 300; i++) {
      const p = await committer.propose(payload(i))
      expect(p.proposalId).toMatch(/^p-[0-9a-f]{24}$/)
      ids.add(p.proposalId)
    }
    expect(ids.size).toBe(300)
    ac.abort()
    await run
  })
})

describe('Committer backpressure and deadlines', () => {
  it('a full proposals queue rejects with Busy at once and counts it; nothing blocks', async () => {
    const { committer, metrics } = await setup(2)
    const a = committer.propose(payload(1))
    const b = committer.propose(payload(2))
    // (The service host counts the 429 in busy_rejections_total{endpoint,queue} from these details.)
    await expect(committer.propose(payload(3))).rejects.toMatchObject({ code: 'Busy', retryAfterMs: 1000, details: { endpoint: 'propose', queue: 'proposals' } })
    expect(await metrics.text()).toMatch(/queue_depth\{queue="proposals",service="registry"\} 2/)
    // The queued ones are answered once the committer runs.
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    expect((await a).baseVersion).toBe(0)
    expect((await b).baseVersion).toBe(0)
    ac.abort()
    await run
  })

  it('a commit whose deadline passes while queued is refused with Timeout and never written', async () => {
    const { committer, log } = await setup()
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    const p = await committer.propose(payload(1))
    for (const x of approve(keys.slice(0, 2), 0, p.payloadB3)) await committer.approve(p.proposalId, x)
    const deadline = new AbortController()
    deadline.abort(new Error('deadline'))
    await expect(committer.commit(p.proposalId, deadline.signal)).rejects.toMatchObject({ code: 'Timeout' })
    expect(log.head().version).toBe(0)
    expect((await committer.commit(p.proposalId, new AbortController().signal)).version).toBe(1)
    ac.abort()
    await run
  })

  it('fails queued commands with Canceled when it stops, and Closed after close()', async () => {
    const { committer } = await setup()
    const ac = new AbortController()
    const queued = committer.propose(payload(1))
    ac.abort()
    await committer.run(ac.signal)
    await expect(queued).rejects.toMatchObject({ code: 'Canceled' })
    committer.close()
    await expect(committer.propose(payload(2))).rejects.toMatchObject({ code: 'Closed' })
  })
})

describe('racing commits (property)', () => {
  it('exactly one entry per version, whatever the order of concurrent commits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 6 }), fc.integer({ min: 1, max: 3 }), fc.infiniteStream(fc.nat()), async (n, rounds, order) => {
        const { committer, log, metrics } = await setup()
        const ac = new AbortController()
        const run = committer.run(ac.signal)
        const it = order[Symbol.iterator]()
        let winners = 0
        for (let r = 0; r < rounds; r++) {
          const base = log.head().version
          const ps = await Promise.all(Array.from({ length: n }, (_, i) => committer.propose(payload(r * 100 + i))))
          for (const p of ps) for (const x of approve(keys.slice(0, 2), base, p.payloadB3)) await committer.approve(p.proposalId, x)
          // Fire every commit at once in a random order (plus a duplicate retry of one of them).
          const shuffled = [...ps].sort(() => (it.next().value as number) % 3 - 1)
          const results = await Promise.allSettled([...shuffled, shuffled[0]!].map((p) => committer.commit(p.proposalId, new AbortController().signal)))
          const ok = results.filter((x) => x.status === 'fulfilled').map((x) => (x as PromiseFulfilledResult<{ version: number }>).value.version)
          expect(new Set(ok)).toEqual(new Set([base + 1]))
          for (const x of results) if (x.status === 'rejected') expect(isRonError(x.reason, 'ChainMismatch')).toBe(true)
          winners++
        }
        expect(log.head().version).toBe(winners)
        expect(log.tree.size).toBe(winners)
        const versions = new Set<number>()
        for (let v = 1; v <= winners; v++) {
          const e = await log.read(v)
          expect(e && 'entry' in e && e.entry.version).toBe(v)
          versions.add(v)
        }
        expect(versions.size).toBe(winners)
        expect(await metrics.text()).toMatch(new RegExp(`commit_cas_fail_total\\{service="registry"\\} ${(n - 1) * rounds}`))
        ac.abort()
        await run
      }),
      { seed: 12, numRuns: 25 },
    )
  })
})

describe('seed Loom model: proposals → Committer → committed, with shutdown', () => {
  it('no deadlock, shutdown always observed, no double commit, every request answered', async () => {
    await exploreSchedules(
      60,
      async (s) => {
        const { committer, log, committed } = await setup(2)
        const sub = committed.subscribe()
        const ac = new AbortController()
        const run = committer.run(ac.signal)
        const outcomes: Array<Promise<unknown>> = []
        // Two producers: each proposes, approves and commits (twice, a retry), every step a choice point.
        for (const i of [1, 2]) {
          const flow = (async () => {
            await s.schedule(Promise.resolve(), `p${i}:propose`)
            const p = await committer.propose(payload(i))
            for (const x of approve(keys.slice(0, 2), p.baseVersion, p.payloadB3)) {
              await s.schedule(Promise.resolve(), `p${i}:approve`)
              await committer.approve(p.proposalId, x)
            }
            await s.schedule(Promise.resolve(), `p${i}:commit`)
            const a = committer.commit(p.proposalId, new AbortController().signal)
            const b = committer.commit(p.proposalId, new AbortController().signal)
            return Promise.allSettled([a, b])
          })()
          outcomes.push(flow.catch((e: unknown) => e))
        }
        const shutdown = s.schedule(Promise.resolve(), 'shutdown').then(() => ac.abort())
        await settleWith(s, Promise.all([...outcomes, shutdown, run]), 'registry model')
        // Every request settled (above); HEAD only moved by the committer, one entry per version.
        const head = log.head().version
        expect(head).toBeLessThanOrEqual(2)
        const seen: number[] = []
        for (let r = sub.tryRecv(); r !== undefined; r = sub.tryRecv()) if ('value' in r) seen.push(r.value.version)
        expect(seen).toEqual(Array.from({ length: head }, (_, i) => i + 1))
        const committedVersions: number[] = []
        for (const o of await Promise.all(outcomes)) {
          if (!Array.isArray(o)) {
            // Refused by the shutdown: queued (Canceled) or after it (Closed).
            expect(['Canceled', 'Closed', 'ChainMismatch'].some((c) => isRonError(o, c as 'Canceled')), String(o)).toBe(true)
            continue
          }
          const [a, b] = o as PromiseSettledResult<{ version: number }>[]
          // The retry of a committed proposal returns the same entry, never a second one.
          if (a!.status === 'fulfilled' && b!.status === 'fulfilled') expect(b!.value).toEqual(a!.value)
          const v = [a!, b!].find((x) => x.status === 'fulfilled') as PromiseFulfilledResult<{ version: number }> | undefined
          if (v !== undefined) committedVersions.push(v.value.version)
          for (const x of [a!, b!]) if (x.status === 'rejected') expect(['Canceled', 'Closed', 'ChainMismatch'].some((c) => isRonError(x.reason, c as 'Canceled')), String(x.reason)).toBe(true)
        }
        // No double commit: each committed proposal has its own version, and there are `head` of them.
        expect(new Set(committedVersions).size).toBe(committedVersions.length)
        expect(committedVersions.length).toBe(head)
      },
      { seed: 42 },
    )
  })
})

describe('Committer proposal bookkeeping', () => {
  it('maxProposals bounds pending proposals only; committed ones are kept for retries, the most recent maxProposals of them', async () => {
    const { committer } = await setup(512, () => ({ proposalTtlMs: 60_000, maxProposals: 3, slowCommitMs: 2000 }))
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    const results: Array<{ id: string; version: number }> = []
    for (let i = 1; i <= 5; i++) {
      const p = await committer.propose(payload(i))
      for (const x of approve(keys.slice(0, 2), p.baseVersion, p.payloadB3)) await committer.approve(p.proposalId, x)
      results.push({ id: p.proposalId, version: (await committer.commit(p.proposalId, new AbortController().signal)).version })
    }
    // Five commits past a limit of 3: proposing still works (committed ones are not pending).
    expect(committer.pending).toBe(0)
    expect(committer.size).toBe(3)
    // The three most recent commits still answer a retry with their entry; older ones are gone.
    for (const r of results.slice(2)) expect((await committer.commit(r.id, new AbortController().signal)).version).toBe(r.version)
    for (const r of results.slice(0, 2)) await expect(committer.commit(r.id, new AbortController().signal)).rejects.toMatchObject({ code: 'NotFound' })
    // Pending proposals are what the limit refuses.
    for (let i = 6; i <= 8; i++) await committer.propose(payload(i))
    expect(committer.pending).toBe(3)
    await expect(committer.propose(payload(9))).rejects.toMatchObject({ code: 'Busy', details: { reason: 'proposals_full' } })
    ac.abort()
    await run
  })

  it('a committed proposal keeps its retry result and shows its payload and approvals read back from its entry', async () => {
    const { committer, log } = await setup()
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    const p = await committer.propose(payload(7))
    // Approved out of signerId order: the committed view lists them in the entry's order.
    const [a0, a1] = approve(keys.slice(0, 2), p.baseVersion, p.payloadB3)
    await committer.approve(p.proposalId, a1!)
    await committer.approve(p.proposalId, a0!)
    const pending = await committer.get(p.proposalId)
    const result = await committer.commit(p.proposalId, new AbortController().signal)
    // A retry answers the very same result; an approval now is a conflict.
    expect(await committer.commit(p.proposalId, new AbortController().signal)).toBe(result)
    await expect(committer.approve(p.proposalId, a0!)).rejects.toMatchObject({ code: 'Conflict', details: { version: result.version } })
    const view = await committer.get(p.proposalId)
    const read = await log.read(result.version)
    expect(read !== undefined && 'entry' in read).toBe(true)
    const entry = (read as { entry: { payload: unknown; approvals: Array<{ signerId: string }> } }).entry
    expect(view).toEqual({
      ...pending,
      payload: entry.payload,
      approvals: entry.approvals.map((a) => ({ signerId: a.signerId })),
      committedVersion: result.version,
    })
    expect(view.payload).toEqual(payload(7))
    expect(view.approvals.map((a) => a.signerId)).toEqual([...view.approvals.map((a) => a.signerId)].sort())
    expect(view.quorum).toEqual({ have: 2, m: 2, n: 3 })
    ac.abort()
    await run
  })

  it('proposals expire in the order of their expiry, also after the TTL is lowered', async () => {
    let ttl = 60_000
    const { committer, clock, metrics } = await setup(512, () => ({ proposalTtlMs: ttl, maxProposals: 4096, slowCommitMs: 2000 }))
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    const a = await committer.propose(payload(1)) // expires at +60 s
    ttl = 10_000
    const b = await committer.propose(payload(2)) // expires at +10 s
    expect(committer.pending).toBe(2)
    await clock.advance(10_000)
    await expect(committer.get(b.proposalId)).rejects.toMatchObject({ code: 'NotFound' })
    expect((await committer.get(a.proposalId)).proposalId).toBe(a.proposalId)
    expect(committer.pending).toBe(1)
    await clock.advance(50_000)
    await expect(committer.get(a.proposalId)).rejects.toMatchObject({ code: 'NotFound' })
    expect(committer.size).toBe(0)
    expect(await metrics.text()).toMatch(/registry_proposals_expired_total\{service="registry"\} 2/)
    ac.abort()
    await run
  })
  it('holds one expiry timer across commands, armed for the soonest expiry, and none once stopped', async () => {
    const { committer, clock } = await setup()
    const arm = vi.spyOn(clock, 'setTimeout')
    const ac = new AbortController()
    const run = committer.run(ac.signal)
    expect(clock.pending).toBe(0)
    const first = await committer.propose(payload(1))
    for (let i = 2; i <= 6; i++) {
      await clock.advance(1000)
      const p = await committer.propose(payload(i))
      for (const a of approve(keys.slice(0, 2), p.baseVersion, p.payloadB3)) await committer.approve(p.proposalId, a)
      await clock.flush()
      // Many commands, still the one timer armed after the first: the first proposal's expiry.
      expect(arm).toHaveBeenCalledTimes(1)
      expect(clock.pending).toBe(1)
      expect(clock.nextAt).toBe(first.expiresAt)
    }
    await clock.advance(first.expiresAt - clock.now())
    await expect(committer.get(first.proposalId)).rejects.toMatchObject({ code: 'NotFound' })
    await clock.flush()
    // Re-armed for the next soonest expiry (the second proposal, 1 s later).
    expect(arm).toHaveBeenCalledTimes(2)
    expect(clock.pending).toBe(1)
    expect(clock.nextAt).toBe(first.expiresAt + 1000)
    ac.abort()
    await run
    expect(clock.pending).toBe(0)
  })
})
