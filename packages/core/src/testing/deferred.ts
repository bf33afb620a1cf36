/**
 * A promise with its resolvers, for tests that gate or observe asynchronous steps.
 *
 * @module
 */

/** A promise plus the functions that settle it. */
export interface Deferred<T> {
  readonly promise: Promise<T>
  readonly resolve: (value: T) => void
  readonly reject: (reason: unknown) => void
  /** True once `resolve` or `reject` was called. */
  readonly settled: boolean
}

/**
 * Creates a {@link Deferred}: await an event instead of counting event-loop turns.
 *
 * @example
 * ```ts
 * const started = deferred()
 * const gate = deferred()
 * const job = pool.submit(async () => { started.resolve(); await gate.promise })
 * await started.promise // the job is running now
 * gate.resolve()
 * await job
 * ```
 */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  let settled = false
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return {
    promise,
    resolve: (value: T) => {
      settled = true
      resolve(value)
    },
    reject: (reason: unknown) => {
      settled = true
      reject(reason)
    },
    get settled() {
      return settled
    },
  }
}
