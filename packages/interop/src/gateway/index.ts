/**
 * The gateway of interop (SPEC §6a "Gateway"), put together: the reader (this node's storage, then
 * other nodes, verified), the cache of verified copies, the site lookups and the routes.
 *
 * @module
 */

import type { NodeDirectory, Route } from '@ron/core'
import type { InteropMetricHandles } from '../metrics.js'
import type { InteropContext } from '../routes/context.js'
import { gatewayRoutes } from '../routes/gateway.js'
import { VerifiedCache } from './cache.js'
import { ObjectReader } from './reader.js'
import { Sites } from './site.js'

/** The gateway's parts the service keeps. */
export interface Gateway {
  reader: ObjectReader
  routes: Route[]
  /** Applies a reloaded config (the cache bound). */
  reload(): void
}

/** Builds the gateway on its metric handles (registered at startup with the service's table). */
export function createGateway(s: InteropContext, nodes: NodeDirectory | undefined, m: Pick<InteropMetricHandles, 'gateway_remote_reads_total' | 'gateway_spooled_total' | 'gateway_cache_hits_total' | 'gateway_cache_bytes'>): Gateway {
  const remote = m.gateway_remote_reads_total
  const cacheBytes = m.gateway_cache_bytes
  const cache = new VerifiedCache(s.cfg().gateway.cacheBytes, (n) => cacheBytes.set(n))
  const reader = new ObjectReader(s, nodes, cache, {
    remote: (result) => remote.inc({ result }),
    spooled: () => m.gateway_spooled_total.inc(),
    cacheHit: () => m.gateway_cache_hits_total.inc(),
  })
  const sites = new Sites(s, reader)
  return {
    reader,
    routes: gatewayRoutes({ s, reader, sites }),
    reload: () => cache.resize(s.cfg().gateway.cacheBytes),
  }
}
