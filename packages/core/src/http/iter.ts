/**
 * Body iterable helpers: {@link once} (a body of one chunk), and closing bodies that will not be
 * consumed (calling `return()` lets a handler's iterator release file handles and other resources).
 *
 * @module
 */

/** Calls `return()` on a body iterator we will not consume, so handlers release resources. @internal */
export function closeIterable(body: unknown): void {
  if (body !== null && typeof body === 'object' && Symbol.asyncIterator in body && !(body instanceof Uint8Array)) {
    closeIterator((body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]())
  }
}

/** @internal */
export function closeIterator(it: AsyncIterator<unknown>): void {
  try {
    const p = it.return?.()
    if (p !== undefined) p.then(undefined, () => {})
  } catch {
    // a throwing return() has nothing left for us to clean up
  }
}

/** A body of exactly one chunk, without copying it. @internal */
export function once(chunk: Uint8Array): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      let sent = false
      return {
        next: () => {
          if (sent) return Promise.resolve({ done: true, value: undefined })
          sent = true
          return Promise.resolve({ done: false, value: chunk })
        },
      }
    },
  }
}
