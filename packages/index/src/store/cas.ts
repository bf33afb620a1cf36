/**
 * The compare-and-set rule shared by every name store.
 *
 * @module
 */

import { ConflictError, NotFoundError } from '@ron/core'
import type { Address } from '@ron/core'
import type { SignedNameRecord, StoredNameRecord } from '../name-record.js'
import type { Expected, NameRecord } from './types.js'

/**
 * Checks a write of `name` against its current binding.
 * @throws {@link ConflictError} when `expected` is `null` and the name exists, or an address that
 *   is not the current binding.
 */
export function checkPut(name: string, actual: Address | undefined, expected: Expected): void {
  if (expected === undefined) return
  if ((actual ?? null) === expected) return
  throw conflict(name, expected, actual)
}

/**
 * Checks a delete of `name` against its current binding.
 * @throws {@link NotFoundError} when the name is not bound and nothing was expected.
 * @throws {@link ConflictError} when `expected` is not the current binding.
 */
export function checkDelete(name: string, actual: Address | undefined, expected: Address | undefined): Address {
  if (actual === undefined) {
    if (expected === undefined) throw new NotFoundError(`name '${name}' is not bound`, { details: { name } })
    throw conflict(name, expected, undefined)
  }
  if (expected !== undefined && expected !== actual) throw conflict(name, expected, actual)
  return actual
}

function conflict(name: string, expected: Address | null, actual: Address | undefined): ConflictError {
  return new ConflictError(`name '${name}' is bound to ${actual ?? 'nothing'}, not ${expected ?? 'nothing'}`, {
    details: { name, expected, actual: actual ?? null },
  })
}

/**
 * Whether the signed record `r` may be written back over what is stored of its name: the binding
 * (or, for a tombstone, no binding and the tombstone) still holds exactly `r`'s five fields and no
 * signature. Anything else means the name was written since (or is not homed here yet): the
 * write-back is dropped.
 */
export function stillUnsigned(r: SignedNameRecord, binding: NameRecord | undefined, tombstone: StoredNameRecord | undefined): boolean {
  const kept = r.manifestAddress === null ? (binding === undefined ? tombstone : undefined) : binding?.manifestAddress === r.manifestAddress ? binding.record : undefined
  return kept !== undefined && kept.sig === undefined && kept.name === r.name && kept.manifestAddress === r.manifestAddress && kept.seq === r.seq && kept.node === r.node && kept.signedAt === r.signedAt
}
