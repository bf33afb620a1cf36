/**
 * Request body decoding (`src/http/body.ts`): which cap applies to which body, what an
 * OverLimit says, 501 for unsupported transfer codings, 408 for a stalled body.
 */
import { PassThrough } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { checkTransferEncoding, decodedBody, readWholeBody, STREAM_DECOMPRESSION_SLACK } from '../../src/http/body.js'
import type { RonRequest } from '../../src/http/types.js'
import { RequestTimeoutError, isRonError, noopMetrics, systemClock } from '../../src/index.js'
import { VirtualClock, abortListenerCount } from '../../src/testing/index.js'

function req(body: Uint8Array | AsyncIterable<Uint8Array>, headers: Record<string, string> = {}): RonRequest {
  const iterable =
    body instanceof Uint8Array
      ? (async function* () {
          yield body
        })()
      : body
  return { method: 'POST', url: '/', headers, body: iterable, remoteAddress: 'memory', signal: new AbortController().signal }
}

const limits = (limit: number, over: Partial<Parameters<typeof decodedBody>[1]> = {}): Parameters<typeof decodedBody>[1] => ({
  limit,
  ratio: 10,
  maxDecoded: 64 * 1024,
  readTimeoutMs: 5000,
  clock: systemClock,
  signal: new AbortController().signal,
  metrics: noopMetrics,
  ...over,
})

async function drain(it: AsyncIterable<Uint8Array>): Promise<number | string> {
  let n = 0
  try {
    for await (const c of it) n += c.byteLength
    return n
  } catch (e) {
    return isRonError(e) ? `${e.code}:${String(e.details.source ?? e.details.reason)}:${JSON.stringify(e.details.limit ?? '')}` : String(e)
  }
}

describe('decodedBody caps', () => {
  it('a finite (JSON) route is capped at min(bodyLimit, maxDecoded) decoded bytes', async () => {
    const body = gzipSync(new Uint8Array(100 * 1024))
    expect(await drain(decodedBody(req(body, { 'content-encoding': 'gzip' }), limits(1024 * 1024, { ratio: 1e6 })))).toBe('OverLimit:decompressed_size:65536')
    expect(await drain(decodedBody(req(body, { 'content-encoding': 'gzip' }), limits(50_000, { ratio: 1e6 })))).toBe('OverLimit:body_limit:50000')
  })

  it('a streaming route (bodyLimit Infinity) is not held to the absolute cap, only to the ratio guard', async () => {
    const data = new Uint8Array(1024 * 1024) // 1 MiB of zeros: ~1 KiB gzipped, a legitimate file
    expect(await drain(decodedBody(req(gzipSync(data), { 'content-encoding': 'gzip' }), limits(Infinity)))).toBe(1024 * 1024)
    // A bomb: decoded far beyond ratio × encoded + the streaming slack.
    const member = gzipSync(new Uint8Array(4_000_000))
    const bomb = Buffer.concat(Array.from({ length: 8 }, () => member))
    const r = await drain(decodedBody(req(bomb, { 'content-encoding': 'gzip' }), limits(Infinity)))
    expect(r).toBe('OverLimit:decompression_ratio:10')
    expect(STREAM_DECOMPRESSION_SLACK).toBe(16 * 1024 * 1024)
  })

  it('an identity body over the limit says body_limit', async () => {
    expect(await drain(decodedBody(req(new Uint8Array(2000)), limits(1000)))).toBe('OverLimit:body_limit:1000')
    expect(() => decodedBody(req(new Uint8Array(0), { 'content-length': '2000' }), limits(1000))).toThrow(expect.objectContaining({ code: 'OverLimit', details: expect.objectContaining({ source: 'body_limit', limit: 1000 }) }) as Error)
  })
})

describe('transfer codings', () => {
  it('accepts chunked and refuses anything else with 501 NotImplemented', () => {
    expect(() => checkTransferEncoding(undefined)).not.toThrow()
    expect(() => checkTransferEncoding('chunked')).not.toThrow()
    for (const te of ['gzip, chunked', 'deflate', 'chunked, br']) {
      expect(() => checkTransferEncoding(te)).toThrow(expect.objectContaining({ code: 'NotImplemented', status: 501 }) as Error)
    }
    expect(() => decodedBody(req(new Uint8Array(1), { 'transfer-encoding': 'gzip, chunked' }), limits(10))).toThrow(expect.objectContaining({ code: 'NotImplemented' }) as Error)
  })
})

describe('gap timeout', () => {
  it('a body that stalls longer than readTimeoutMs is 408 RequestTimeout (reason gap)', async () => {
    const clock = new VirtualClock()
    const stalled: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<Uint8Array>>(() => undefined) }),
    }
    const result = drain(decodedBody(req(stalled), limits(1000, { clock, readTimeoutMs: 100 })))
    await clock.advance(100)
    expect(await result).toBe('RequestTimeout:gap:""')
  })
})

describe('streamed bodies (decodedBody identity path)', () => {
  it('one abort listener serves the whole body: it is there while reading, gone after, and an abort mid-body rejects with the reason', async () => {
    const ac = new AbortController()
    const s = new PassThrough()
    const it = decodedBody(req(s), limits(1000, { signal: ac.signal }))[Symbol.asyncIterator]()
    s.write('a')
    expect((await it.next()).value).toEqual(Buffer.from('a'))
    s.write('b')
    expect((await it.next()).value).toEqual(Buffer.from('b'))
    expect(abortListenerCount(ac.signal)).toBe(1)
    const pending = it.next()
    ac.abort(new RequestTimeoutError('deadline'))
    await expect(pending).rejects.toMatchObject({ code: 'RequestTimeout' })
    expect(abortListenerCount(ac.signal)).toBe(0)
    expect(s.destroyed).toBe(false)

    const done = new PassThrough()
    const all = drain(decodedBody(req(done), limits(1000, { signal: new AbortController().signal })))
    done.end('xyz')
    expect(await all).toBe(3)
  })
})

describe('readWholeBody (the buffered reader behind ctx.bytes() and ctx.json())', () => {
  type Limits = Parameters<typeof readWholeBody>[1]
  const wholeLimits = (limit: number, over: Partial<Limits> = {}): Limits => ({ limit, ratio: 10, maxDecoded: 64 * 1024, readTimeoutMs: 5000, clock: systemClock, metrics: noopMetrics, ...over })
  const streamReq = (stream: PassThrough, headers: Record<string, string> = {}): RonRequest => ({
    method: 'POST',
    url: '/',
    headers,
    body: stream,
    remoteAddress: 'memory',
    get signal(): AbortSignal {
      throw new Error('the request signal must not be created on the node stream path')
    },
  })
  const ours = (s: PassThrough): number => ['data', 'end', 'error', 'close'].reduce((n, ev) => n + s.listenerCount(ev), 0)
  const outcome = (p: Promise<Uint8Array>): Promise<string> =>
    p.then(
      (b) => `ok:${Buffer.from(b).toString()}`,
      (e: unknown) => (isRonError(e) ? `${e.code}:${JSON.stringify(e.details.source ?? e.details.reason ?? '').replaceAll('"', '')}` : `other:${String(e)}`),
    )

  it('joins the chunks of a node stream without asking for the request signal, and leaves no listener behind', async () => {
    const s = new PassThrough()
    const p = readWholeBody(streamReq(s), wholeLimits(100), () => new AbortController().signal, undefined)
    s.write('{"a":')
    s.end('1}')
    expect(await outcome(p)).toBe('ok:{"a":1}')
    expect(ours(s)).toBe(0)
  })

  it('a body over the limit is OverLimit body_limit; the stream is paused, not destroyed (the reply can still be written)', async () => {
    const s = new PassThrough()
    const p = readWholeBody(streamReq(s), wholeLimits(8), () => new AbortController().signal, undefined)
    s.write('12345')
    s.write('67890')
    expect(await outcome(p)).toBe('OverLimit:body_limit')
    expect(s.destroyed).toBe(false)
    expect(s.isPaused()).toBe(true)
    expect(ours(s)).toBe(0)
    expect(() => readWholeBody(streamReq(new PassThrough(), { 'content-length': '9' }), wholeLimits(8), () => new AbortController().signal, undefined)).toThrow(
      expect.objectContaining({ code: 'OverLimit' }) as Error,
    )
  })

  it('a stalled body is 408 RequestTimeout after the gap, counted in io_timeouts_total{op="read"}', async () => {
    const clock = new VirtualClock()
    const counted: string[] = []
    const metrics = { ...noopMetrics, inc: (name: string, labels?: Record<string, string>) => void counted.push(`${name}:${labels?.op ?? ''}`) }
    const s = new PassThrough()
    const p = outcome(readWholeBody(streamReq(s), wholeLimits(100, { clock, readTimeoutMs: 100, metrics }), () => new AbortController().signal, undefined))
    s.write('{')
    await clock.advance(99)
    s.write('"')
    await clock.advance(99) // each chunk re-arms the gap timer
    expect(clock.pending).toBe(1)
    await clock.advance(1)
    expect(await p).toBe('RequestTimeout:gap')
    expect(counted).toEqual(['io_timeouts_total:read'])
    expect(clock.pending).toBe(0)
  })

  it('a client that goes away (ECONNRESET, or close before the end) is Canceled', async () => {
    const reset = new PassThrough()
    const p1 = outcome(readWholeBody(streamReq(reset), wholeLimits(100), () => new AbortController().signal, undefined))
    reset.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
    expect(await p1).toBe('Canceled:')
    const closed = new PassThrough()
    const p2 = outcome(readWholeBody(streamReq(closed), wholeLimits(100), () => new AbortController().signal, undefined))
    closed.write('{')
    closed.destroy()
    expect(await p2).toBe('Canceled:')
    // Gone before the body was asked for: Canceled at once, not a 408 after the gap.
    const clock = new VirtualClock()
    const gone = new PassThrough()
    gone.destroy()
    await new Promise((r) => setImmediate(r)) // let 'close' be emitted before the read starts
    const p3 = outcome(readWholeBody(streamReq(gone), wholeLimits(100, { clock }), () => new AbortController().signal, undefined))
    expect(clock.pending).toBe(0)
    expect(await p3).toBe('Canceled:')
  })

  it("a context's own signal (a queued job's) aborts the read with its reason and is detached after", async () => {
    const s = new PassThrough()
    const job = new AbortController()
    const p = outcome(readWholeBody(streamReq(s), wholeLimits(100), () => new AbortController().signal, job.signal))
    job.abort(new RequestTimeoutError('deadline'))
    expect(await p).toBe('RequestTimeout:')
    const done = new AbortController()
    done.abort()
    expect(await outcome(readWholeBody(streamReq(new PassThrough()), wholeLimits(100), () => new AbortController().signal, done.signal))).toBe('Canceled:')
  })

  it('an encoded body or an iterable that is not a node stream takes the decodedBody path (with the request signal)', async () => {
    let asked = 0
    const signal = (): AbortSignal => {
      asked++
      return new AbortController().signal
    }
    const gz = outcome(readWholeBody(req(gzipSync('{"z":true}'), { 'content-encoding': 'gzip' }), wholeLimits(100), signal, undefined))
    expect(await gz).toBe('ok:{"z":true}')
    expect(await outcome(readWholeBody(req(Buffer.from('plain')), wholeLimits(100), signal, undefined))).toBe('ok:plain')
    expect(asked).toBe(2)
  })
})
