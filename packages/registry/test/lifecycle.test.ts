import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { serve } from '@ron/core'
import { deferred, memoryRequest } from '@ron/core/testing'
import { createMemoryStore } from '../src/store/index.js'
import type { LogStore } from '../src/store/types.js'
import { ALL_SCOPES, harness, payload, type Harness } from './helpers.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** A memory store whose appends wait for `gate` (a slow disk). */
function gatedStore(): { store: LogStore; gate: { open(): void }; entered: Promise<void> } {
  const inner = createMemoryStore()
  let release = deferred<void>()
  const entered = deferred<void>()
  const store = Object.create(inner) as LogStore
  for (const k of ['open', 'head', 'read', 'oldest', 'appendCheckpoint', 'checkpoints', 'segments', 'sizeBytes', 'prune', 'probe', 'close'] as const) {
    ;(store as unknown as Record<string, unknown>)[k] = (inner[k] as (...a: unknown[]) => unknown).bind(inner)
  }
  store.compareAndAppend = async (...args) => {
    entered.resolve()
    await release.promise
    return inner.compareAndAppend(...args)
  }
  return {
    store,
    entered: entered.promise,
    gate: {
      open() {
        release.resolve()
        release = deferred<void>()
      },
    },
  }
}

/** Two proposals on base 0 with quorum; the first commit waits for the disk (`entered`). */
async function queuedBehindSlowDisk() {
  const { store, gate, entered } = gatedStore()
  h = await harness({ store })
  const x = h
  const a = await x.client.propose(payload(1))
  const b = await x.client.propose(payload(2))
  for (const p of [a, b]) for (const k of x.keys.slice(0, 2)) await x.client.approveWith(p.proposalId, k)
  const token = x.issuer.mint({ scope: ALL_SCOPES })
  const queued = async (): Promise<void> => {
    while (!/queue_depth\{queue="proposals",service="registry"\} 1/.test(await x.svc.metricsText())) await new Promise((r) => setImmediate(r))
  }
  return { x, a, b, token, gate, entered, queued }
}

describe('commit deadline', () => {
  it('answers 504 at the caller deadline; the commit already being written completes and a retry returns it', async () => {
    const { store, gate, entered } = gatedStore()
    h = await harness({ store })
    const x = h
    const p = await x.client.propose(payload(1))
    for (const k of x.keys.slice(0, 2)) await x.client.approveWith(p.proposalId, k)
    const token = x.issuer.mint({ scope: ALL_SCOPES })
    const pending = memoryRequest(x.svc, { method: 'POST', path: `/registry/commit/${p.proposalId}`, headers: { authorization: `Bearer ${token}`, 'x-deadline-ms': '250' } })
    // The commit is being written (its deadline timer armed before it was queued): now time runs out.
    await entered
    await x.clock.advance(250)
    const res = await pending
    expect(res.status).toBe(504)
    expect(await res.json()).toMatchObject({ error: { code: 'Timeout', details: { op: 'commit' } } })
    expect(await x.svc.metricsText()).toMatch(/io_timeouts_total\{op="commit",service="registry"\} 1/)
    gate.open()
    const again = await x.client.commit(p.proposalId)
    expect(again.version).toBe(1)
    expect(x.svc.head().version).toBe(1)
  })
  it('a commit still queued when its deadline passes is answered 504 and never taken up', async () => {
    // Both on base 0: the Committer would refuse the second with ChainMismatch (counted in
    // commit_cas_fail_total) were it taken up; its closed gate refuses it before that.
    const { x, a, b, token, gate, entered, queued } = await queuedBehindSlowDisk()
    const commit = (id: string, ms: number): ReturnType<typeof memoryRequest> =>
      memoryRequest(x.svc, { method: 'POST', path: `/registry/commit/${id}`, headers: { authorization: `Bearer ${token}`, 'x-deadline-ms': String(ms) } })
    const first = commit(a.proposalId, 60_000)
    await entered
    const second = commit(b.proposalId, 250)
    // Queued behind the first (which waits for the disk) once the proposals queue holds it.
    await queued()
    await x.clock.advance(250)
    expect((await second).status).toBe(504)
    gate.open()
    expect((await first).status).toBe(201)
    // A later command on the same queue is answered only after the second commit was taken up.
    await x.client.propose(payload(3))
    const metrics = await x.svc.metricsText()
    expect(metrics).not.toMatch(/commit_cas_fail_total\{service="registry"\} [1-9]/)
    expect(metrics).toMatch(/io_timeouts_total\{op="commit",service="registry"\} 1/)
    expect(x.svc.head().version).toBe(1)
  })
})

async function text(body: AsyncIterable<Uint8Array>): Promise<string> {
  let t = ''
  for await (const c of body) t += Buffer.from(c).toString()
  return t
}

describe('commit: a client that goes away', () => {
  it('over node:http: a commit still queued when the client disconnects is never taken up', async () => {
    const { x, a, b, token, gate, entered, queued } = await queuedBehindSlowDisk()
    const server = await serve(x.svc, { port: 0 })
    try {
      const first = memoryRequest(x.svc, { method: 'POST', path: `/registry/commit/${a.proposalId}`, headers: { authorization: `Bearer ${token}` } })
      await entered
      const s = connect(server.port, '127.0.0.1')
      s.write(`POST /registry/commit/${b.proposalId} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-length: 0\r\n\r\n`)
      await queued()
      const closed = new Promise((r) => s.once('close', r))
      s.resetAndDestroy()
      await closed
      // The server has seen the client go: the commit route answered its request 503 Canceled.
      while (!/http_requests_total\{[^}]*route="\/registry\/commit\/:proposalId"[^}]*status="503"[^}]*\} 1/.test(await x.svc.metricsText())) await new Promise((r) => setTimeout(r, 5))
      gate.open()
      expect((await first).status).toBe(201)
      // A later command on the same queue is answered only after the abandoned commit was taken up.
      await x.client.propose(payload(3))
      const metrics = await x.svc.metricsText()
      expect(metrics).not.toMatch(/commit_cas_fail_total\{service="registry"\} [1-9]/)
      expect(x.svc.head().version).toBe(1)
      // The abandoned proposal was not committed: it commits now only as a chain mismatch.
      await expect(x.client.commit(b.proposalId)).rejects.toMatchObject({ code: 'ChainMismatch' })
    } finally {
      await server.close()
    }
  })

  it('in memory (the request signal): a commit still queued when the caller aborts answers 503 Canceled and is never taken up', async () => {
    const { x, a, b, token, gate, entered, queued } = await queuedBehindSlowDisk()
    const first = memoryRequest(x.svc, { method: 'POST', path: `/registry/commit/${a.proposalId}`, headers: { authorization: `Bearer ${token}` } })
    await entered
    const ac = new AbortController()
    const second = x.svc.dispatch({ method: 'POST', url: `/registry/commit/${b.proposalId}`, headers: { authorization: `Bearer ${token}` }, body: (async function* () {})(), remoteAddress: 'memory', signal: ac.signal })
    await queued()
    ac.abort()
    const res = await second
    gate.open()
    expect(res.status).toBe(503)
    expect(await text(res.body)).toMatch(/"code":"Canceled"/)
    expect((await first).status).toBe(201)
    await x.client.propose(payload(3))
    expect(await x.svc.metricsText()).not.toMatch(/commit_cas_fail_total\{service="registry"\} [1-9]/)
    expect(x.svc.head().version).toBe(1)
  })

  it('a commit whose client is already gone is refused before it is queued', async () => {
    h = await harness()
    const x = h
    const p = await x.client.propose(payload(1))
    for (const k of x.keys.slice(0, 2)) await x.client.approveWith(p.proposalId, k)
    const token = x.issuer.mint({ scope: ALL_SCOPES })
    const ac = new AbortController()
    ac.abort()
    const res = await x.svc.dispatch({ method: 'POST', url: `/registry/commit/${p.proposalId}`, headers: { authorization: `Bearer ${token}` }, body: (async function* () {})(), remoteAddress: 'memory', signal: ac.signal })
    expect(res.status).toBe(503)
    expect(await text(res.body)).toMatch(/"code":"Canceled"/)
    expect(x.svc.head().version).toBe(0)
    expect((await x.client.commit(p.proposalId)).version).toBe(1)
  })
})

describe('shutdown', () => {
  it('ends SSE streams, turns writes then reads unready, answers 503 afterwards; a second close is harmless', async () => {
    h = await harness()
    const x = h
    const stream = await x.svc.dispatch({ method: 'GET', url: '/registry/stream', headers: {}, body: (async function* () {})(), remoteAddress: 'memory', signal: new AbortController().signal })
    const drained = (async () => {
      let n = 0
      for await (const c of stream.body) n += c.length
      return n
    })()
    const closing = x.svc.close()
    expect(x.svc.health()).toMatchObject({ writeReady: false })
    await closing
    await x.svc.close()
    expect(await drained).toBeGreaterThan(0)
    const res = await memoryRequest(x.svc, { method: 'GET', path: '/registry/head' })
    expect(res.status).toBe(503)
    await res.dump()
    await expect(x.client.propose(payload(1))).rejects.toMatchObject({ status: 503 })
  })
})
