/**
 * The `node:http` edge: wraps an `IncomingMessage` as a {@link RonRequest} without copying, and
 * writes an {@link Exchange}'s outcome straight to the `ServerResponse` (one `end()` for buffered
 * bodies; backpressure-aware writes with a drain timeout for streams).
 *
 * @module
 */

// Imported, not the global: node defines the global `Buffer` as an accessor, a getter call per use.
import { Buffer } from 'node:buffer'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { abortReason, onAbort } from '../abort.js'
import type { Clock } from '../clock.js'
import { CanceledError } from '../errors.js'
import type { MetricsSink } from '../metrics-sink.js'
import { CORR_ID_HEADER } from './corr-id.js'
import { isBodiless, type Exchange } from './exchange.js'
import { closeIterable, closeIterator } from './iter.js'
import type { Reply, RonRequest } from './types.js'

/** A `node:http` request seen as a {@link RonRequest}. The abort signal is created on first use. @internal */
export class NodeRequest implements RonRequest {
  private ac: AbortController | undefined = undefined

  constructor(
    readonly raw: IncomingMessage,
    readonly res: ServerResponse,
  ) {}

  get method(): string {
    return this.raw.method ?? 'GET'
  }
  get url(): string {
    return this.raw.url ?? '/'
  }
  get headers(): IncomingHttpHeaders {
    return this.raw.headers
  }
  get body(): AsyncIterable<Uint8Array> {
    return this.raw
  }
  /** The client's address, remembered per socket (see {@link socketAddress}). */
  get remoteAddress(): string {
    const socket = this.raw.socket
    return socket === null || socket === undefined ? '' : socketAddress(socket)
  }
  /** Aborts when the response closes before it finished (client gone, socket destroyed). */
  get signal(): AbortSignal {
    if (this.ac !== undefined) return this.ac.signal
    const ac = new AbortController()
    this.ac = ac
    const res = this.res
    if (res.closed) {
      if (!res.writableFinished) ac.abort(new CanceledError('client disconnected'))
    } else {
      res.once('close', () => {
        if (!res.writableFinished) ac.abort(new CanceledError('client disconnected'))
      })
    }
    return ac.signal
  }

  /**
   * {@link RonRequest.onAbort}: the signal's listener once it exists; until then a `close`
   * listener on the response, with the same condition (closed before it finished) and reason.
   */
  onAbort(listener: (reason: Error) => void): () => void {
    if (this.ac !== undefined) {
      const signal = this.ac.signal
      return onAbort(signal, () => listener(abortReason(signal)))
    }
    const res = this.res
    if (res.closed) {
      if (!res.writableFinished) listener(new CanceledError('client disconnected'))
      return NOOP
    }
    const onClose = (): void => {
      if (!res.writableFinished) listener(new CanceledError('client disconnected'))
    }
    res.on('close', onClose)
    return () => {
      res.removeListener('close', onClose)
    }
  }
}

const NOOP = (): void => {}

/** Each socket's remote address, once read. */
const addresses = new WeakMap<Socket, string>()

/**
 * `socket.remoteAddress`, read once per socket: node's getter goes through `_getpeername` on
 * every call (about 0.5k instructions per request, for the per-IP admission of every routed
 * request), and a keep-alive socket serves many requests from the one address. An address not
 * known yet (a socket already gone) is not remembered.
 */
function socketAddress(socket: Socket): string {
  let address = addresses.get(socket)
  if (address === undefined) {
    address = socket.remoteAddress
    if (address === undefined) return ''
    addresses.set(socket, address)
  }
  return address
}

/** What the node writer needs besides the exchange. @internal */
export interface NodeWriteOptions {
  writeTimeoutMs: number
  lingerMs: number
  clock: Clock
  metrics: MetricsSink | undefined
  /**
   * Once true, responses go out with `Connection: close` (a drain). A flag the handler sets when
   * its `closeConnections` signal aborts: the signal's `aborted` getter costs a call per reply.
   */
  closing: boolean
  /** Reports an error that happened after headers were sent. */
  onLateError(ex: Exchange, err: unknown): void
}

/** Writes the exchange's outcome to `res`, then finishes the exchange. Never throws. @internal */
export function writeNode(ex: Exchange, req: IncomingMessage, res: ServerResponse, o: NodeWriteOptions): void {
  const body = ex.body
  if (res.destroyed || res.headersSent) {
    closeIterable(body)
    ex.finish()
    return
  }
  if (o.closing) res.shouldKeepAlive = false
  // Read once here (`Exchange.suppressBody` is a getter through the request wrapper).
  const suppressBody = req.method === 'HEAD' || isBodiless(ex.status)
  // One flat header list handed to writeHead: cheaper than setHeader() per header on the hot path.
  let headers: (string | number | readonly string[])[]
  let buf: string | Uint8Array | undefined
  // A string body whose UTF-8 length is its length is pure ASCII: written as latin1, the same bytes
  // are a copy of V8's one-byte string instead of a UTF-8 encoding pass (the registry's HEAD reply,
  // ~600 bytes: 4.8k instructions in WriteUtf8 → 3.3k, of which 1.8k flatten node's header+body rope).
  let encoding: 'latin1' | undefined
  let wire: Wire | undefined
  const h = ex.replyHeaders
  const cors = ex.cors
  if (h === undefined && cors === undefined && typeof body === 'string' && ex.contentType !== undefined && ex.retryAfter === undefined && ex.allow === undefined && (req.complete || !hasBody(req))) {
    // A JSON reply (the common case): its whole list as one literal, no array growing per request.
    buf = body
    // The fast JSON path's text is ASCII by construction (and a rope: measuring it would flatten it).
    const length = ex.asciiBody ? body.length : Buffer.byteLength(body)
    if (length === body.length) encoding = 'latin1'
    headers = [CORR_ID_HEADER, ex.corrId, 'content-type', ex.contentType, 'content-length', length]
  } else if (cors === undefined && ex.reply !== undefined && (wire = wireOf(ex.reply)) !== undefined && (req.complete || !hasBody(req))) {
    // A frozen reply written before (the registry's cached HEAD, a full tile): its list and length are known.
    headers = wire.headers
    headers[wire.corrSlot] = ex.corrId
    buf = wire.body
    // A byte body's length is read per write: a typed array cannot be frozen.
    if (typeof buf !== 'string') headers[wire.corrSlot + 2] = buf.byteLength
    encoding = wire.encoding
  } else {
    headers = []
    if (cors !== undefined) {
      for (const k in cors) if (h === undefined || !hasHeader(h, k)) headers.push(k, cors[k]!)
    }
    if (h !== undefined) {
      for (const k in h) headers.push(k, h[k]!)
    }
    headers.push(CORR_ID_HEADER, ex.corrId)
    if (ex.contentType !== undefined) headers.push('content-type', ex.contentType)
    if (ex.retryAfter !== undefined) headers.push('retry-after', ex.retryAfter)
    if (ex.allow !== undefined) headers.push('allow', ex.allow)
    if (!req.complete && hasBody(req)) {
      // A stalled or too slow client (408) gets nothing from lingering: close right after the reply. Otherwise keep
      // reading what it is still sending (the parser knows the framing, so the connection stays
      // usable): closing a socket with unread input makes the kernel send a reset, and the client
      // would see "connection reset" instead of our 401/413.
      if (ex.error?.code === 'RequestTimeout' || ex.error?.code === 'Timeout') headers.push('connection', 'close')
      else lingerAfterReply(req, res, o)
    }
    if (typeof body === 'string') {
      buf = body
      const length = Buffer.byteLength(body)
      if (length === body.length) encoding = 'latin1'
      headers.push('content-length', length)
    } else if (body instanceof Uint8Array) {
      buf = body
      headers.push('content-length', body.byteLength)
    } else if (body === undefined && !suppressBody) {
      headers.push('content-length', 0)
    }
  }
  try {
    res.writeHead(ex.status, headers as unknown as string[])
  } catch (e) {
    // Invalid header name/value from a handler: answer with a clean 500 instead.
    closeIterable(body)
    if (ex.error === undefined && !res.headersSent) {
      ex.setError(e)
      writeNode(ex, req, res, o)
    } else {
      res.destroy()
      ex.finish()
    }
    return
  }
  if (buf !== undefined) {
    if (suppressBody) res.end()
    else if (encoding !== undefined) res.end(buf, encoding)
    else res.end(buf)
    ex.finish()
  } else if (body === undefined) {
    res.end()
    ex.finish()
  } else if (suppressBody) {
    closeIterable(body)
    res.end()
    ex.finish()
  } else {
    void streamToNode(ex, body as AsyncIterable<Uint8Array>, res, o)
  }
}

/**
 * What writing a frozen reply with a string or byte body takes, worked out once: `writeHead`'s
 * list (the reply's headers, `x-corr-id`, `content-length`) and a string body's encoding. The list
 * is reused: each write puts its correlation id in slot `corrSlot` (node reads the list within
 * `writeHead` and keeps nothing of it), and for a byte body its current length two slots on.
 */
interface Wire {
  readonly reply: Reply
  readonly headers: (string | number | readonly string[])[]
  readonly corrSlot: number
  readonly body: string | Uint8Array
  readonly encoding: 'latin1' | undefined
}

/** The wire of the frozen reply written last (a route hands out the same one again and again). */
let lastWire: Wire | undefined
/** Wires of other frozen replies (a route that alternates between two, say). */
const wires = new WeakMap<Reply, Wire>()

/**
 * The {@link Wire} of `reply` when it and its headers are frozen and its body is a string or a
 * `Uint8Array` (the registry's cached HEAD and full tiles), else undefined. Neither the headers
 * nor which body goes out can change; a byte body's contents and length can, so the writer sends
 * it as it is then and measures it per write. The check on a hit is one object comparison. (Not a
 * string comparison: `a === b` on two strings of one length, even the same string, costs V8's
 * optimised code a pass over both, ~530 instructions for the registry's 780-byte HEAD.)
 */
function wireOf(reply: Reply): Wire | undefined {
  const last = lastWire
  if (last !== undefined && last.reply === reply) return last
  const body = reply.body
  const h = reply.headers
  const text = typeof body === 'string'
  if ((!text && !(body instanceof Uint8Array)) || h === undefined || reply.json !== undefined || !Object.isFrozen(reply) || !Object.isFrozen(h)) return undefined
  let wire = wires.get(reply)
  if (wire === undefined) {
    const headers: (string | number | readonly string[])[] = []
    for (const k in h) headers.push(k, h[k]!)
    const corrSlot = headers.length + 1
    headers.push(CORR_ID_HEADER, '')
    const length = text ? Buffer.byteLength(body) : body.byteLength
    headers.push('content-length', length)
    wire = { reply, headers, corrSlot, body, encoding: text && length === body.length ? 'latin1' : undefined }
    wires.set(reply, wire)
  }
  lastWire = wire
  return wire
}

/**
 * Whether the request carries a body (RFC 9112 6.3: `Transfer-Encoding` or a non-zero
 * `Content-Length`). A reply written from within the `'request'` event (a synchronous handler)
 * comes before the parser has marked even a bodiless request `complete`, so `complete` alone
 * cannot tell a bodiless request from an unread upload.
 */
function hasBody(req: IncomingMessage): boolean {
  const h = req.headers
  if (h['transfer-encoding'] !== undefined) return true
  const len = h['content-length']
  return len !== undefined && len !== '0'
}

/** Whether `headers` has `lower` (a lower-case name) in any case. */
function hasHeader(headers: Record<string, unknown>, lower: string): boolean {
  if (lower in headers) return true
  for (const k in headers) if (k.toLowerCase() === lower) return true
  return false
}

/** After the reply is written, discard the rest of an unread request body for up to `lingerMs`. */
function lingerAfterReply(req: IncomingMessage, res: ServerResponse, o: NodeWriteOptions): void {
  res.once('finish', () => {
    if (req.complete || req.destroyed) return
    const socket = req.socket
    const timer = o.clock.setTimeout(() => {
      if (!req.complete) socket.destroy()
    }, o.lingerMs)
    timer.unref?.()
    const done = (): void => {
      o.clock.clearTimeout(timer)
      req.removeListener('end', done)
      req.removeListener('close', done)
    }
    req.once('end', done)
    req.once('close', done)
    req.resume()
  })
}

async function streamToNode(ex: Exchange, body: AsyncIterable<Uint8Array>, res: ServerResponse, o: NodeWriteOptions): Promise<void> {
  const it = body[Symbol.asyncIterator]()
  let complete = false
  // The client should learn the status while the body is still being produced, but a body whose
  // first bytes are already at hand (a cached or small object) should leave in the same packet as
  // the headers. So: ask for the first chunk, and flush the headers alone only if it is not there
  // by the time the event loop comes round (setImmediate runs after every pending microtask).
  const first = it.next()
  let early: ReturnType<typeof setImmediate> | undefined = setImmediate(() => {
    early = undefined
    if (!res.headersSent && !res.destroyed) res.flushHeaders()
  })
  const closed = new CloseWatch(res)
  let corked = false
  try {
    for (let r = await closed.race(first); ; r = await closed.race(it.next())) {
      if (early !== undefined) {
        clearImmediate(early)
        early = undefined
        // Headers and first chunk (and the end, if it follows at once) go out in one write.
        res.cork()
        corked = true
        process.nextTick(uncork, res)
      }
      if (r === CLOSED || res.destroyed) break
      if (r.done === true) {
        complete = true
        break
      }
      if (!res.write(r.value)) {
        const ok = await waitDrain(res, o, closed)
        if (!ok) break
      }
    }
    if (complete) res.end()
    else res.destroy()
  } catch (e) {
    // Too late for an error response: truncate so the client never mistakes this for a whole body
    // (what was corked — the status and the verified bytes before the failure — goes out first).
    if (corked && !res.destroyed) res.uncork()
    res.destroy()
    o.onLateError(ex, e)
  } finally {
    if (early !== undefined) clearImmediate(early)
    closed.dispose()
    if (!complete) closeIterator(it)
    ex.finish()
  }
}

function uncork(res: ServerResponse): void {
  if (!res.destroyed && !res.writableEnded) res.uncork()
}

const CLOSED = Symbol('closed')

/**
 * Races one promise at a time against the response closing. Deliberately not
 * `Promise.race([p, closedPromise])` per chunk: every race against a long-lived pending promise
 * leaves a reaction on it that keeps the chunk alive until the response ends, so a 1 GiB stream
 * retained ~1 GiB. Here the single 'close' listener wakes only the current waiter, and nothing
 * outlives an iteration.
 */
class CloseWatch {
  #closed: boolean
  #wake: ((v: typeof CLOSED) => void) | undefined
  readonly #res: ServerResponse
  readonly #onClose = (): void => {
    this.#closed = true
    this.#wake?.(CLOSED)
  }

  constructor(res: ServerResponse) {
    this.#res = res
    this.#closed = res.destroyed
    if (!this.#closed) res.once('close', this.#onClose)
  }

  race<T>(p: Promise<T>): Promise<T | typeof CLOSED> {
    if (this.#closed) {
      p.catch(() => {})
      return Promise.resolve(CLOSED)
    }
    return new Promise<T | typeof CLOSED>((resolve, reject) => {
      this.#wake = resolve
      p.then(resolve, reject)
    }).finally(() => {
      this.#wake = undefined
    })
  }

  dispose(): void {
    this.#res.removeListener('close', this.#onClose)
    this.#wake = undefined
  }
}

/** Resolves true on 'drain', false when the response closed or the write timed out (then destroyed). */
function waitDrain(res: ServerResponse, o: NodeWriteOptions, closed: CloseWatch): Promise<boolean> {
  let onDrain: () => void = () => {}
  let timer: ReturnType<Clock['setTimeout']> | undefined
  const drained = new Promise<boolean>((resolve) => {
    onDrain = () => resolve(true)
    res.once('drain', onDrain)
    timer = o.clock.setTimeout(() => {
      o.metrics?.inc('io_timeouts_total', { op: 'write' })
      // No error object: the socket's error path would only log it; the client sees truncation.
      res.destroy()
      resolve(false)
    }, o.writeTimeoutMs)
    timer.unref?.()
  })
  return closed
    .race(drained)
    .then((r) => r !== CLOSED && r)
    .finally(() => {
      res.removeListener('drain', onDrain)
      if (timer !== undefined) o.clock.clearTimeout(timer)
    })
}
