/**
 * Name rules of the index on top of SPEC §6a's DNS label rules (core's `parseName`): names under
 * the special-use top-level labels of RFC 6761/6762/7686 and `arpa` are reserved and refused.
 *
 * @module
 */

import { MalformedError } from '@ron/core'
import { parseName } from './contracts.js'

/** Top-level labels that no name may end in (special-use domain names). */
export const RESERVED_TLDS: readonly string[] = ['localhost', 'local', 'invalid', 'test', 'example', 'onion', 'arpa']

/** True when `name` is a reserved name (its last label is in {@link RESERVED_TLDS}). */
export function isReservedName(name: string): boolean {
  const last = name.slice(name.lastIndexOf('.') + 1)
  return RESERVED_TLDS.includes(last)
}

/**
 * Validates a name for binding or resolving: DNS label rules, not reserved.
 * @throws {@link MalformedError} with `details.field` and, for reserved names, `details.reason: "reserved"`.
 */
export function checkName(name: string, field = 'name'): string {
  parseName(name, field)
  if (isReservedName(name)) {
    throw new MalformedError(`name '${name}' is reserved`, { details: { field, value: name, reason: 'reserved' } })
  }
  return name
}
