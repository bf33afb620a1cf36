/**
 * The registry on the service contract (issue 21, SPEC.md 3.3/3.3a): its drain order (writes
 * refused while reads are served through the read window, then 503 for every new request, an
 * in-flight commit finished, a straggler aborted and counted at the deadline), readiness per path
 * from real dependencies, the audit of route-level refusals, a proposal read that is no write,
 * and no way to move HEAD past the Committer from the service object.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { DrainingError } from '@ron/core'
import { deferred, metricValue, type Deferred } from '@ron/core/testing'
import { RegistryLog } from '../src/log.js'
import { generateLogKey } from '../src/checkpoint.js'
import { cosigner } from '../src/cosignature.js'
import { logView } from '../src/log-view.js'
import { createMemoryStore, type LogStore } from '../src/index.js'
import { harness, payload, type Harness } from './helpers.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** A memory store whose appends wait on `gates` (one per append, in order) once armed. */
function gatedStore(): { store: LogStore; gates: Deferred<void>[]; entered: Array<Deferred<void>> } {
  const inner = createMemoryStore()
  const gates: Deferred<void>[] = []
  const entered: Array<Deferred<void>> = []
  let n = 0
  const store = Object.assign(Object.create(inner) as LogStore, {
    open: inner.open.bind(inner),
    head: inner.head.bind(inner),
    read: inner.read.bind(inner),
    oldest: inner.oldest.bind(inner),
    appendCheckpoint: inner.appendCheckpoint.bind(inner),
    checkpoints: inner.checkpoints.bind(inner),
    segments: inner.segments.bind(inner),
    sizeBytes: inner.sizeBytes.bind(inner),
    prune: inner.prune.bind(inner),
    probe: inner.probe.bind(inner),
    close: inner.close.bind(inner),
    async compareAndAppend(...args: Parameters<LogStore['compareAndAppend']>) {
      const i = n++
      entered[i]?.resolve()
      await gates[i]?.promise
      return inner.compareAndAppend(...args)
    },
  })
  return { store, gates, entered }
}

async function counter(x: Harness, name: string, labels: Record<string, string>): Promise<number> {
  return metricValue(await x.svc.metricsText(), name, labels) ?? 0
}

async function proposeApproved(x: Harness, i: number): Promise<string> {
  const p = await x.client.propose(payload(i))
  for (const k of x.keys.slice(0, 2)) await x.client.approveWith(p.proposalId, k)
  return p.proposalId
}

describe('drain order (registry: writes, then reads)', () => {
  const commitToken = (x: Harness): string => x.issuer.mint({ scope: ['registry:commit'] })

  it('refuses writes and keeps reads through the read window, then 503s every new request, and an in-flight commit finishes before the deadline', async () => {
    const g = gatedStore()
    h = await harness({ store: g.store, drainReadWindowMs: 1000, drainDeadlineMs: 2000 })
    const x = h
    const p1 = await proposeApproved(x, 1)
    g.gates.push(deferred())
    g.entered.push(deferred())
    // In flight when the drain starts: a commit stalled in the store.
    const commit1 = x.transport.request('registry', { method: 'POST', path: `/registry/commit/${p1}`, headers: { authorization: `Bearer ${commitToken(x)}` }, timeoutMs: 600_000 })
    await g.entered[0]!.promise

    let closed = false
    const closing = x.svc.close().then(() => (closed = true))
    await x.clock.flush()

    // The read window: writes refused (and audited) and unready, reads ready and served.
    expect(x.svc.health()).toMatchObject({ ready: true, writeReady: false, paths: { write: false, read: true } })
    const rejectedBefore = await counter(x, 'registry_updates_total', { result: 'propose_rejected' })
    const refused = await x.client.propose(payload(3)).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(DrainingError)
    expect(await counter(x, 'registry_updates_total', { result: 'propose_rejected' })).toBe(rejectedBefore + 1)
    expect((await x.client.head()).version).toBe(0)
    expect((await x.transport.request('registry', { method: 'GET', path: '/readyz' })).status).toBe(200)

    // The window ends: reads unready, every new request 503 Draining + Retry-After (audited for a write); /healthz stays 200.
    await x.clock.advance(1000)
    expect(x.svc.health()).toMatchObject({ ready: false, writeReady: false, paths: { write: false, read: false } })
    const late = await x.transport.request('registry', { method: 'GET', path: '/registry/head' })
    expect(late.status).toBe(503)
    expect(late.headers['retry-after']).toBe('1')
    expect(await late.json()).toMatchObject({ error: { code: 'Draining' } })
    const commitsRefused = await counter(x, 'registry_updates_total', { result: 'commit_rejected' })
    expect((await x.transport.request('registry', { method: 'POST', path: `/registry/commit/${p1}` })).status).toBe(503)
    expect(await counter(x, 'registry_updates_total', { result: 'commit_rejected' })).toBe(commitsRefused + 1)
    expect((await x.transport.request('registry', { method: 'GET', path: '/healthz' })).status).toBe(200)
    expect(closed).toBe(false) // the in-flight commit holds the drain

    // The in-flight commit finishes before the deadline: answered 201, durable.
    g.gates[0]!.resolve()
    const r1 = await commit1
    expect(r1.status).toBe(201)
    expect(await r1.json()).toMatchObject({ version: 1 })
    expect(x.svc.head().version).toBe(1)
    while (!closed) {
      await x.clock.advance(100)
      await new Promise((r) => setImmediate(r))
    }
    await closing
    expect(await counter(x, 'tasks_aborted_total', { kind: 'request' })).toBe(0)
  })

  it('a commit still stalled at the drain deadline is aborted (503) and counted', async () => {
    const g = gatedStore()
    h = await harness({ store: g.store, drainReadWindowMs: 1000, drainDeadlineMs: 2000 })
    const x = h
    const p1 = await proposeApproved(x, 1)
    g.gates.push(deferred())
    g.entered.push(deferred())
    const commit1 = x.transport.request('registry', { method: 'POST', path: `/registry/commit/${p1}`, headers: { authorization: `Bearer ${commitToken(x)}`, 'x-deadline-ms': '60000' }, timeoutMs: 600_000 })
    await g.entered[0]!.promise
    let closed = false
    const closing = x.svc.close().then(() => (closed = true))
    await x.clock.advance(1000) // the read window
    expect(closed).toBe(false) // the stalled commit holds the drain
    await x.clock.advance(2000) // the deadline
    const r1 = await commit1
    expect(r1.status).toBe(503)
    await r1.dump()
    g.gates[0]!.resolve()
    while (!closed) {
      await x.clock.advance(100)
      await new Promise((r) => setImmediate(r))
    }
    await closing
    expect(await counter(x, 'tasks_aborted_total', { kind: 'request' })).toBe(1)
  })
})

describe('readiness from real dependencies, one per path', () => {
  it('read: the log store closed by its owner turns reads and writes unready', async () => {
    const store = createMemoryStore()
    h = await harness({ store })
    expect(h.svc.health()).toMatchObject({ ready: true, writeReady: true, paths: { write: true, read: true } })
    await store.close()
    const r = h.svc.health()
    expect(r).toMatchObject({ ready: false, writeReady: false, paths: { write: false, read: false } })
    expect(r.missing).toEqual(['log'])
    expect(r.reason).toContain('log: closed')
    expect((await h.transport.request('registry', { method: 'GET', path: '/readyz' })).status).toBe(503)
  })

  it('write: a disk refusing the commit turns only the write path unready; reads go on', async () => {
    const inner = createMemoryStore()
    const store = Object.assign(Object.create(inner) as LogStore, {
      ...Object.fromEntries((['open', 'head', 'read', 'oldest', 'appendCheckpoint', 'checkpoints', 'segments', 'sizeBytes', 'prune', 'close'] as const).map((k) => [k, (inner[k] as (...a: unknown[]) => unknown).bind(inner)])),
      compareAndAppend: () => Promise.reject(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })),
      probe: () => Promise.reject(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })),
    }) as LogStore
    h = await harness({ store })
    const p = await proposeApproved(h, 1)
    await expect(h.client.commit(p)).rejects.toMatchObject({ status: 503, details: { reason: 'disk_full' } })
    const r = h.svc.health()
    expect(r).toMatchObject({ ready: true, writeReady: false, paths: { write: false, read: true } })
    expect(r.missing).toEqual(['disk'])
    expect((await h.client.head()).version).toBe(0)
    // A write refused at the route while the disk is down (503 NotReady) is audited.
    const before = await counter(h, 'registry_updates_total', { result: 'propose_rejected' })
    await expect(h.client.propose(payload(2))).rejects.toMatchObject({ status: 503, code: 'NotReady', details: { reason: 'disk_full' } })
    expect(await counter(h, 'registry_updates_total', { result: 'propose_rejected' })).toBe(before + 1)
  })
})

describe('audit of route-level refusals (401, 403, 400, 429, 503)', () => {
  it('each refusal of a mutation before the committer leaves one audit event; the committer\'s own refusals are not counted twice', async () => {
    h = await harness({ http: { maxRps: 5 } })
    const x = h
    const rejected = (): Promise<number> => counter(x, 'registry_updates_total', { result: 'propose_rejected' })
    const post = (headers: Record<string, string>, body: string) => x.transport.request('registry', { method: 'POST', path: '/registry/proposals', headers: { 'content-type': 'application/json', ...headers }, body })
    const good = JSON.stringify({ payload: payload(1) })
    const cases: Array<[number, () => ReturnType<typeof post>]> = [
      [401, () => post({}, good)],
      [403, () => post({ authorization: `Bearer ${x.issuer.mint({ scope: ['registry:approve'] })}` }, good)],
      [400, () => post({ authorization: `Bearer ${x.issuer.mint({ scope: ['registry:propose'] })}` }, '{"payload":{"schemaVersion":1,"items":"no"}}')],
    ]
    for (const [status, send] of cases) {
      const before = await rejected()
      const res = await send()
      expect(res.status).toBe(status)
      await res.dump()
      expect(await rejected(), `a ${status} is audited`).toBe(before + 1)
    }
    // 429: the service-wide rate (5/s) is spent within this virtual second.
    const before429 = await rejected()
    let status = 0
    for (let i = 0; i < 6 && status !== 429; i++) {
      const res = await post({}, good)
      status = res.status
      await res.dump()
    }
    expect(status).toBe(429)
    // Every one of those was refused at the route (401 or 429), each audited once.
    expect(await rejected()).toBeGreaterThanOrEqual(before429 + 2)
    await x.clock.advance(1000)

    // 503: the service closed (intake stopped) — audited too.
    const before503 = await rejected()
    await x.svc.close()
    const res = await post({ authorization: `Bearer ${x.issuer.mint({ scope: ['registry:propose'] })}` }, good)
    expect(res.status).toBe(503)
    await res.dump()
    expect(await rejected()).toBe(before503 + 1)
  })

  it('a refusal by the committer is one audit event, not two', async () => {
    h = await harness()
    const x = h
    const p = await x.client.propose(payload(1))
    const before = await counter(x, 'registry_updates_total', { result: 'commit_rejected' })
    await expect(x.client.commit(p.proposalId)).rejects.toMatchObject({ code: 'QuorumNotMet' })
    expect(await counter(x, 'registry_updates_total', { result: 'commit_rejected' })).toBe(before + 1)
  })

  it('a 404 on GET /registry/proposals/:id is a read, not a rejected write', async () => {
    h = await harness()
    const x = h
    const text = async (): Promise<string> => (await x.svc.metricsText()).split('\n').filter((l) => l.startsWith('registry_updates_total')).join('\n')
    const before = await text()
    const res = await x.transport.request('registry', { method: 'GET', path: '/registry/proposals/p-000000000000000000000000' })
    expect(res.status).toBe(404)
    await res.dump()
    expect(await text()).toBe(before)
    expect(before).not.toContain('get_rejected')
  })
})

describe('no append without the committer', () => {
  it('the service object holds no log and nothing reachable from it appends; HEAD does not move', async () => {
    h = await harness()
    const x = h
    const svc = x.svc as unknown as Record<string, unknown>
    expect(svc['log']).toBeUndefined()
    // Walk everything reachable from the service object's own properties (and getters).
    const seen = new Set<unknown>()
    const walk = (v: unknown, depth: number): void => {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function') || seen.has(v) || depth > 4) return
      seen.add(v)
      expect(v).not.toBeInstanceOf(RegistryLog)
      if (typeof v === 'function') return
      for (const k of Object.keys(v)) {
        if (k === 'append' || k === 'compareAndAppend') throw new Error(`reachable: ${k}`)
        walk((v as Record<string, unknown>)[k], depth + 1)
      }
    }
    walk(svc, 0)
    const view = logView(x.svc) as unknown as Record<string, unknown>
    expect(view['append']).toBeUndefined()
    expect(Object.isFrozen(view)).toBe(true)
    const cast = svc as { log?: { append?: (...a: unknown[]) => Promise<unknown> } }
    await expect(async () => cast.log!.append!({ version: 0 }, payload(1), [], 0)).rejects.toThrow(TypeError)
    expect(x.svc.head().version).toBe(0)
    // The quorum path still works.
    const p = await proposeApproved(x, 1)
    await x.client.commit(p)
    expect(x.svc.head().version).toBe(1)
  })
})

describe('metrics that move', () => {
  it('backoff_retries_total{op="witness"} counts a failed witness push retried with backoff', async () => {
    h = await harness({ witnesses: [{ name: 'dead.example/w', url: 'http://127.0.0.1:9/registry/witness', key: cosigner('dead.example/w', generateLogKey()).verifierKey }] })
    const x = h
    expect(await counter(x, 'backoff_retries_total', { op: 'witness' })).toBe(0)
    const p = await proposeApproved(x, 1)
    await x.client.commit(p)
    for (let i = 0; i < 50 && (await counter(x, 'backoff_retries_total', { op: 'witness' })) === 0; i++) {
      await x.clock.advance(500)
      await new Promise((r) => setImmediate(r))
    }
    expect(await counter(x, 'backoff_retries_total', { op: 'witness' })).toBeGreaterThanOrEqual(1)
  })
})
