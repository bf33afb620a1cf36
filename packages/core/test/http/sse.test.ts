import { afterEach, describe, expect, it } from 'vitest'
import { SseHub, createServiceHost, isRonError, serve, sseEvents, type SseMessage, type Topology } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { mkReq } from './helpers.js'
import { RecordingMetrics } from '../../src/testing/index.js'

const enc = new TextEncoder()
async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield await Promise.resolve(enc.encode(p))
}
async function take(it: AsyncIterator<SseMessage>, n: number): Promise<SseMessage[]> {
  const out: SseMessage[] = []
  while (out.length < n) {
    const r = await it.next()
    if (r.done === true) break
    out.push(r.value)
  }
  return out
}
const ctx = (headers: Record<string, string> = {}, signal = new AbortController().signal) => ({ req: mkReq('GET', '/s', { headers, signal }), signal })
/** The reply body of a hub as parsed events. */
function events(body: unknown): AsyncIterator<SseMessage> {
  return sseEvents(body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
}

describe('sseEvents', () => {
  it('parses frames split anywhere, multi-line data, ids and event types, and skips comments', async () => {
    const got: SseMessage[] = []
    for await (const e of sseEvents(chunks(': hi\n\nid: 1\nevent: head\nda', 'ta: {"v":1}\n\ndata: a\ndata: b\n', '\n', 'data: incomplete'))) got.push(e)
    expect(got).toEqual([{ id: '1', event: 'head', data: '{"v":1}' }, { data: 'a\nb' }])
  })

  it('stops waiting on a silent stream when its signal aborts, and releases the body', async () => {
    let released = false
    const silent: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<Uint8Array>>(() => {}),
        return: () => {
          released = true
          return Promise.resolve({ done: true, value: undefined })
        },
      }),
    }
    const ac = new AbortController()
    const next = sseEvents(silent, { signal: ac.signal }).next()
    ac.abort()
    await expect(next).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    expect(released).toBe(true)
  })

  it('fails with OverLimit on an event over maxEventSize', async () => {
    const it = sseEvents(chunks(`data: ${'x'.repeat(100)}`), { maxEventSize: 10 })
    await expect(it.next()).rejects.toSatisfy((e) => isRonError(e, 'OverLimit'))
  })
})

describe('SseHub', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('streams published events with ids to every client, JSON for non-strings', async () => {
    const hub = new SseHub<unknown>({ name: 'reg', bufferPerClient: 8, maxClients: 2, onLag: 'drop-oldest' })
    cleanups.push(() => hub.close())
    const a = hub.reply(ctx())
    expect(a.headers?.['content-type']).toBe('text/event-stream; charset=utf-8')
    const b = hub.reply(ctx())
    const ea = events(a.body)
    const eb = events(b.body)
    hub.publish({ id: '1', event: 'head', data: { version: 1 } })
    hub.publish({ data: 'plain' })
    expect(await take(ea, 2)).toEqual([{ id: '1', event: 'head', data: '{"version":1}' }, { data: 'plain' }])
    expect(await take(eb, 2)).toEqual([{ id: '1', event: 'head', data: '{"version":1}' }, { data: 'plain' }])
    expect(hub.clients).toBe(2)
  })

  it("drop-oldest keeps the newest bufferPerClient events of a slow client and counts bus_lagged_total{topic}", async () => {
    const metrics = new RecordingMetrics()
    const hub = new SseHub<number>({ name: 'reg', bufferPerClient: 2, maxClients: 1, onLag: 'drop-oldest', metrics })
    cleanups.push(() => hub.close())
    const it = events(hub.reply(ctx()).body)
    for (let i = 1; i <= 5; i++) hub.publish({ id: String(i), data: i })
    expect((await take(it, 2)).map((e) => e.id)).toEqual(['4', '5'])
    expect(metrics.counter('bus_lagged_total', { topic: 'reg' })).toBe(3)
  })

  it("'latest' keeps only the newest event of a slow client", async () => {
    const hub = new SseHub<number>({ name: 'head', bufferPerClient: 2, maxClients: 1, onLag: 'latest' })
    cleanups.push(() => hub.close())
    const it = events(hub.reply(ctx()).body)
    for (let i = 1; i <= 3; i++) hub.publish({ id: String(i), data: i })
    hub.close()
    expect((await take(it, 5)).map((e) => e.id)).toEqual(['3'])
  })

  it('refuses a client over maxClients with 429 Busy, and frees the slot when a client goes away', async () => {
    const hub = new SseHub({ name: 's', bufferPerClient: 1, maxClients: 1, onLag: 'latest' })
    cleanups.push(() => hub.close())
    const ac = new AbortController()
    hub.reply(ctx({}, ac.signal))
    let err: unknown
    try {
      hub.reply(ctx())
    } catch (e) {
      err = e
    }
    expect(isRonError(err, 'Busy')).toBe(true)
    expect((err as { details: unknown }).details).toMatchObject({ reason: 'sse_clients' })
    ac.abort()
    expect(hub.clients).toBe(0)
    expect(() => hub.reply(ctx())).not.toThrow()
  })

  it('replays from Last-Event-ID before live events', async () => {
    const seen: string[] = []
    const hub = new SseHub<number>({
      name: 's',
      bufferPerClient: 8,
      maxClients: 4,
      onLag: 'drop-oldest',
      replay: (last) => {
        seen.push(last)
        return [{ id: '2', data: 2 }, { id: '3', data: 3 }]
      },
    })
    cleanups.push(() => hub.close())
    const it = events(hub.reply(ctx({ 'last-event-id': '1' })).body)
    hub.publish({ id: '4', data: 4 })
    expect((await take(it, 3)).map((e) => e.id)).toEqual(['2', '3', '4'])
    expect(seen).toEqual(['1'])
  })

  it('sends a heartbeat comment after heartbeatMs of silence (virtual time)', async () => {
    const clock = new VirtualClock()
    const hub = new SseHub({ name: 's', bufferPerClient: 1, maxClients: 1, onLag: 'latest', heartbeatMs: 5000, clock })
    cleanups.push(() => hub.close())
    const raw = (hub.reply(ctx()).body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
    const dec = new TextDecoder()
    expect(dec.decode((await raw.next()).value)).toBe(': connected\n\n')
    const next = raw.next()
    await clock.advance(5000)
    expect(dec.decode((await next).value)).toBe(': hb\n\n')
    expect(clock.pending).toBe(0)
    hub.close()
    expect((await raw.next()).done).toBe(true)
  })

  it('ends every stream on close(), refuses publish and new clients with Closed, and closes on its signal', async () => {
    const ac = new AbortController()
    const hub = new SseHub({ name: 's', bufferPerClient: 1, maxClients: 1, onLag: 'latest', signal: ac.signal })
    const it = events(hub.reply(ctx()).body)
    ac.abort()
    expect(hub.closed).toBe(true)
    expect((await it.next()).done).toBe(true)
    expect(() => hub.publish({ data: 1 })).toThrow(expect.objectContaining({ code: 'Closed' }))
    expect(() => hub.reply(ctx())).toThrow(expect.objectContaining({ code: 'Closed' }))
  })

  it('rejects ids with line breaks as Malformed', () => {
    const hub = new SseHub({ name: 's', bufferPerClient: 1, maxClients: 1, onLag: 'latest' })
    hub.reply(ctx())
    expect(() => hub.publish({ id: 'a\nb', data: 1 })).toThrow(expect.objectContaining({ code: 'Malformed' }))
    hub.close()
  })

  it('streams through a service host over a real socket; the host drain ends the stream (drainSignal)', async () => {
    const topology: Topology = { service: 'svc', tasks: [], channels: [] }
    const host = createServiceHost({ id: 'svc', version: '1', topology })
    const hub = new SseHub<{ v: number }>({ name: 'svc', bufferPerClient: 8, maxClients: 4, onLag: 'latest', signal: host.drainSignal })
    host.routes([{ method: 'GET', path: '/stream', handler: (c) => hub.reply(c) }])
    const srv = await serve(host.service, { port: 0 })
    cleanups.push(() => srv.close())
    const res = await fetch(`${srv.url}/stream`)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const it = sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
    await expect.poll(() => hub.clients).toBe(1)
    hub.publish({ id: '1', data: { v: 1 } })
    expect((await it.next()).value).toEqual({ id: '1', data: '{"v":1}' })
    await host.service.close()
    expect((await it.next()).done).toBe(true)
  })
})
