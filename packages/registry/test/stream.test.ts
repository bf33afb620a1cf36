import { afterEach, describe, expect, it } from 'vitest'
import { HttpTransport, serve, sseEvents, type RonServer } from '@ron/core'
import { createRegistryClient } from '../src/client.js'
import type { RegistryUpdated } from '../src/committer.js'
import { ALL_SCOPES, harness, payload, type Harness } from './helpers.js'

let h: Harness
let server: RonServer | undefined
let http: HttpTransport | undefined
afterEach(async () => {
  await http?.close()
  await server?.close()
  await h?.close()
  http = undefined
  server = undefined
})

async function commitN(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const p = await h.client.propose(payload(h.svc.head().version + 1))
    for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
    await h.client.commit(p.proposalId)
  }
}

describe('/registry/stream over a real socket', () => {
  it('resumes with Last-Event-ID from the log, then follows live commits (id = version)', async () => {
    h = await harness()
    server = await serve(h.svc, { port: 0 })
    http = new HttpTransport({ targets: { registry: server.url } })
    const client = createRegistryClient(http, { token: h.issuer.mint({ scope: ALL_SCOPES }) })
    await commitN(3)
    const ac = new AbortController()
    const seen: RegistryUpdated[] = []
    const reading = (async () => {
      for await (const u of client.watch({ lastEventId: 1, signal: ac.signal })) {
        seen.push(u)
        if (u.version === 3) await commitN(1) // a live commit after the replay
        if (u.version === 4) break
      }
    })()
    await reading
    ac.abort()
    expect(seen.map((u) => u.version)).toEqual([2, 3, 4])
    const e4 = await client.get(4)
    expect(seen[2]).toMatchObject({ type: 'RegistryUpdated', version: 4, b3: e4.payloadB3, hash: e4.hash })
  })

  it('raw frames carry id: <version> and event: registry:updated', async () => {
    h = await harness()
    await commitN(2)
    server = await serve(h.svc, { port: 0 })
    const ac = new AbortController()
    const res = await fetch(`${server.url}/registry/stream`, { headers: { 'last-event-id': '0' }, signal: ac.signal })
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/)
    const got: Array<{ id?: string; event?: string }> = []
    for await (const m of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
      got.push({ ...(m.id === undefined ? {} : { id: m.id }), ...(m.event === undefined ? {} : { event: m.event }) })
      if (got.length === 2) break
    }
    ac.abort()
    expect(got).toEqual([
      { id: '1', event: 'registry:updated' },
      { id: '2', event: 'registry:updated' },
    ])
  })
})

describe('stream limits and liveness', () => {
  const open = (): Promise<import('@ron/core').RonResponse> =>
    h.svc.dispatch({ method: 'GET', url: '/registry/stream', headers: {}, body: (async function* () {})(), remoteAddress: 'memory', signal: new AbortController().signal })

  it('caps clients (one more gets 429 Busy) and sends a heartbeat after 5 s of silence', async () => {
    h = await harness({ sse: { maxClients: 1 } })
    const first = await open()
    expect(first.status).toBe(200)
    const second = await open()
    expect(second.status).toBe(429)
    for await (const _ of second.body) void _
    const it = first.body[Symbol.asyncIterator]()
    const hello = await it.next()
    expect(Buffer.from(hello.value as Uint8Array).toString()).toMatch(/^: /)
    const beat = it.next()
    await h.clock.advance(5000)
    expect(Buffer.from((await beat).value as Uint8Array).toString()).toMatch(/^: hb/)
    await it.return?.()
  })
})

describe('slow consumers never slow the Committer', () => {
  it('a stalled SSE client is dropped to the latest HEAD (counted) while commits go on', async () => {
    h = await harness({ sse: { bufferPerClient: 4 } })
    // A stream nobody reads: its body is never pulled.
    const stalled = await h.svc.dispatch({ method: 'GET', url: '/registry/stream', headers: {}, body: (async function* () {})(), remoteAddress: 'memory', signal: new AbortController().signal })
    expect(stalled.status).toBe(200)
    await commitN(20)
    expect(h.svc.head().version).toBe(20)
    expect(await h.svc.metricsText()).toMatch(/bus_lagged_total\{topic="stream",service="registry"\} [1-9]/)
    // When it finally reads, it gets the latest HEAD rather than the backlog.
    const versions: number[] = []
    for await (const m of sseEvents(stalled.body)) {
      versions.push(Number(m.id))
      if (Number(m.id) === 20) break
    }
    expect(versions.at(-1)).toBe(20)
    expect(versions.length).toBeLessThanOrEqual(4)
  })

  it('a stalled bus subscriber loses the oldest events (bus_lagged_total{topic="committed"}) and commits go on', async () => {
    h = await harness({ queues: { committed: 4 } })
    const sub = h.svc.subscribe()
    await commitN(10)
    expect(h.svc.head().version).toBe(10)
    expect(await h.svc.metricsText()).toMatch(/bus_lagged_total\{topic="committed",service="registry"\} [1-9]/)
    const first = await sub.recv()
    expect(first).toMatchObject({ lagged: 6 })
    const next = await sub.recv()
    expect(next).toMatchObject({ value: { version: 7 } })
    sub.close()
  })
})
