/**
 * The storage service's HTTP routes, one file per resource. Service-wide limits
 * (`http.maxInflight`, `http.maxRps`) are the host's (core), applied to every route.
 *
 * @module
 */

import type { Route } from '@ron/core'
import { adminRoutes } from './admin.js'
import type { StorageContext } from './context.js'
import { objectRoutes } from './objects.js'
import { pinRoutes } from './pins.js'
import { repairRoutes } from './repair.js'
import { statusRoutes } from './status.js'

export type { StorageContext } from './context.js'

/** Every route of the storage service. */
export function storageRoutes(s: StorageContext): Route[] {
  return [...objectRoutes(s), ...pinRoutes(s), ...statusRoutes(s), ...repairRoutes(s), ...adminRoutes(s)]
}
