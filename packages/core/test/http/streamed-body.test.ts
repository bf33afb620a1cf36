/**
 * The event-driven reader of identity-encoded node bodies behind `ctx.stream()` (`StreamedBody`
 * in `src/http/body.ts`): order, back-pressure (two pieces held at most), the gap timeout per wait
 * (not per body), the limit, a client that goes away, and stopping early without destroying the
 * request. Deterministic: a PassThrough stands for the request, a VirtualClock for time.
 */
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { decodedBody } from '../../src/http/body.js'
import type { RonRequest } from '../../src/http/types.js'
import { isRonError, noopMetrics, systemClock } from '../../src/index.js'
import { VirtualClock, abortListenerCount } from '../../src/testing/index.js'

type Limits = Parameters<typeof decodedBody>[1]

function req(body: PassThrough, headers: Record<string, string> = {}): RonRequest {
  return { method: 'PUT', url: '/', headers, body, remoteAddress: 'test', signal: new AbortController().signal }
}

const limits = (over: Partial<Limits> = {}): Limits => ({
  limit: Infinity,
  ratio: 10,
  maxDecoded: 64 * 1024,
  readTimeoutMs: 1000,
  clock: systemClock,
  signal: new AbortController().signal,
  metrics: noopMetrics,
  ...over,
})

const codeOf = (e: unknown): string => (isRonError(e) ? `${e.code}:${JSON.stringify(e.details.reason ?? e.details.source ?? '').replace(/"/g, '')}` : String(e))

/** Lets queued stream events run. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('streamed identity bodies', () => {
  it('yields every piece in order and ends; at most two pieces are held before the stream is paused', async () => {
    const s = new PassThrough()
    const it = decodedBody(req(s), limits())[Symbol.asyncIterator]()
    s.write('a')
    s.write('b')
    s.write('c')
    await tick()
    expect(s.isPaused()).toBe(true) // two held, the rest waits in the stream
    const got: string[] = []
    got.push(Buffer.from((await it.next()).value as Uint8Array).toString())
    await tick()
    s.end('d')
    for (;;) {
      const r = await it.next()
      if (r.done === true) break
      got.push(Buffer.from(r.value).toString())
    }
    expect(got.join('')).toBe('abcd')
    expect(s.listenerCount('data')).toBe(0)
  })

  it('times out a wait for the client after readTimeoutMs, counting from the wait, not from the start of the body', async () => {
    const clock = new VirtualClock()
    const s = new PassThrough()
    const it = decodedBody(req(s), limits({ clock, readTimeoutMs: 100 }))[Symbol.asyncIterator]()
    // Pieces 80 ms apart: the body takes far longer than 100 ms, no wait does.
    for (let i = 0; i < 5; i++) {
      const next = it.next()
      await clock.advance(80)
      s.write('x')
      expect((await next).done).toBe(false)
    }
    const stalled = it.next().then(
      () => 'resolved',
      (e: unknown) => codeOf(e),
    )
    await clock.advance(99)
    s.write('y') // just in time
    expect(await stalled).toBe('resolved')
    const last = it.next().then(
      () => 'resolved',
      (e: unknown) => codeOf(e),
    )
    await clock.advance(100)
    expect(await last).toBe('RequestTimeout:gap')
    expect(s.destroyed).toBe(false)
    expect(s.listenerCount('data')).toBe(0)
  })

  it('a body over its limit fails with body_limit and leaves the request paused, not destroyed', async () => {
    const s = new PassThrough()
    const it = decodedBody(req(s), limits({ limit: 5 }))[Symbol.asyncIterator]()
    const first = it.next()
    s.write('abc')
    expect((await first).done).toBe(false)
    const second = it.next().catch((e: unknown) => codeOf(e))
    s.write('def')
    expect(await second).toBe('OverLimit:body_limit')
    expect(s.destroyed).toBe(false)
    expect(s.isPaused()).toBe(true)
  })

  it('a client that goes away mid-body is Canceled; the abort of the request rejects the wait and its one listener goes', async () => {
    const gone = new PassThrough()
    const a = decodedBody(req(gone), limits())[Symbol.asyncIterator]()
    const pendingA = a.next().catch((e: unknown) => codeOf(e))
    gone.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
    expect(await pendingA).toBe('Canceled:')

    const closed = new PassThrough()
    const b = decodedBody(req(closed), limits())[Symbol.asyncIterator]()
    const pendingB = b.next().catch((e: unknown) => codeOf(e))
    closed.destroy()
    expect(await pendingB).toBe('Canceled:')
    // Asking for the body of a request already gone fails at once.
    await expect(decodedBody(req(closed), limits())[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 'Canceled' })

    const ac = new AbortController()
    const s = new PassThrough()
    const c = decodedBody(req(s), limits({ signal: ac.signal }))[Symbol.asyncIterator]()
    expect(abortListenerCount(ac.signal)).toBe(1)
    const pendingC = c.next().catch((e: unknown) => codeOf(e))
    ac.abort(new Error('shutdown'))
    expect(await pendingC).toBe('Error: shutdown')
    expect(abortListenerCount(ac.signal)).toBe(0)
  })

  it('stopping early (return) detaches and pauses the request without destroying it', async () => {
    const s = new PassThrough()
    const body = decodedBody(req(s), limits())
    let n = 0
    const reading = (async () => {
      for await (const piece of body) {
        n += piece.byteLength
        break
      }
    })()
    s.write('abc')
    await reading
    expect(n).toBe(3)
    expect(s.listenerCount('data')).toBe(0)
    expect(s.listenerCount('end')).toBe(0)
    expect(s.destroyed).toBe(false)
    expect(s.isPaused()).toBe(true)
  })
})
