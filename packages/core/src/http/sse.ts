/**
 * Server-sent events, both sides. {@link SseHub} streams events to many clients, each with a
 * bounded buffer and a lag policy, event ids and a `Last-Event-ID` resume hook, heartbeats and a
 * client cap; {@link sseEvents} parses a `text/event-stream` body (on `eventsource-parser`).
 *
 * @module
 */

import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { systemClock, type Clock, type TimerHandle } from '../clock.js'
import { onAbort, raceAbort } from '../concurrency/abort.js'
import { closeIterator } from './iter.js'
import { BusyError, ClosedError, MalformedError, OverLimitError, RonUsageError } from '../errors.js'
import { noopMetrics, type MetricsSink } from '../metrics-sink.js'
import type { Reply, RouteContext } from './types.js'

/** One server-sent event. `data` of a string is sent as is; any other value as JSON. */
export interface SseEvent<T = unknown> {
  /** Event id (`id:`), what a reconnecting client sends back in `Last-Event-ID`. No line breaks. */
  id?: string
  /** Event type (`event:`). @default 'message' on the client side */
  event?: string
  data: T
}

/** An event as {@link sseEvents} yields it: `data` is the raw text (parse JSON yourself). */
export interface SseMessage {
  id?: string
  event?: string
  data: string
}

/** Options of {@link SseHub}. */
export interface SseHubOptions<T> {
  /** Stream name: the `topic` label of `bus_lagged_total` and the `stream` label of `sse_clients`. */
  name: string
  /** Events buffered per client before the lag policy applies. */
  bufferPerClient: number
  /** Concurrent clients; one more gets 429 `Busy`. */
  maxClients: number
  /** A comment line is sent after this much silence, so proxies and clients see a live stream. @default 5000 */
  heartbeatMs?: number
  /**
   * What a full client buffer does with a new event: `'drop-oldest'` evicts the oldest buffered
   * event; `'latest'` drops everything buffered and keeps only the new one (for streams where the
   * newest event supersedes the rest, e.g. a registry head). Both count `bus_lagged_total{topic}`.
   */
  onLag: 'drop-oldest' | 'latest'
  /**
   * Resume hook: the events after `lastEventId`, sent before live events when a client reconnects
   * with `Last-Event-ID`. The live subscription starts first, so an event published during the
   * replay may arrive twice; ids tell duplicates apart. @default no replay
   */
  replay?(lastEventId: string): Iterable<SseEvent<T>> | AsyncIterable<SseEvent<T>>
  /** Closes the hub (ending every stream) when it aborts, e.g. the host's `drainSignal`. */
  signal?: AbortSignal
  /** @default systemClock */
  clock?: Clock
  /** Where `bus_lagged_total{topic}` and `sse_clients{stream}` are reported. @default none */
  metrics?: MetricsSink
}

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(': hb\n\n')
const HELLO = encoder.encode(': connected\n\n')

function oneLine(field: string, v: string): string {
  if (/[\r\n\0]/.test(v)) throw new MalformedError(`SSE ${field} must not contain line breaks`, { details: { field } })
  return v
}

/** Encodes one event as a `text/event-stream` frame. */
export function encodeSseEvent(e: SseEvent<unknown>): Uint8Array {
  let s = ''
  if (e.id !== undefined) s += `id: ${oneLine('id', e.id)}\n`
  if (e.event !== undefined) s += `event: ${oneLine('event', e.event)}\n`
  const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data)
  for (const line of (data ?? 'null').split(/\r\n|\r|\n/)) s += `data: ${line}\n`
  return encoder.encode(`${s}\n`)
}

class Client {
  readonly #buf: Uint8Array[] = []
  #wake: (() => void) | undefined
  #closed = false

  constructor(
    readonly cap: number,
    readonly lag: 'drop-oldest' | 'latest',
    readonly onLagged: (n: number) => void,
  ) {}

  push(frame: Uint8Array): void {
    if (this.#closed) return
    if (this.#buf.length >= this.cap) {
      const dropped = this.lag === 'latest' ? this.#buf.length : 1
      this.#buf.splice(0, dropped)
      this.onLagged(dropped)
    }
    this.#buf.push(frame)
    this.#notify()
  }

  end(): void {
    this.#closed = true
    this.#notify()
  }

  get ended(): boolean {
    return this.#closed
  }

  #notify(): void {
    const w = this.#wake
    this.#wake = undefined
    w?.()
  }

  /** The next frame; `HEARTBEAT` after `heartbeatMs` of silence; undefined once ended and empty. */
  async next(clock: Clock, heartbeatMs: number): Promise<Uint8Array | undefined> {
    for (;;) {
      const f = this.#buf.shift()
      if (f !== undefined) return f
      if (this.#closed) return undefined
      let timer: TimerHandle | undefined
      const beat = await new Promise<boolean>((resolve) => {
        this.#wake = () => resolve(false)
        timer = clock.setTimeout(() => resolve(true), heartbeatMs)
        timer.unref?.()
      })
      clock.clearTimeout(timer!)
      this.#wake = undefined
      if (beat) return HEARTBEAT
    }
  }
}

/**
 * A server-sent-events fan-out. Publishing never waits for a client: each client has a bounded
 * buffer and the lag policy decides what a slow one loses (counted in `bus_lagged_total{topic}`).
 *
 * @example
 * ```ts
 * const hub = new SseHub<{ version: number }>({ name: 'registry', bufferPerClient: 64, maxClients: 100, onLag: 'latest' })
 * host.routes([{ method: 'GET', path: '/registry/stream', handler: (ctx) => hub.reply(ctx) }])
 * hub.publish({ id: '7', event: 'head', data: { version: 7 } })
 * host.onClose(() => hub.close())
 * ```
 */
export class SseHub<T = unknown> {
  readonly #o: SseHubOptions<T>
  readonly #clients = new Set<Client>()
  readonly #clock: Clock
  readonly #metrics: MetricsSink
  readonly #heartbeatMs: number
  #closed = false

  /** @throws {@link RonUsageError} `RON_INVALID_OPTION` for a buffer, client cap or heartbeat that is not positive. */
  constructor(options: SseHubOptions<T>) {
    for (const k of ['bufferPerClient', 'maxClients'] as const) {
      if (!Number.isInteger(options[k]) || options[k] <= 0) throw new RonUsageError('RON_INVALID_OPTION', `SseHub: ${k} must be a positive integer, got ${String(options[k])}`)
    }
    const hb = options.heartbeatMs ?? 5000
    if (!(hb > 0)) throw new RonUsageError('RON_INVALID_OPTION', `SseHub: heartbeatMs must be positive, got ${String(hb)}`)
    this.#o = options
    this.#clock = options.clock ?? systemClock
    this.#metrics = options.metrics ?? noopMetrics
    this.#heartbeatMs = hb
    this.#metrics.set('sse_clients', { stream: options.name }, 0)
    this.#metrics.inc('bus_lagged_total', { topic: options.name }, 0)
    if (options.signal !== undefined) onAbort(options.signal, () => this.close())
  }

  /** Connected clients. */
  get clients(): number {
    return this.#clients.size
  }

  /** True after {@link SseHub.close}. */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * Sends `event` to every connected client (never waits).
   * @throws {@link ClosedError} after `close()`; {@link MalformedError} for an id or event with a line break.
   */
  publish(event: SseEvent<T>): void {
    if (this.#closed) throw new ClosedError(`SSE stream ${this.#o.name} is closed`)
    if (this.#clients.size === 0) return
    const frame = encodeSseEvent(event)
    for (const c of this.#clients) c.push(frame)
  }

  /**
   * The streaming reply for one client: `200 text/event-stream`, first the replay after the
   * request's `Last-Event-ID` (if a `replay` hook is set), then live events, heartbeats in between.
   * Ends when the client goes away (`ctx.signal`), the body is abandoned, or the hub closes.
   * @throws {@link BusyError} (`details.reason: 'sse_clients'`) at `maxClients`; {@link ClosedError} after `close()`.
   */
  reply(ctx: Pick<RouteContext, 'req' | 'signal'>): Reply {
    if (this.#closed) throw new ClosedError(`SSE stream ${this.#o.name} is closed`)
    if (this.#clients.size >= this.#o.maxClients) {
      throw new BusyError(`SSE stream ${this.#o.name} has ${this.#o.maxClients} clients`, {
        details: { reason: 'sse_clients', stream: this.#o.name, endpoint: this.#o.name },
        retryAfterMs: 1000,
      })
    }
    const name = this.#o.name
    const client = new Client(this.#o.bufferPerClient, this.#o.onLag, (n) => this.#metrics.inc('bus_lagged_total', { topic: name }, n))
    this.#clients.add(client)
    this.#gauge()
    const raw = ctx.req.headers['last-event-id']
    const lastEventId = Array.isArray(raw) ? raw[0] : raw
    const replay = lastEventId !== undefined && this.#o.replay !== undefined ? this.#o.replay(lastEventId) : undefined
    let unlisten = (): void => {}
    const detach = (): void => {
      if (!this.#clients.delete(client)) return
      client.end()
      unlisten()
      this.#gauge()
    }
    unlisten = onAbort(ctx.signal, detach)
    const clock = this.#clock
    const heartbeatMs = this.#heartbeatMs
    async function* frames(): AsyncGenerator<Uint8Array> {
      try {
        yield HELLO
        if (replay !== undefined) {
          for await (const e of replay) {
            if (client.ended) return
            yield encodeSseEvent(e)
          }
        }
        for (;;) {
          const f = await client.next(clock, heartbeatMs)
          if (f === undefined) return
          yield f
        }
      } finally {
        detach()
      }
    }
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
      body: frames(),
    }
  }

  /** Ends every stream and refuses new clients and events. Idempotent. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    for (const c of this.#clients) c.end()
    this.#clients.clear()
    this.#gauge()
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.close()
    return Promise.resolve()
  }

  #gauge(): void {
    this.#metrics.set('sse_clients', { stream: this.#o.name }, this.#clients.size)
  }
}

/** Options of {@link sseEvents}. */
export interface SseEventsOptions {
  /** Stops reading at once (the iteration rejects with the signal's reason and the body is released) when it aborts. */
  signal?: AbortSignal
  /** Largest event accepted, in characters. @default 1 MiB */
  maxEventSize?: number
}

/**
 * Parses a `text/event-stream` body into events (comments and heartbeats are skipped; an
 * incomplete event at the end of the stream is dropped, as the SSE spec says).
 *
 * @throws {@link OverLimitError} for an event over `maxEventSize`; the signal's reason when it aborts.
 * @example
 * ```ts
 * const res = await transport.request('registry', { method: 'GET', path: '/registry/stream' })
 * for await (const e of sseEvents(res.body)) console.log(e.id, JSON.parse(e.data))
 * ```
 */
export async function* sseEvents(body: AsyncIterable<Uint8Array>, options: SseEventsOptions = {}): AsyncGenerator<SseMessage> {
  const queue: SseMessage[] = []
  let failure: Error | undefined
  const parser = createParser({
    maxBufferSize: options.maxEventSize ?? 1024 * 1024,
    onEvent(e: EventSourceMessage) {
      const m: SseMessage = { data: e.data }
      if (e.id !== undefined) m.id = e.id
      if (e.event !== undefined) m.event = e.event
      queue.push(m)
    },
    onError(err) {
      if (err.type === 'max-buffer-size-exceeded') failure ??= new OverLimitError('SSE event over the size limit', { details: { limit: 'maxEventSize' } })
    },
  })
  const decoder = new TextDecoder()
  const signal = options.signal
  const it = body[Symbol.asyncIterator]()
  let finished = false
  try {
    for (;;) {
      // A stream can stay silent for long: the signal ends the wait, not just the next chunk.
      const r = await raceAbort(it.next(), signal)
      if (r.done === true) break
      parser.feed(decoder.decode(r.value, { stream: true }))
      if (failure !== undefined) throw failure
      while (queue.length > 0) yield queue.shift()!
    }
    finished = true
  } finally {
    if (!finished) closeIterator(it)
  }
  parser.feed(decoder.decode())
  while (queue.length > 0) yield queue.shift()!
}
