/**
 * Helpers shared by the transports (internal).
 *
 * @module
 */

import { abortReason, type Clock } from '../clock.js'
import { NotReadyError } from '../errors.js'
import { once } from '../http/iter.js'
import type { TransportRequest } from './types.js'

const EMPTY: AsyncIterable<Uint8Array> = {
  [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
}

/** A request body as a stream of chunks, without copying. */
export function bodyIterable(body: TransportRequest['body']): AsyncIterable<Uint8Array> {
  if (body === undefined) return EMPTY
  if (typeof body === 'string') return once(Buffer.from(body))
  if (body instanceof Uint8Array) return once(body)
  return body
}


/**
 * Wraps a response body so that reading it fails with the signal's reason when the call is
 * aborted mid-stream (and stops the producer), and calls `done` once when it ends either way.
 * One abort listener per body (not per chunk): this is on every response's path.
 */
export function guardBody(body: AsyncIterable<Uint8Array>, signal: AbortSignal, done: () => void): AsyncIterable<Uint8Array> {
  let it: AsyncIterator<Uint8Array> | undefined
  let finished = false
  let rejectPending: ((e: Error) => void) | undefined
  const onAbort = (): void => rejectPending?.(abortReason(signal))
  signal.addEventListener('abort', onAbort, { once: true })
  const finish = (): void => {
    if (finished) return
    finished = true
    signal.removeEventListener('abort', onAbort)
    done()
  }
  const stop = async (): Promise<void> => {
    // A body that was never read still has a producer to release (a queued job, a file handle).
    const i = it ?? body[Symbol.asyncIterator]()
    finish()
    try {
      await i?.return?.()
    } catch {
      // the producer failed while being stopped; nothing left to release
    }
  }
  const iterator: AsyncIterableIterator<Uint8Array> = {
    [Symbol.asyncIterator]: () => iterator,
    async next() {
      if (finished) return { done: true, value: undefined }
      it ??= body[Symbol.asyncIterator]()
      try {
        if (signal.aborted) throw abortReason(signal)
        const r = await new Promise<IteratorResult<Uint8Array>>((resolve, reject) => {
          rejectPending = reject
          it!.next().then(resolve, reject)
        })
        if (r.done === true) finish()
        return r
      } catch (e) {
        await stop()
        throw e
      } finally {
        rejectPending = undefined
      }
    },
    async return() {
      await stop()
      return { done: true, value: undefined }
    },
  }
  return iterator
}

/** The error a call to an unknown or unreachable target fails with. */
export function unreachable(target: string, cause?: unknown): NotReadyError {
  return new NotReadyError(`target '${target}' is unreachable`, {
    details: { target, reason: 'unreachable' },
    ...(cause === undefined ? {} : { cause }),
  })
}

/**
 * A call's deadline until the response head. `progress()` restarts it (a streamed request body
 * calls it per chunk, so the deadline bounds silence, not upload size); `settle()` stops it for
 * good once the head arrived. Never leaves a timer behind.
 */
export function callDeadline(
  clock: Clock,
  timeoutMs: number,
  onTimeout: () => void,
): { progress: () => void; settle: () => void } {
  let settled = false
  let timer = clock.setTimeout(onTimeout, timeoutMs)
  timer.unref?.()
  return {
    progress: () => {
      if (settled) return
      clock.clearTimeout(timer)
      timer = clock.setTimeout(onTimeout, timeoutMs)
      timer.unref?.()
    },
    settle: () => {
      settled = true
      clock.clearTimeout(timer)
    },
  }
}

/**
 * A request body that reports each chunk as it is pulled, and an error the body itself throws
 * (streamed bodies only; bytes pass through).
 */
export function withProgress(
  body: TransportRequest['body'],
  onChunk: () => void,
  onError?: (e: unknown) => void,
): TransportRequest['body'] {
  if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) return body
  return (async function* progress(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of body) {
        onChunk()
        yield chunk
      }
    } catch (e) {
      onError?.(e)
      throw e
    }
  })()
}
