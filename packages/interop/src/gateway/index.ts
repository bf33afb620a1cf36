/**
 * The gateway of interop (SPEC §6a "Gateway"), put together: the reader (this node's storage, then
 * other nodes, verified), the cache of verified copies, the site lookups and the routes.
 *
 * @module
 */

import type { NodeDirectory, Route, ServiceMetrics } from '@ron/core'
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

/** The results of `gateway_remote_reads_total`. */
export const REMOTE_READ_RESULTS = ['ok', 'integrity', 'failed'] as const

/** Builds the gateway and registers its metrics (each at zero). */
export function createGateway(s: InteropContext, nodes: NodeDirectory | undefined, metrics: ServiceMetrics): Gateway {
  const remote = metrics.counter('gateway_remote_reads_total', 'Reads of an object from another node, by result: ok (verified), integrity (bytes that do not match the address, never served), failed.', ['result'])
  for (const result of REMOTE_READ_RESULTS) remote.inc({ result }, 0)
  const spooled = metrics.counter('gateway_spooled_total', 'Objects from another node verified through a temporary file (larger than gateway.memoryBytes).')
  spooled.inc(0)
  const hits = metrics.counter('gateway_cache_hits_total', 'Reads answered from the cache of verified copies.')
  hits.inc(0)
  const cacheBytes = metrics.gauge('gateway_cache_bytes', 'Bytes of verified copies from other nodes held in memory.')
  cacheBytes.set(0)
  s.metrics.inc('io_timeouts_total', { op: 'gateway.remote' }, 0)
  const cache = new VerifiedCache(s.cfg().gateway.cacheBytes, (n) => cacheBytes.set(n))
  const reader = new ObjectReader(s, nodes, cache, {
    remote: (result) => remote.inc({ result }),
    spooled: () => spooled.inc(),
    cacheHit: () => hits.inc(),
  })
  const sites = new Sites(s, reader)
  return {
    reader,
    routes: gatewayRoutes({ s, reader, sites }),
    reload: () => cache.resize(s.cfg().gateway.cacheBytes),
  }
}
