/**
 * The shared first step of the registry's zod-free fast paths (common proposal bodies and
 * approvals): a plain object whose own enumerable members are all among the names a strict
 * schema allows.
 *
 * @module
 */

/**
 * How many members `v` has, when it is a plain object (prototype `Object.prototype`) whose
 * members are all in `allowed`; `-1` for anything else, which the caller hands to its schema.
 * @internal
 */
export function plainMembers(v: unknown, allowed: readonly string[]): number {
  if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== Object.prototype) return -1
  let n = 0
  for (const k in v) {
    if (!allowed.includes(k)) return -1
    n++
  }
  return n
}
