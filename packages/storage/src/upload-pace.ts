/**
 * Slow-client rules of an upload body (SPEC.md 4 "Slow clients"), on top of the HTTP layer's gap
 * timeout: a minimum average rate over a sliding window and a whole-upload deadline. Both count
 * from the first read of the body, i.e. from when the upload left the `work` queue, never from
 * when it arrived. Either rule failing is `408 RequestTimeout` (the client was too slow).
 *
 * @module
 */

import { RequestTimeoutError } from '@ron/core'
import type { Clock, MetricsSink } from '@ron/core'

/** Buckets of the sliding window. */
const BUCKETS = 10

/** Options of {@link pacedBody}. */
export interface PaceOptions {
  /** Minimum average bytes per second over `windowMs`. */
  minBytesPerSec: number
  /** Length of the sliding window; the rate rule applies once this much time has passed. */
  windowMs: number
  /** Bytes the client announced (Content-Length), or the most it may send; sets the deadline. */
  expectedBytes: number | undefined
  clock: Clock
  metrics: MetricsSink
}

/**
 * The whole-upload deadline for `bytes` at the minimum rate, plus one window of grace:
 * `windowMs + bytes / minBytesPerSec`.
 */
export function uploadDeadlineMs(bytes: number, minBytesPerSec: number, windowMs: number): number {
  return windowMs + Math.ceil((bytes / minBytesPerSec) * 1000)
}

/**
 * Passes `source` through while enforcing the minimum rate and the deadline. A check runs every
 * `windowMs / 10` on the injected clock, so a client that trickles one byte per gap timeout is
 * cut within a tenth of a window of falling under the rate.
 *
 * @throws {@link RequestTimeoutError} with `details.reason` `"min_rate"` or `"deadline"`.
 */
export async function* pacedBody(source: AsyncIterable<Uint8Array>, o: PaceOptions): AsyncGenerator<Uint8Array> {
  const { clock } = o
  const start = clock.now()
  const bucketMs = o.windowMs / BUCKETS
  const counts = new Float64Array(BUCKETS)
  let lastIdx = 0
  let total = 0
  const deadlineMs = o.expectedBytes === undefined ? undefined : uploadDeadlineMs(o.expectedBytes, o.minBytesPerSec, o.windowMs)

  let failure: RequestTimeoutError | undefined
  let wake: ((e: RequestTimeoutError) => void) | undefined
  const fail = (reason: 'min_rate' | 'deadline', message: string, details: Record<string, unknown>): void => {
    if (failure !== undefined) return
    o.metrics.inc('io_timeouts_total', { op: reason === 'min_rate' ? 'upload_rate' : 'upload_deadline' })
    failure = new RequestTimeoutError(message, { details: { op: 'upload', reason, ...details } })
    wake?.(failure)
  }

  const advance = (idx: number): void => {
    for (let j = lastIdx + 1; j <= idx && j <= lastIdx + BUCKETS; j++) counts[j % BUCKETS] = 0
    if (idx > lastIdx) lastIdx = idx
  }

  const check = (): void => {
    const elapsed = clock.now() - start
    if (deadlineMs !== undefined && elapsed >= deadlineMs) {
      fail('deadline', `upload not finished within ${deadlineMs} ms`, { deadlineMs, received: total })
      return
    }
    if (elapsed < o.windowMs) return
    const idx = Math.floor(elapsed / bucketMs)
    advance(idx)
    let sum = 0
    for (const c of counts) sum += c
    // The buckets cover from the start of the oldest one to now.
    const coveredMs = elapsed - (idx - BUCKETS + 1) * bucketMs
    const rate = (sum * 1000) / coveredMs
    if (rate < o.minBytesPerSec) {
      fail('min_rate', `upload slower than ${o.minBytesPerSec} bytes/s over ${o.windowMs} ms`, {
        minBytesPerSec: o.minBytesPerSec,
        windowMs: o.windowMs,
        bytesPerSec: Math.floor(rate),
      })
    }
  }

  let timer: ReturnType<Clock['setTimeout']> | undefined
  const tick = (): void => {
    check()
    if (failure === undefined) arm()
  }
  const arm = (): void => {
    timer = clock.setTimeout(tick, bucketMs)
    timer.unref?.()
  }
  arm()

  const it = source[Symbol.asyncIterator]()
  // One waiter at a time woken by `fail`: no race against a long-lived promise that would keep
  // every chunk reachable until the upload ends. The settle callbacks are made once, not per chunk.
  let settle: ((r: IteratorResult<Uint8Array>) => void) | undefined
  const onValue = (r: IteratorResult<Uint8Array>): void => {
    const s = settle
    settle = wake = undefined
    s?.(r)
  }
  const onError = (e: unknown): void => {
    const w = wake
    settle = wake = undefined
    w?.(e as RequestTimeoutError)
  }
  const executor = (resolve: (r: IteratorResult<Uint8Array>) => void, reject: (e: RequestTimeoutError) => void): void => {
    settle = resolve
    wake = reject
    it.next().then(onValue, onError)
  }
  let finished = false
  try {
    for (;;) {
      if (failure !== undefined) throw failure
      const r = await new Promise<IteratorResult<Uint8Array>>(executor)
      if (r.done === true) {
        finished = true
        return
      }
      const n = r.value.byteLength
      total += n
      const idx = Math.floor((clock.now() - start) / bucketMs)
      advance(idx)
      const k = idx % BUCKETS
      counts[k] = (counts[k] ?? 0) + n
      yield r.value
    }
  } finally {
    if (timer !== undefined) clock.clearTimeout(timer)
    // A pending read may still be in flight (we stopped waiting for it): let it settle quietly.
    if (!finished) void Promise.resolve(it.return?.()).catch(() => undefined)
  }
}
