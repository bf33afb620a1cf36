/**
 * Request body decoding (`src/http/body.ts`): which cap applies to which body, what an
 * OverLimit says, 501 for unsupported transfer codings, 408 for a stalled body.
 */
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { checkTransferEncoding, decodedBody, STREAM_DECOMPRESSION_SLACK } from '../../src/http/body.js'
import type { RonRequest } from '../../src/http/types.js'
import { isRonError, noopMetrics, systemClock } from '../../src/index.js'
import { VirtualClock } from '../../src/testing/index.js'

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
