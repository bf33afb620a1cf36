/**
 * Request body decoding: `Content-Encoding` (gzip, deflate, br) through `node:zlib` streams, under
 * the route's body cap, a decompression ratio cap and an absolute cap, with a per-chunk read
 * timeout against slow clients. Nothing here buffers more than one chunk ahead.
 *
 * @module
 */

import { pipeline, Readable, type Transform } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { abortReason, type Clock } from '../clock.js'
import { CanceledError, MalformedError, OverLimitError, TimeoutError, UnsupportedMediaTypeError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import type { RonRequest } from './types.js'

/** Slack added to the ratio cap so tiny compressed bodies may still expand a little. */
export const DECOMPRESSION_SLACK = 64 * 1024

/** Caps and timeouts applied while reading one body. @internal */
export interface BodyLimits {
  /** Decoded-byte cap of the route. */
  limit: number
  ratio: number
  maxDecoded: number
  readTimeoutMs: number
  clock: Clock
  signal: AbortSignal
  metrics: MetricsSink | undefined
}

type Decoder = () => Transform

const DECODERS: ReadonlyMap<string, Decoder> = new Map<string, Decoder>([
  ['gzip', () => createGunzip()],
  ['x-gzip', () => createGunzip()],
  ['deflate', () => createInflate()],
  ['br', () => createBrotliDecompress()],
])

/**
 * Returns the decoder for the request's `Content-Encoding`, `undefined` for identity.
 * @throws {@link UnsupportedMediaTypeError} for any other encoding (including stacked ones).
 */
export function decoderFor(header: string | undefined): Decoder | undefined {
  if (header === undefined) return undefined
  const enc = header.trim().toLowerCase()
  if (enc === '' || enc === 'identity') return undefined
  const d = DECODERS.get(enc)
  if (d === undefined) {
    throw new UnsupportedMediaTypeError(`content-encoding '${header}' is not supported (gzip, deflate, br, identity)`, {
      details: { encoding: header },
    })
  }
  return d
}

/** Over-cap error naming the cap that was hit. */
function overLimit(what: string, cap: number): OverLimitError {
  return new OverLimitError(`request body exceeds the ${what} of ${cap} bytes`, { details: { limit: cap, kind: what } })
}

/**
 * The request's body, decoded and capped, as a stream of chunks.
 * @throws {@link OverLimitError} (413) when a cap is exceeded, {@link UnsupportedMediaTypeError} for an
 * unknown encoding, {@link TimeoutError} when the client stalls longer than `readTimeoutMs` between chunks.
 */
export function decodedBody(req: RonRequest, o: BodyLimits): AsyncGenerator<Uint8Array> {
  // Validate eagerly so a bad header fails before any body is read.
  const decoder = decoderFor(headerString(req.headers['content-encoding']))
  const declared = headerString(req.headers['content-length'])
  if (declared !== undefined) {
    const n = Number(declared)
    // An identity body's length is its decoded length; an encoded body may be a little larger
    // than what it decodes to (incompressible data), hence the slack.
    const cap = decoder === undefined ? o.limit : o.limit + DECOMPRESSION_SLACK
    if (Number.isFinite(n) && n > cap) throw overLimit('body limit', o.limit)
  }
  return decoder === undefined ? identity(req, o) : decoded(req, o, decoder())
}

async function* identity(req: RonRequest, o: BodyLimits): AsyncGenerator<Uint8Array> {
  let total = 0
  for await (const chunk of timedChunks(req.body, o, undefined)) {
    total += chunk.byteLength
    if (total > o.limit) throw overLimit('body limit', o.limit)
    yield chunk
  }
}

async function* decoded(req: RonRequest, o: BodyLimits, decoder: Transform): AsyncGenerator<Uint8Array> {
  const counter = { encoded: 0 }
  const source = Readable.from(timedChunks(req.body, o, counter), { objectMode: false })
  // Errors surface through the decoder's iterator below; the callback only has to exist.
  pipeline(source, decoder, () => {})
  const cap = Math.min(o.limit, o.maxDecoded)
  let total = 0
  try {
    for await (const chunk of decoder as AsyncIterable<Buffer>) {
      total += chunk.byteLength
      if (total > cap) throw overLimit(cap === o.limit ? 'body limit' : 'decompressed size cap', cap)
      if (total > o.ratio * counter.encoded + DECOMPRESSION_SLACK) {
        throw new OverLimitError(`decompressed body exceeds ${o.ratio}x its encoded size`, {
          details: { kind: 'decompression ratio', ratio: o.ratio, encoded: counter.encoded, decoded: total },
        })
      }
      yield chunk
    }
  } catch (e) {
    // zlib reports corrupt input with Z_* codes: that is the client's fault, not ours.
    const code = (e as { code?: unknown } | undefined)?.code
    if (typeof code === 'string' && code.startsWith('Z_')) {
      throw new MalformedError('request body is not valid for its content-encoding', { details: { reason: code }, cause: e })
    }
    throw e
  } finally {
    decoder.destroy()
    source.destroy()
  }
}

/**
 * Iterates `body` with a gap timeout between chunks, without destroying a `node:http` request
 * when iteration stops early (so an error response can still be written on the same socket).
 */
async function* timedChunks(
  body: AsyncIterable<Uint8Array>,
  o: BodyLimits,
  counter: { encoded: number } | undefined,
): AsyncGenerator<Uint8Array> {
  const readable = body as Partial<Readable>
  const it: AsyncIterator<Uint8Array> =
    typeof readable.iterator === 'function'
      ? (readable.iterator({ destroyOnReturn: false }) as AsyncIterator<Uint8Array>)
      : body[Symbol.asyncIterator]()
  let finished = false
  try {
    for (;;) {
      const r = await nextWithin(it, o)
      if (r.done === true) {
        finished = true
        return
      }
      if (counter !== undefined) counter.encoded += r.value.byteLength
      yield r.value
    }
  } finally {
    if (!finished) void it.return?.()?.catch(() => {})
  }
}

function nextWithin<T>(it: AsyncIterator<T>, o: BodyLimits): Promise<IteratorResult<T>> {
  const { signal, clock } = o
  if (signal.aborted) return Promise.reject(abortReason(signal))
  return new Promise<IteratorResult<T>>((resolve, reject) => {
    let settled = false
    const settle = (): boolean => {
      if (settled) return false
      settled = true
      clock.clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      return true
    }
    const onAbort = (): void => {
      if (settle()) reject(abortReason(signal))
    }
    const timer = clock.setTimeout(() => {
      if (!settle()) return
      o.metrics?.inc('io_timeouts_total', { op: 'read' })
      reject(new TimeoutError(`no request body data for ${o.readTimeoutMs} ms`, { details: { op: 'read' } }))
    }, o.readTimeoutMs)
    timer.unref?.()
    signal.addEventListener('abort', onAbort, { once: true })
    it.next().then(
      (r) => {
        if (settle()) resolve(r)
      },
      (e: unknown) => {
        if (!settle()) return
        // A client that goes away mid-body surfaces as ECONNRESET ('aborted') from node:http.
        if ((e as { code?: unknown } | undefined)?.code === 'ECONNRESET') {
          reject(new CanceledError('client aborted the request body', { cause: e }))
        } else {
          reject(e instanceof Error ? e : new Error(String(e)))
        }
      },
    )
  })
}

/** First value of a possibly repeated header. @internal */
export function headerString(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}
