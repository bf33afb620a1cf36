/**
 * The index service's HTTP routes, one file per resource.
 *
 * @module
 */

import type { Route } from '@ron/core'
import type { IndexContext } from './context.js'
import { adminRoutes } from './admin.js'
import { nameListRoutes } from './names.js'
import { resolveRoutes } from './resolve.js'
import { writeRoutes } from './writes.js'

export type { IndexContext, IndexEvent } from './context.js'
export { parseLimit, DEFAULT_PROVIDER_LIMIT, MAX_PROVIDER_LIMIT } from './resolve.js'
export { parseIfMatch, checkNamePrefix } from './writes.js'
export { ADMIN_SCOPE } from './admin.js'
export { DEFAULT_NAME_LIMIT, MAX_NAME_LIMIT, type NameList } from './names.js'

/** Every route of the index service. */
export function indexRoutes(s: IndexContext): Route[] {
  return [...resolveRoutes(s), ...nameListRoutes(s), ...writeRoutes(s), ...adminRoutes(s)]
}
