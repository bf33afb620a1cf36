/**
 * The audit path: request handlers {@link AuditLog.emit} events into the `audit` queue (512,
 * drop-oldest, never waits) and one sink task writes them to the configured sink. Every event gets
 * its sequence number when it is emitted, so an event dropped under a stalled sink leaves a
 * visible gap in the sequence; drops are counted in `audit_drop_total`.
 *
 * @module
 */

import { open, type FileHandle } from 'node:fs/promises'
import { BoundedQueue, ClosedError, addressOf, isRonError, type Clock, type MetricsSink } from '@ron/core'

/** What was decided about a request. */
export type AuditDecision = 'accept' | 'duplicate' | 'deny' | 'shed' | 'error'

/** One audit event (SPEC-style camelCase; `reason` is the refusal reason or error code). */
export interface AuditEvent {
  /** Sequence number, assigned at emit time; a gap means events were dropped. */
  seq: number
  /** Unix ms. */
  at: number
  /** `webhook`, `put` or `read`. */
  kind: 'webhook' | 'put' | 'read'
  /** Webhook provider, when a webhook. */
  provider?: string
  /** API-key client, when an upload. */
  client?: string
  /** The request's correlation id. */
  requestId: string
  /** Redacted capability id (`jti` prefix + `…`), when a capability was used. */
  capabilityId?: string
  /** `b3:` address of the payload (webhook body, uploaded object). */
  payloadB3?: string
  /** Receipt address of an accepted webhook. */
  receipt?: string
  decision: AuditDecision
  reason?: string
  /** Latency bucket: `<10ms`, `<50ms`, `<100ms`, `<500ms`, `<1s`, `<2s`, `>=2s`. */
  latency: string
}

/** Where audit events end up. `write` may be slow; it runs on the sink task only. */
export interface AuditSink {
  readonly kind: string
  write(event: AuditEvent): Promise<void> | void
  /**
   * Optional: takes an event whose `payloadB3` is still to be computed from `payload` (a small
   * body, see {@link LAZY_HASH_MAX_BYTES}). A sink that holds events in memory may keep the bytes
   * and hash them only when the event is read; without this method the sink task hashes first
   * and calls `write`.
   */
  writeLazy?(event: AuditEvent, payload: Uint8Array): Promise<void> | void
  close?(): Promise<void> | void
}

const BUCKETS: Array<[number, string]> = [
  [10, '<10ms'],
  [50, '<50ms'],
  [100, '<100ms'],
  [500, '<500ms'],
  [1000, '<1s'],
  [2000, '<2s'],
]

/** The latency bucket label of a duration in ms. */
export function latencyBucket(ms: number): string {
  for (const [limit, label] of BUCKETS) if (ms < limit) return label
  return '>=2s'
}

/** Redacts a capability id (`jti`) to a short prefix: enough to correlate, not to replay. */
export function redactCapabilityId(jti: string): string {
  return jti.length <= 6 ? '…' : `${jti.slice(0, 6)}…`
}

/** Bytes per payload slab of a {@link MemoryAuditSink}. */
const SLAB_BYTES = 256 * 1024

/** A block of copied payloads and how many ring slots still point into it. */
interface Slab {
  readonly buf: Buffer
  refs: number
}

/** A bounded in-memory ring of the most recent events (the default sink; amnesia-safe). */
export class MemoryAuditSink implements AuditSink {
  readonly kind = 'memory'
  readonly #capacity: number
  /** A ring: once full, `#next` is the oldest slot and the next one overwritten (O(1) per write). */
  readonly #ring: AuditEvent[] = []
  #next = 0
  /**
   * Payloads still to be hashed, copied into slabs (see {@link writeLazy}): per ring slot, its
   * slab (undefined: none), offset and length. Numbers and a few long-lived slabs, so a held
   * payload is no object of its own for the young-generation GC to copy and promote.
   */
  readonly #slabOf: Array<Slab | undefined>
  readonly #offOf: Int32Array
  readonly #lenOf: Int32Array
  /** The slab being filled, and how much of it is used. */
  #cur: Slab | undefined
  #curUsed = 0
  #slabCount = 0

  /** @param capacity events kept. @default 1024 */
  constructor(capacity = 1024) {
    this.#capacity = Math.max(1, Math.floor(capacity))
    this.#slabOf = new Array<Slab | undefined>(this.#capacity).fill(undefined)
    this.#offOf = new Int32Array(this.#capacity)
    this.#lenOf = new Int32Array(this.#capacity)
  }

  write(event: AuditEvent): void {
    this.#put(event)
  }

  /**
   * Keeps the event with a copy of its (small) payload; `payloadB3` is computed when
   * {@link events} reads it, once. An event overwritten unread never costs a hash: under a flood
   * of forgeries the ring turns over without hashing a byte. The bytes are copied into shared
   * slabs rather than holding the request's buffer: a thousand held request buffers (and the
   * socket reads behind them) were a thousand objects for every young-generation GC to copy and
   * promote. Holds at most `capacity` × 16 KiB of payloads (a larger one is hashed at once).
   */
  writeLazy(event: AuditEvent, payload: Uint8Array): void {
    const len = payload.byteLength
    if (len > LAZY_HASH_MAX_BYTES) {
      event.payloadB3 = addressOf(payload)
      this.#put(event)
      return
    }
    let slab = this.#cur
    if (slab === undefined || this.#curUsed + len > SLAB_BYTES) {
      // The previous slab lives on while slots point into it (see #release).
      if (slab !== undefined && slab.refs === 0) this.#slabCount--
      slab = { buf: Buffer.allocUnsafeSlow(SLAB_BYTES), refs: 0 }
      this.#cur = slab
      this.#curUsed = 0
      this.#slabCount++
    }
    slab.buf.set(payload, this.#curUsed)
    const i = this.#put(event)
    this.#slabOf[i] = slab
    this.#offOf[i] = this.#curUsed
    this.#lenOf[i] = len
    slab.refs++
    this.#curUsed += len
  }

  /** Stores `event` in the ring (overwriting the oldest once full); returns its slot. */
  #put(event: AuditEvent): number {
    let i: number
    if (this.#ring.length < this.#capacity) {
      i = this.#ring.length
      this.#ring.push(event)
    } else {
      i = this.#next
      this.#release(i)
      this.#ring[i] = event
      this.#next = (i + 1) % this.#capacity
    }
    return i
  }

  /** Forgets slot `i`'s held payload; a slab no slot needs (and not being filled) is left to the GC. */
  #release(i: number): void {
    const slab = this.#slabOf[i]
    if (slab === undefined) return
    this.#slabOf[i] = undefined
    if (--slab.refs === 0 && slab !== this.#cur) this.#slabCount--
  }

  /** Slabs currently held (for tests). @internal */
  get slabCount(): number {
    return this.#slabCount
  }

  /** The events held, oldest first (payload hashes computed now where still pending). */
  events(): AuditEvent[] {
    const out: AuditEvent[] = []
    const n = this.#ring.length
    for (let k = 0; k < n; k++) {
      const i = (this.#next + k) % n
      const e = this.#ring[i]!
      const slab = this.#slabOf[i]
      if (slab !== undefined) {
        const off = this.#offOf[i]!
        e.payloadB3 = addressOf(slab.buf.subarray(off, off + this.#lenOf[i]!))
        this.#release(i)
      }
      out.push(e)
    }
    return out
  }
}

/** Writes one JSON line per event to a writable (stdout by default). */
export class StdoutAuditSink implements AuditSink {
  readonly kind = 'stdout'
  readonly #out: { write(s: string): unknown }

  constructor(out: { write(s: string): unknown } = process.stdout) {
    this.#out = out
  }

  write(event: AuditEvent): void {
    this.#out.write(`${JSON.stringify(event)}\n`)
  }
}

/**
 * Appends one JSON line per event to a file (opened `O_APPEND`, mode 0600).
 *
 * **fsync policy**: lines are written as they come; the file is fsynced at most every
 * `fsyncIntervalMs` (checked after each write, on the sink task only) and always on `close()`.
 * A crash can lose the events of the last interval; the sequence numbers show where the file
 * ends. Forbidden in amnesia mode.
 */
export class JsonlFileAuditSink implements AuditSink {
  readonly kind = 'file'
  readonly #path: string
  readonly #fsyncIntervalMs: number
  readonly #clock: Clock
  #fh: FileHandle | undefined
  #lastSync = 0
  #dirty = false
  #closed = false
  /** The write in progress: close() waits for it, so the file is closed once and nothing is lost. */
  #tail: Promise<void> = Promise.resolve()
  #closing: Promise<void> | undefined

  constructor(path: string, options: { fsyncIntervalMs?: number; clock: Clock }) {
    this.#path = path
    this.#fsyncIntervalMs = options.fsyncIntervalMs ?? 1000
    this.#clock = options.clock
  }

  /**
   * Appends one line (writes are serialised).
   * @throws {@link ClosedError} after {@link JsonlFileAuditSink.close}: the file is never reopened.
   */
  write(event: AuditEvent): Promise<void> {
    if (this.#closed) return Promise.reject(new ClosedError('the audit file sink is closed', { details: { path: this.#path } }))
    const line = `${JSON.stringify(event)}\n`
    const run = this.#tail.then(() => this.#append(line))
    // The chain continues whatever this write's outcome; the caller sees its own error.
    this.#tail = run.catch(() => undefined)
    return run
  }

  async #append(line: string): Promise<void> {
    this.#fh ??= await open(this.#path, 'a', 0o600)
    await this.#fh.appendFile(line)
    this.#dirty = true
    const now = this.#clock.now()
    if (now - this.#lastSync >= this.#fsyncIntervalMs) {
      await this.#fh.sync()
      this.#lastSync = now
      this.#dirty = false
    }
  }

  /** Lets the write in progress finish, fsyncs if needed and closes the file. Idempotent. */
  close(): Promise<void> {
    this.#closed = true
    this.#closing ??= this.#tail.then(async () => {
      const fh = this.#fh
      this.#fh = undefined
      if (fh === undefined) return
      try {
        if (this.#dirty) await fh.sync()
      } finally {
        await fh.close()
      }
    })
    return this.#closing
  }
}

/** Resolves after the current event-loop turn (I/O callbacks included) has run. */
function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve))
}

/** Payloads up to this size (of their backing buffer) are hashed by the sink task, not on emit. */
export const LAZY_HASH_MAX_BYTES = 16 * 1024

/** A queued event: complete, or waiting for its payload hash (filled in by the sink task). */
type Queued = AuditEvent | { event: AuditEvent; payload: Uint8Array }

function complete(q: Queued): AuditEvent {
  if (!('payload' in q)) return q
  q.event.payloadB3 = addressOf(q.payload)
  return q.event
}

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  sink: AuditSink
  /** Capacity of the `audit` queue. @default 512 */
  capacity?: number
  clock: Clock
  metrics: MetricsSink
}

/**
 * The producer side (`emit`, never waits) and the sink task body (`run`).
 *
 * @example
 * ```ts
 * const audit = new AuditLog({ sink: new MemoryAuditSink(), clock, metrics })
 * supervisor.spawn('audit-sink', (signal) => audit.run(signal))
 * audit.emit({ kind: 'webhook', requestId, decision: 'accept', latency: '<10ms' })
 * ```
 */
export class AuditLog {
  readonly sink: AuditSink
  readonly #queue: BoundedQueue<Queued>
  readonly #clock: Clock
  readonly #metrics: MetricsSink
  #seq = 0

  constructor(options: AuditLogOptions) {
    this.sink = options.sink
    this.#clock = options.clock
    this.#metrics = options.metrics
    this.#queue = new BoundedQueue<Queued>({ name: 'audit', capacity: options.capacity ?? 512, overflow: 'drop-oldest', metrics: options.metrics })
  }

  /** Events waiting for the sink. */
  get depth(): number {
    return this.#queue.depth
  }

  /** The last sequence number handed out. */
  get lastSeq(): number {
    return this.#seq
  }

  /**
   * Queues an event (drop-oldest when full). Returns its sequence number; never throws.
   *
   * `payload`: the bytes whose `b3:` address the event carries, when the caller has not hashed
   * them. A small payload (its whole backing buffer at most {@link LAZY_HASH_MAX_BYTES}) is
   * hashed by the sink task just before the sink sees the event, so a refusal costs no hash on
   * the request path and an event dropped before the sink never costs one; a larger one is
   * hashed here, so a stalled sink never holds more than 512 × 16 KiB of bodies.
   */
  emit(event: Omit<AuditEvent, 'seq' | 'at'>, payload?: Uint8Array): number {
    const full: AuditEvent = { seq: ++this.#seq, at: this.#clock.now(), ...event }
    let item: Queued = full
    if (payload !== undefined && full.payloadB3 === undefined) {
      if (payload.buffer.byteLength <= LAZY_HASH_MAX_BYTES) item = { event: full, payload }
      else full.payloadB3 = addressOf(payload)
    }
    try {
      const evicted = this.#queue.trySend(item)
      if (evicted !== undefined) this.#metrics.inc('audit_drop_total', undefined)
      this.#metrics.inc('audit_emitted_total', undefined)
    } catch {
      // Closed during shutdown: the event is lost, and counted as such.
      this.#metrics.inc('audit_drop_total', undefined)
    }
    return full.seq
  }

  /**
   * The sink task: writes events until the queue is closed and empty or `signal` aborts. Events
   * already queued are taken without waiting, and after each batch the task lets one event-loop
   * turn pass before it waits again: under load one wake-up writes the events of many requests
   * (no waiter, abort listener and promise per event), idle it costs nothing.
   */
  async run(signal: AbortSignal): Promise<void> {
    for (;;) {
      let next: Queued | undefined = signal.aborted ? undefined : this.#queue.tryRecv()
      if (next === undefined) {
        try {
          next = await this.#queue.recv(signal)
        } catch (err) {
          if (isRonError(err, 'Closed')) return
          if (signal.aborted) return this.#flush()
          throw err
        }
      }
      while (next !== undefined) {
        try {
          const pending = this.#deliver(next)
          if (pending !== undefined) await pending
        } catch (err) {
          // The event is lost (counted); the task crashes and the supervisor restarts it with backoff.
          this.#metrics.inc('audit_drop_total', undefined)
          throw err
        }
        next = signal.aborted ? undefined : this.#queue.tryRecv()
      }
      await nextTurn()
    }
  }

  #deliver(q: Queued): Promise<void> | void {
    if ('payload' in q && this.sink.writeLazy !== undefined) return this.sink.writeLazy(q.event, q.payload)
    return this.sink.write(complete(q))
  }

  /** On shutdown: writes what is still queued (bounded by the queue's capacity). */
  async #flush(): Promise<void> {
    for (let e = this.#queue.tryRecv(); e !== undefined; e = this.#queue.tryRecv()) await this.#deliver(e)
  }

  /** Stops intake; the sink task writes what is queued and ends. */
  close(): void {
    this.#queue.close()
  }
}
