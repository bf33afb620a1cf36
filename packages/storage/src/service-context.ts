/**
 * What the routes share ({@link StorageContext}), assembled from the host, the parts and the disk
 * watch.
 *
 * @module
 */

import type { ServiceHost, Transport } from '@ron/core'
import type { ResolvedStorageConfig, StorageRuntime } from './config.js'
import type { DiskWatch } from './disk-watch.js'
import type { StorageParts } from './parts.js'
import { readAuthorizer, replicaAuthorizer } from './peer-auth.js'
import type { PinSet } from './pins.js'
import type { StorageContext } from './routes/index.js'
import type { BlobStore } from './store/types.js'

/** The routes' view of one storage service. */
export function storageContext(
  host: ServiceHost<ResolvedStorageConfig>,
  parts: StorageParts,
  disk: DiskWatch,
  store: BlobStore,
  pins: PinSet,
  rt: StorageRuntime,
  net: Transport,
): StorageContext {
  const { clock, logger } = host
  const own = (req: Parameters<StorageContext['authenticate']>[0], scope?: string): ReturnType<StorageContext['authenticate']> => host.authenticate(req, scope)
  const authorizeReplica = replicaAuthorizer({ serviceId: host.id, peerKeys: rt.peerKeys ?? {}, clock, own })
  const { planner, wakeable } = parts
  return {
    get o() {
      return host.config.get()
    },
    usage: () => disk.usage,
    store,
    pins,
    guard: parts.guard,
    repair: parts.repair,
    replicator: parts.replicator,
    announcer: parts.announcer,
    transport: net,
    authenticate: own,
    authorizeReplica,
    authorizeRead: readAuthorizer(own, authorizeReplica),
    peerToken: parts.peerToken,
    work: parts.work,
    signalFor: (rc) => AbortSignal.any([rc.signal, host.signal]),
    shutdown: host.signal,
    metrics: host.metrics.sink,
    clock,
    logger,
    events: parts.events,
    disk: disk.state,
    commitTime: (ms) => disk.commitTime(ms),
    diskError: (reason) => disk.set(false, reason),
    plan: (dryRun, signal) => planner.plan(AbortSignal.any([signal, host.signal]), dryRun),
    lastPlan: () => planner.lastPlan,
    placement: (address) => parts.ranking(address),
    kick: () => wakeable.wake(),
  }
}
