/**
 * The name-write body checked without zod in the common case. `nameWriteSchema` (a strict zod
 * object of two address fields) costs more than the rest of the body's handling; the common body
 * — a plain object of `manifestAddress` and, optionally, `expectedPrevious` (an address or
 * `null`), nothing else — is recognised directly and returned exactly as the schema would return
 * it. Anything else goes to the schema, which accepts or refuses it with its own error.
 *
 * @module
 */

import { isAddress } from '@ron/core'
import { nameWriteSchema, type NameWrite } from '../contracts.js'

/**
 * The common name-write body exactly as {@link nameWriteSchema} outputs it (same members, same
 * order), or `undefined` when it is not positively recognised. @internal
 */
export function plainNameWrite(v: unknown): NameWrite | undefined {
  if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== Object.prototype) return undefined
  let n = 0
  for (const k in v) {
    if (k !== 'manifestAddress' && k !== 'expectedPrevious') return undefined
    n++
  }
  const { manifestAddress, expectedPrevious } = v as Record<string, unknown>
  if (!isAddress(manifestAddress)) return undefined
  if (n === 1) return { manifestAddress }
  if (expectedPrevious === null || isAddress(expectedPrevious)) return { manifestAddress, expectedPrevious }
  return undefined
}

/** {@link nameWriteSchema} with the common body checked directly (what `ctx.json` takes). @internal */
export const nameWriteBody = {
  parse: (v: unknown): NameWrite => plainNameWrite(v) ?? nameWriteSchema.parse(v),
}
