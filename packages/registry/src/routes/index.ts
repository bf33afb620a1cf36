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

/** Every route, static paths before `/registry/:version`. */
export function registryRoutes(d: RouteDeps): Route[] {
  return [...writeRoutes(d), ...tileRoutes(d), ...readRoutes(d)]
}
