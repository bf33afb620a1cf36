/**
 * The scope catalog (SPEC.md section 5): every capability scope a RON service checks, as data.
 * The admin token carries all of it; a route's `scope` is one of these.
 *
 * @module
 */

/**
 * Every scope and what it allows. One list for the whole system: a service that adds a scoped
 * route adds its scope here.
 *
 * @example
 * ```ts
 * SCOPES['storage:write'] // 'PUT /o, pins'
 * ```
 */
export const SCOPES = Object.freeze({
  'storage:read': 'reads when a store is not public',
  'storage:write': 'PUT /o, pins',
  'storage:replicate': 'replica writes and repair pushes between storage nodes',
  'storage:admin': 'delete, scrub, repair runs',
  'registry:propose': 'propose descriptor sets',
  'registry:approve': 'approve proposals',
  'registry:commit': 'commit approved proposals',
  'registry:admin': 'registry admin routes (supersede)',
  'passport:issue': 'issue tokens',
  'passport:revoke': 'revoke tokens',
  'passport:admin': 'rotate issuer keys and other passport admin routes',
  'index:write': 'write and delete names',
  'index:announce': 'provider announcements',
  'index:admin': 'index admin routes',
  'interop:admin': "interop's admin routes (webhook secrets, API keys)",
  'node:admin': "the admin listener's write routes (POST /admin/reload)",
} as const)

/** One scope of the {@link SCOPES} catalog, e.g. `'storage:write'`. */
export type Scope = keyof typeof SCOPES

/** Every scope of the catalog, in catalog order: what the admin token carries. */
export const ALL_SCOPES: readonly Scope[] = Object.freeze(Object.keys(SCOPES) as Scope[])

/** True when `s` names a scope of the {@link SCOPES} catalog. */
export function isScope(s: unknown): s is Scope {
  return typeof s === 'string' && Object.hasOwn(SCOPES, s)
}
