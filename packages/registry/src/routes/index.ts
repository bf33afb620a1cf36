/**
 * All routes of the registry.
 *
 * @module
 * @internal
 */

import type { Route } from '@ron/core'
import type { RouteDeps } from './context.js'
import { readRoutes } from './reads.js'
import { tileRoutes } from './tiles.js'
import { writeRoutes } from './writes.js'

export type { RouteDeps } from './context.js'
export { DEADLINE_HEADER, approveBodySchema, commitBodySchema, proposeBodySchema, supersedeBodySchema } from './writes.js'

/**
 * Every route, static paths before `/registry/:version`, each on its readiness path (SPEC 3.3a):
 * mutations on `write` (shed first), reads on `read` (served through a drain's read window).
 */
export function registryRoutes(d: RouteDeps): Route[] {
  return [...writeRoutes(d), ...tileRoutes(d), ...readRoutes(d)].map((r) => ({ ...r, readinessPath: r.method === 'GET' || r.method === 'HEAD' ? 'read' : 'write' }))
}
