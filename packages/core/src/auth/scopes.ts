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

/**
 * The scopes of the calls nodes make to each other (SPEC.md section 5, "Service-call scopes"): the
 * most a node's service token (`sub: "node:<id>"`) may carry, whether minted by its own passport
 * or traded for its client assertion. `storage:write` only ever with a `maxBytes` caveat. Never
 * `*`, never `passport:*`, never `node:admin`.
 *
 * @example
 * ```ts
 * SERVICE_CALL_SCOPES.includes('storage:replicate') // true
 * ```
 */
export const SERVICE_CALL_SCOPES: readonly Scope[] = Object.freeze(['storage:replicate', 'storage:write', 'storage:read', 'index:announce', 'index:write'] as Scope[])

/** True when `s` is one of the {@link SERVICE_CALL_SCOPES}. */
export function isServiceCallScope(s: string): boolean {
  return (SERVICE_CALL_SCOPES as readonly string[]).includes(s)
}

/**
 * The service a scope is for: the part before the colon (`storage:write` → `storage`,
 * `node:admin` → `node`). A token's audiences must be services its scopes name (SPEC.md section 5,
 * "Authority never grows").
 *
 * @example
 * ```ts
 * scopeService('registry:commit') // 'registry'
 * ```
 */
export function scopeService(scope: string): string {
  const i = scope.indexOf(':')
  return i < 0 ? scope : scope.slice(0, i)
}
