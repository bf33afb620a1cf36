/**
 * `@ron/core/client`: what a client of a RON service needs and nothing a server does — the HTTP
 * transport, addresses and BLAKE3, the typed errors and the clock. It loads no zod schema, no
 * config loader and no metrics registry, so a short-lived client (`ron-node put`) starts fast.
 * Every name here is the same object as the one `@ron/core` exports.
 *
 * @example
 * ```ts
 * import { HttpTransport, parseAddress } from '@ron/core/client'
 *
 * const transport = new HttpTransport({ targets: { storage: 'http://127.0.0.1:7701' } })
 * ```
 *
 * @module @ron/core/client
 */

export type { Transport, TransportRequest, TransportResponse, HttpTransportOptions } from './transport/index.js'
export { HttpTransport, StreamResponse, throwIfError, expectOk, errorFromResponse, parseRetryAfter } from './transport/index.js'
// From the modules, not hash/index.js: that one names the backend, which loads the native binding.
export { blake3, createBlake3 } from './hash/blake3.js'
export { toAddress, addressOf, parseAddress, isAddress, addressToDigest } from './hash/address.js'
export type { Address } from './hash/address.js'
export { collectBytes } from './bytes.js'
export { systemClock } from './clock.js'
export type { Clock } from './clock.js'
export { RonError, IntegrityFailedError, isRonError } from './errors.js'
