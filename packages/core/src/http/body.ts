/**
 * Request body decoding: `Content-Encoding` (gzip, deflate, br) through `node:zlib` streams, under
 * the route's body cap, a decompression ratio cap and an absolute cap, with a per-chunk read
 * timeout against slow clients. Nothing here buffers more than one chunk ahead.
 *
 * Which caps apply:
 * - the ratio guard (decoded ≤ ratio × encoded + {@link DECOMPRESSION_SLACK}) applies to every
 *   encoded body, streamed object bodies included (with a larger slack,
 *   {@link STREAM_DECOMPRESSION_SLACK}): it is what stops a bomb early;
 * - a route with a finite `bodyLimit` (JSON and other buffered bodies) is capped at
 *   `min(bodyLimit, maxDecoded)` decoded bytes: the absolute cap protects memory;
 * - a route declaring `bodyLimit: Infinity` streams and enforces its own limit on decoded bytes
 *   (storage's object limit or a token's `maxBytes`), so the absolute cap does not apply to it.
 *
 * Every {@link OverLimitError} says which cap it hit in `details.source` (`body_limit`,
 * `decompressed_size`, `decompression_ratio`) and what the cap is (`details.limit`).
 * A transfer coding other than `chunked` (e.g. `Transfer-Encoding: gzip, chunked`) is refused
 * with 501 {@link NotImplementedError} (RFC 9112 6.1), never stored undecoded. A body stalled
 * longer than the gap timeout, arriving under the minimum rate or past its deadline
 * ({@link BodyPace}) is 408 {@link RequestTimeoutError}: the client was too slow.
 *
 * @module
 */

import { pipeline, Readable, type Transform } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { abortReason, type Clock, type TimerHandle } from '../clock.js'
import { CanceledError, MalformedError, NotImplementedError, OverLimitError, RequestTimeoutError, UnsupportedMediaTypeError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import type { BodyPace } from './pace.js'
import type { RonRequest } from './types.js'

/** Slack added to the ratio cap so tiny compressed bodies may still expand a little. */
export const DECOMPRESSION_SLACK = 64 * 1024

/**
 * Slack of the ratio cap for streamed bodies (routes with `bodyLimit: Infinity`, e.g. storage
 * objects): a highly compressible file (1 MiB of zeros gzips to 1 KiB) is a legitimate upload,
 * so up to this many decoded bytes pass before the ratio applies; a bomb is still cut at
 * `ratio × encoded + 16 MiB`. @internal
 */
export const STREAM_DECOMPRESSION_SLACK = 16 * 1024 * 1024

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
  /** Minimum rate and deadline of this body; absent: the gap timeout alone. */
  pace?: BodyPace | undefined
  /** Told once when the body is done with: read to its end, failed, or abandoned by the reader. */
  owner?: BodyOwner | undefined
}

/** Whoever must learn that a body is done with (the request context releases its body share). @internal */
export interface BodyOwner {
  bodyDone(): void
}

/** The gap timer's period: the gap timeout, or the pace check interval when that is shorter. */
function waitTimerMs(o: Pick<BodyLimits, 'readTimeoutMs' | 'pace'>): number {
  const p = o.pace
  return p === undefined ? o.readTimeoutMs : Math.min(o.readTimeoutMs, p.checkEveryMs)
}

/** The 408 of a body stalled for the gap timeout. */
function gapError(o: Pick<BodyLimits, 'readTimeoutMs' | 'metrics'>): RequestTimeoutError {
  o.metrics?.inc('io_timeouts_total', { op: 'read' })
  return new RequestTimeoutError(`no request body data for ${o.readTimeoutMs} ms`, { details: { op: 'read', reason: 'gap', timeoutMs: o.readTimeoutMs } })
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

/** Which cap an {@link OverLimitError} of a body hit (`details.source`). */
export type BodyLimitSource = 'body_limit' | 'decompressed_size' | 'decompression_ratio'

/** Over-cap error naming the cap that was hit. */
function overLimit(source: 'body_limit' | 'decompressed_size', cap: number): OverLimitError {
  const what = source === 'body_limit' ? 'body limit' : 'decompressed size cap'
  return new OverLimitError(`request body exceeds the ${what} of ${cap} bytes`, { details: { limit: cap, source, kind: what } })
}

/**
 * Refuses transfer codings this server does not implement: node's parser only de-chunks, so
 * anything else (`gzip, chunked`) would reach the handler still encoded.
 * @throws {@link NotImplementedError} (501)
 */
export function checkTransferEncoding(header: string | string[] | undefined): void {
  if (header === undefined) return
  const codings = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '')
  const unsupported = codings.filter((c) => c !== 'chunked')
  if (unsupported.length > 0) {
    throw new NotImplementedError(`transfer coding '${unsupported.join(', ')}' is not implemented (only chunked)`, {
      details: { transferEncoding: codings.join(', ') },
    })
  }
}

/**
 * The request's body, decoded and capped, as a stream of chunks.
 * @throws {@link OverLimitError} (413) when a cap is exceeded, {@link UnsupportedMediaTypeError} for an
 * unknown encoding, {@link NotImplementedError} (501) for a transfer coding other than chunked,
 * {@link RequestTimeoutError} (408) when the client stalls longer than `readTimeoutMs` between chunks.
 */
export function decodedBody(req: RonRequest, o: BodyLimits): AsyncIterableIterator<Uint8Array> {
  // Validate eagerly so a bad header fails before any body is read.
  checkTransferEncoding(req.headers['transfer-encoding'])
  const decoder = decoderFor(headerString(req.headers['content-encoding']))
  const declared = headerString(req.headers['content-length'])
  if (declared !== undefined) {
    const n = Number(declared)
    // An identity body's length is its decoded length; an encoded body may be a little larger
    // than what it decodes to (incompressible data), hence the slack.
    const cap = decoder === undefined ? o.limit : o.limit + DECOMPRESSION_SLACK
    if (Number.isFinite(n) && n > cap) throw overLimit('body_limit', o.limit)
  }
  return decoder === undefined ? identity(req, o) : decoded(req, o, decoder())
}

function identity(req: RonRequest, o: BodyLimits): AsyncIterableIterator<Uint8Array> {
  const body = req.body as Partial<Readable>
  if (typeof body.on === 'function' && typeof body.pause === 'function' && typeof body.resume === 'function') return new StreamedBody(body as Readable, o)
  return identityIterated(req, o)
}

async function* identityIterated(req: RonRequest, o: BodyLimits): AsyncGenerator<Uint8Array> {
  let total = 0
  try {
    for await (const chunk of timedChunks(req.body, o, undefined)) {
      total += chunk.byteLength
      if (total > o.limit) throw overLimit('body_limit', o.limit)
      yield chunk
    }
  } finally {
    o.owner?.bodyDone()
  }
}

async function* decoded(req: RonRequest, o: BodyLimits, decoder: Transform): AsyncGenerator<Uint8Array> {
  const counter = { encoded: 0 }
  const source = Readable.from(timedChunks(req.body, o, counter), { objectMode: false })
  // Errors surface through the decoder's iterator below; the callback only has to exist.
  pipeline(source, decoder, () => {})
  // A streaming route (limit Infinity) enforces its own decoded limit: only the ratio guard here.
  const streamed = o.limit === Infinity
  const cap = streamed ? Infinity : Math.min(o.limit, o.maxDecoded)
  const slack = streamed ? STREAM_DECOMPRESSION_SLACK : DECOMPRESSION_SLACK
  let total = 0
  try {
    for await (const chunk of decoder as AsyncIterable<Buffer>) {
      total += chunk.byteLength
      if (total > cap) throw overLimit(cap === o.limit ? 'body_limit' : 'decompressed_size', cap)
      if (total > o.ratio * counter.encoded + slack) {
        throw new OverLimitError(`decompressed body exceeds ${o.ratio}x its encoded size`, {
          details: {
            source: 'decompression_ratio',
            limit: o.ratio,
            kind: 'decompression ratio',
            ratio: o.ratio,
            encoded: counter.encoded,
            decoded: total,
          },
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
    o.owner?.bodyDone()
  }
}

/**
 * Iterates `body` with a gap timeout between chunks, without destroying a `node:http` request
 * when iteration stops early (so an error response can still be written on the same socket).
 * One abort listener serves the whole body (not one added and removed per chunk: on EventTarget
 * that costs more than the rest of a chunk's bookkeeping).
 */
async function* timedChunks(
  body: AsyncIterable<Uint8Array>,
  o: BodyLimits,
  counter: { encoded: number } | undefined,
): AsyncGenerator<Uint8Array> {
  const { signal } = o
  if (signal.aborted) throw abortReason(signal)
  const readable = body as Partial<Readable>
  const it: AsyncIterator<Uint8Array> =
    typeof readable.iterator === 'function'
      ? (readable.iterator({ destroyOnReturn: false }) as AsyncIterator<Uint8Array>)
      : body[Symbol.asyncIterator]()
  const wait = new ChunkWait(it, o)
  signal.addEventListener('abort', wait.onAbort, { once: true })
  let finished = false
  try {
    for (;;) {
      const r = await wait.next()
      if (r.done === true) {
        finished = true
        return
      }
      if (counter !== undefined) counter.encoded += r.value.byteLength
      yield r.value
    }
  } finally {
    signal.removeEventListener('abort', wait.onAbort)
    wait.dispose()
    if (!finished) void it.return?.()?.catch(() => {})
  }
}

/**
 * The pending `next()` of {@link timedChunks}: settled by the chunk, the gap timer, the pace rules
 * or the abort, whichever is first. Reading time (for the pace) counts while a `next()` waits.
 */
class ChunkWait<T extends Uint8Array> {
  #resolve: ((r: IteratorResult<T>) => void) | undefined = undefined
  #reject: ((e: Error) => void) | undefined = undefined
  #timer: TimerHandle | undefined = undefined
  #waitSince = 0
  readonly #onGap = (): void => {
    this.#timer = undefined
    const now = this.o.clock.now()
    const waited = now - this.#waitSince
    if (waited >= this.o.readTimeoutMs) {
      this.#fail(gapError(this.o))
      return
    }
    const late = this.o.pace?.check(now)
    if (late !== undefined) {
      this.#fail(late)
      return
    }
    this.#arm(Math.min(waitTimerMs(this.o), this.o.readTimeoutMs - waited))
  }
  readonly onAbort = (): void => this.#fail(abortReason(this.o.signal))
  readonly #onValue = (r: IteratorResult<T>): void => {
    const pace = this.o.pace
    if (pace !== undefined) {
      const now = this.o.clock.now()
      pace.stop(now)
      const late = r.done === true ? undefined : pace.add(r.value.byteLength, now)
      if (late !== undefined) {
        this.#fail(late)
        return
      }
    }
    const resolve = this.#resolve
    this.#settle()
    resolve?.(r)
  }
  readonly #onError = (e: unknown): void => {
    // A client that goes away mid-body surfaces as ECONNRESET ('aborted') from node:http.
    if ((e as { code?: unknown } | undefined)?.code === 'ECONNRESET') this.#fail(new CanceledError('client aborted the request body', { cause: e }))
    else this.#fail(e instanceof Error ? e : new Error(String(e)))
  }

  constructor(
    private readonly it: AsyncIterator<T>,
    private readonly o: BodyLimits,
  ) {}

  next(): Promise<IteratorResult<T>> {
    if (this.o.signal.aborted) return Promise.reject(abortReason(this.o.signal))
    const failed = this.o.pace?.failure
    if (failed !== undefined) return Promise.reject(failed)
    return new Promise<IteratorResult<T>>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
      this.#waitSince = this.o.clock.now()
      this.o.pace?.go(this.#waitSince)
      this.#arm(waitTimerMs(this.o))
      this.it.next().then(this.#onValue, this.#onError)
    })
  }

  dispose(): void {
    this.#settle()
  }

  #arm(ms: number): void {
    this.#timer = this.o.clock.setTimeout(this.#onGap, ms)
    this.#timer.unref?.()
  }

  #fail(e: Error): void {
    const reject = this.#reject
    this.#settle()
    reject?.(e)
  }

  #settle(): void {
    if (this.#timer !== undefined) this.o.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#resolve = undefined
    this.#reject = undefined
  }
}

/**
 * The whole decoded body in one buffer, under the same caps, gap timeout and cancellation as
 * {@link decodedBody}. For an identity-encoded `node:http` body (what JSON routes and webhook
 * receivers get) it reads with stream events through one small reader: one promise per body,
 * where the iterator path costs two async generators and, per chunk, a promise, a timer and two
 * abort listeners — and it does not create the request's AbortSignal, which by itself cost as
 * much as the rest of a small JSON route. A client that goes away is seen as the stream's
 * `error`/`close`. Encoded bodies and bodies that are not node streams (MemoryTransport) take
 * {@link decodedBody}.
 *
 * @param signal gives the request's signal; asked for only on the {@link decodedBody} path
 * @param explicit a signal set on the context (a queued job's), which also aborts the read
 * @internal
 */
export function readWholeBody(req: RonRequest, o: Omit<BodyLimits, 'signal'>, signal: () => AbortSignal, explicit: AbortSignal | undefined): Promise<Uint8Array> {
  checkTransferEncoding(req.headers['transfer-encoding'])
  const encoding = headerString(req.headers['content-encoding'])
  const body = req.body as Partial<Readable>
  if (decoderFor(encoding) !== undefined || typeof body.on !== 'function' || typeof body.pause !== 'function') {
    return collect(decodedBody(req, { ...o, signal: signal() }))
  }
  const declared = headerString(req.headers['content-length'])
  if (declared !== undefined) {
    const n = Number(declared)
    if (Number.isFinite(n) && n > o.limit) throw overLimit('body_limit', o.limit)
  }
  if (explicit?.aborted === true) return Promise.reject(abortReason(explicit))
  const stream = body as Readable
  if (stream.readableEnded) return Promise.resolve(new Uint8Array(0))
  // Gone before the handler asked for the body: its 'error'/'close' are past, and only the gap
  // timer would end the wait (a 408 after readTimeoutMs, holding the handler).
  if (stream.destroyed) return Promise.reject(new CanceledError('client disconnected', stream.errored === null ? {} : { cause: stream.errored }))
  return new Promise<Uint8Array>((resolve, reject) => {
    new WholeBodyReader(stream, o, explicit, resolve, reject).start()
  })
}

/**
 * An identity-encoded `node:http` body (storage objects, interop uploads) as an async iterator
 * driven by the stream's events: per chunk no async generator, no timer and no abort listener,
 * and a promise only when the consumer has to wait for the client. The chain it replaces (node's
 * stream iterator, the gap wait, two generators) cost several microseconds per 64 KiB piece.
 *
 * Same rules as {@link timedChunks} + the limit count: at most two pieces are held ahead (the
 * stream is paused beyond that, and the pace's reading time stops while it is), a wait for the
 * client longer than `readTimeoutMs` or a pace rule failing is 408 (one timer re-armed per check
 * period, not per chunk), the request's abort and a client that goes
 * away (ECONNRESET, or `close` before `end`) reject the pending `next()`, and stopping early
 * (`return()`, a failure) pauses the request without destroying it, so an error reply can still
 * be written on its socket.
 */
class StreamedBody implements AsyncIterableIterator<Uint8Array> {
  readonly #held: Uint8Array[] = []
  #total = 0
  #ended = false
  #failure: Error | undefined = undefined
  #detached = false
  #resolve: ((r: IteratorResult<Uint8Array>) => void) | undefined = undefined
  #reject: ((e: Error) => void) | undefined = undefined
  #waitSince = 0
  #timer: TimerHandle | undefined = undefined
  readonly #onData = (c: Buffer): void => this.#data(c)
  readonly #onEnd = (): void => this.#end()
  readonly #onError = (e: unknown): void => {
    // A client that goes away mid-body surfaces as ECONNRESET ('aborted') from node:http.
    if ((e as { code?: unknown } | undefined)?.code === 'ECONNRESET') this.#fail(new CanceledError('client aborted the request body', { cause: e }))
    else this.#fail(e instanceof Error ? e : new Error(String(e)))
  }
  readonly #onClose = (): void => {
    if (!this.#ended) this.#fail(new CanceledError('client disconnected'))
  }
  readonly #onAbort = (): void => this.#fail(abortReason(this.o.signal))
  readonly #onGap = (): void => this.#gap()

  constructor(
    private readonly stream: Readable,
    private readonly o: BodyLimits,
  ) {
    if (o.signal.aborted) {
      this.#failure = abortReason(o.signal)
      this.#detached = true
      o.owner?.bodyDone()
      return
    }
    if (stream.readableEnded) {
      this.#ended = true
      this.#detached = true
      o.owner?.bodyDone()
      return
    }
    if (stream.destroyed) {
      // Gone before the handler asked for the body: its 'error'/'close' are past.
      this.#failure = new CanceledError('client disconnected', stream.errored === null ? {} : { cause: stream.errored })
      this.#detached = true
      o.owner?.bodyDone()
      return
    }
    o.signal.addEventListener('abort', this.#onAbort, { once: true })
    stream.on('error', this.#onError)
    stream.on('close', this.#onClose)
    stream.on('end', this.#onEnd)
    o.pace?.go(o.clock.now())
    stream.on('data', this.#onData)
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.#held.length > 0) {
      const value = this.#held.shift()!
      if (this.#held.length < 2 && !this.#detached && this.stream.isPaused()) {
        this.o.pace?.go(this.o.clock.now())
        this.stream.resume()
      }
      return Promise.resolve({ value, done: false })
    }
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    if (this.#ended) return Promise.resolve({ value: undefined, done: true })
    return new Promise<IteratorResult<Uint8Array>>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
      this.#waitSince = this.o.clock.now()
      if (this.#timer === undefined) this.#arm(waitTimerMs(this.o))
    })
  }

  return(): Promise<IteratorResult<Uint8Array>> {
    this.#ended = true
    this.#held.length = 0
    this.#detach()
    return Promise.resolve({ value: undefined, done: true })
  }

  #data(c: Buffer): void {
    this.#total += c.byteLength
    if (this.#total > this.o.limit) {
      this.#fail(overLimit('body_limit', this.o.limit))
      return
    }
    const pace = this.o.pace
    if (pace !== undefined) {
      const late = pace.add(c.byteLength, this.o.clock.now())
      if (late !== undefined) {
        this.#fail(late)
        return
      }
    }
    const resolve = this.#resolve
    if (resolve !== undefined) {
      this.#resolve = this.#reject = undefined
      resolve({ value: c, done: false })
      return
    }
    this.#held.push(c)
    if (this.#held.length >= 2) {
      // Our consumer is behind: the client is not read, so its reading time stops too.
      pace?.stop(this.o.clock.now())
      this.stream.pause()
    }
  }

  #end(): void {
    this.#ended = true
    this.#detach()
    const resolve = this.#resolve
    this.#resolve = this.#reject = undefined
    resolve?.({ value: undefined, done: true })
  }

  #fail(e: Error): void {
    if (this.#failure !== undefined || (this.#ended && this.#detached)) return
    this.#failure = e
    this.#held.length = 0
    this.#detach()
    const reject = this.#reject
    this.#resolve = this.#reject = undefined
    reject?.(e)
  }

  /**
   * Fires at most once per check period while the consumer waits: fails a wait that has lasted
   * `readTimeoutMs` or a body past its pace rules, or re-arms for the rest of the period.
   */
  #gap(): void {
    this.#timer = undefined
    if (this.#resolve === undefined || this.#detached) return
    const now = this.o.clock.now()
    const waited = now - this.#waitSince
    if (waited >= this.o.readTimeoutMs) {
      this.#fail(gapError(this.o))
      return
    }
    const late = this.o.pace?.check(now)
    if (late !== undefined) {
      this.#fail(late)
      return
    }
    this.#arm(Math.min(waitTimerMs(this.o), this.o.readTimeoutMs - waited))
  }

  #arm(ms: number): void {
    this.#timer = this.o.clock.setTimeout(this.#onGap, ms)
    this.#timer.unref?.()
  }

  /** Stops listening; a request not read to its end is paused, never destroyed. */
  #detach(): void {
    if (this.#detached) return
    this.#detached = true
    if (this.#timer !== undefined) this.o.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    const s = this.stream
    s.removeListener('data', this.#onData)
    s.removeListener('end', this.#onEnd)
    s.removeListener('error', this.#onError)
    s.removeListener('close', this.#onClose)
    this.o.signal.removeEventListener('abort', this.#onAbort)
    if (!s.readableEnded) s.pause()
    this.o.owner?.bodyDone()
  }
}

/** One {@link readWholeBody} read. Listeners are bound once per read (no closure per chunk). */
class WholeBodyReader {
  private readonly chunks: Buffer[] = []
  private total = 0
  private timer: TimerHandle | undefined = undefined
  /** When the last chunk (or the read) started: the gap timeout counts from here. */
  private lastData = 0
  private readonly onData = (c: Buffer): void => this.data(c)
  private readonly onEnd = (): void => this.end()
  private readonly onError = (e: unknown): void => this.error(e)
  private readonly onClose = (): void => this.close()
  private readonly onGap = (): void => this.gap()
  private readonly onAbort = (): void => this.fail(abortReason(this.signal!))

  constructor(
    private readonly stream: Readable,
    private readonly o: Omit<BodyLimits, 'signal'>,
    private readonly signal: AbortSignal | undefined,
    private readonly resolve: (b: Uint8Array) => void,
    private readonly reject: (e: Error) => void,
  ) {}

  start(): void {
    const s = this.stream
    this.signal?.addEventListener('abort', this.onAbort, { once: true })
    s.on('error', this.onError)
    s.on('close', this.onClose)
    s.on('end', this.onEnd)
    this.lastData = this.o.clock.now()
    this.o.pace?.go(this.lastData)
    s.on('data', this.onData)
    this.arm(waitTimerMs(this.o))
  }

  /** One timer for the whole read, re-armed only when it fires (not per chunk). */
  private arm(ms: number): void {
    this.timer = this.o.clock.setTimeout(this.onGap, ms)
    this.timer.unref?.()
  }

  private detach(): void {
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer)
    this.timer = undefined
    const s = this.stream
    s.removeListener('data', this.onData)
    s.removeListener('end', this.onEnd)
    s.removeListener('error', this.onError)
    s.removeListener('close', this.onClose)
    this.signal?.removeEventListener('abort', this.onAbort)
  }

  /** Stops early without destroying the request, so the error reply can still be written (the writer lingers to drain the rest). */
  private fail(e: Error): void {
    this.detach()
    this.stream.pause()
    this.reject(e)
  }

  private data(c: Buffer): void {
    this.total += c.byteLength
    if (this.total > this.o.limit) {
      this.fail(overLimit('body_limit', this.o.limit))
      return
    }
    const now = this.o.clock.now()
    this.lastData = now
    const late = this.o.pace?.add(c.byteLength, now)
    if (late !== undefined) {
      this.fail(late)
      return
    }
    this.chunks.push(c)
  }

  private end(): void {
    this.detach()
    this.resolve(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.total))
  }

  private error(e: unknown): void {
    // A client that goes away mid-body surfaces as ECONNRESET ('aborted') from node:http.
    if ((e as { code?: unknown } | undefined)?.code === 'ECONNRESET') this.fail(new CanceledError('client aborted the request body', { cause: e }))
    else this.fail(e instanceof Error ? e : new Error(String(e)))
  }

  private close(): void {
    if (!this.stream.readableEnded) this.fail(new CanceledError('client disconnected'))
  }

  private gap(): void {
    this.timer = undefined
    const now = this.o.clock.now()
    const waited = now - this.lastData
    if (waited >= this.o.readTimeoutMs) {
      this.fail(gapError(this.o))
      return
    }
    const late = this.o.pace?.check(now)
    if (late !== undefined) {
      this.fail(late)
      return
    }
    this.arm(Math.min(waitTimerMs(this.o), this.o.readTimeoutMs - waited))
  }
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  for await (const c of it) {
    chunks.push(c)
    total += c.byteLength
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)
}

/** First value of a possibly repeated header. @internal */
export function headerString(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}
