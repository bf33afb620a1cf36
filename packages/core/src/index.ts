/**
 * `@ron/core`: the runtime kit every RON service is built from.
 *
 * - Concurrency: {@link BoundedQueue}, {@link Broadcast}, {@link Watch}, {@link Supervisor}.
 * - Resilience: {@link withDeadline}, {@link retry}, {@link CircuitBreaker}, {@link TokenBucket}, {@link Admission}.
 * - Errors: {@link RonError} and one class per SPEC code.
 * - Addressing: {@link blake3}, {@link parseAddress}.
 * - Host: routes, `serve()`, transports, capabilities, metrics, health, config, `defineService()`.
 *
 * @example
 * ```ts
 * import { BoundedQueue, isRonError } from '@ron/core'
 *
 * const q = new BoundedQueue<string>({ name: 'work', capacity: 2 })
 * q.trySend('a')
 * q.trySend('b')
 * try { q.trySend('c') } catch (e) { if (isRonError(e, 'Busy')) console.log('full') }
 * ```
 *
 * @packageDocumentation
 * @module @ron/core
 */

export * from './errors.js'
export * from './clock.js'
export * from './random.js'
export * from './metrics-sink.js'
export * from './bytes.js'
export * from './concurrency/index.js'
export * from './resilience/index.js'
export * from './hash/index.js'
export * from './auth/index.js'
export * from './config/index.js'
export * from './http/index.js'
export * from './transport/index.js'
export * from './metrics/index.js'
export * from './health/index.js'
export * from './service/index.js'
export * from './contracts.js'
