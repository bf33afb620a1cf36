/**
 * BLAKE3 hashing and `b3:` content addresses.
 *
 * @module @ron/core/hash
 */

export { blake3, createBlake3 } from './blake3.js'
export { blake3Backend } from './backend.js'
export type { Blake3Hasher, Blake3Backend } from './blake3.js'
export { toAddress, addressOf, parseAddress, isAddress, addressToDigest } from './address.js'
export type { Address } from './address.js'
