/**
 * The name store: name → the manifest it is bound to. Writes are compare-and-set (SPEC §6a).
 *
 * @module
 */

import type { Address } from '@ron/core'
import type { Manifest } from '../contracts.js'

/** What a name is bound to. The manifest is kept with the binding: it is immutable (content-addressed). */
export interface NameRecord {
  manifestAddress: Address
  manifest: Manifest
  /** The manifest's exact text (it hashes to `manifestAddress`): sent to peer indexes so they can check it. */
  manifestText?: string
  /** When the binding was written, Unix ms. */
  updatedAt: number
}

/**
 * The expected current binding of a compare-and-set: `undefined` = unconditional, `null` = the
 * name must not exist, an address = the name must be bound to it.
 */
export type Expected = Address | null | undefined

/** Result of a successful write or delete: what the name was bound to before. */
export interface WriteResult {
  previous: Address | null
}

/** Durable (LMDB) or memory name storage. */
export interface NameStore {
  /** True when bindings survive a restart. */
  readonly durable: boolean
  /** The binding of `name`, if any. */
  get(name: string): NameRecord | undefined
  /**
   * Binds `name` to `record` if the current binding matches `expected`.
   * @throws {@link ConflictError} (`details: {name, expected, actual}`) when it does not.
   */
  put(name: string, record: NameRecord, expected: Expected): Promise<WriteResult>
  /**
   * Removes the binding of `name` if it matches `expected`.
   * @throws {@link NotFoundError} when the name is not bound and nothing was expected.
   * @throws {@link ConflictError} when the binding does not match `expected`.
   */
  delete(name: string, expected: Address | undefined): Promise<WriteResult>
  /** Number of bound names. */
  count(): number
  /** Releases the store. Idempotent. */
  close(): Promise<void>
}
