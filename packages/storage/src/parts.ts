/**
 * The boxes of the storage seed's diagram, built from the config snapshot and the host: the
 * `work` scheduler (reader/writer slots), the replicator, the repair planner and its workers
 * with the shared byte budget, the announcer, and the `events` broadcast. Components read the
 * live config through getters, so a reload reaches them without rebuilding anything.
 *
 * @module
 */

import { BoundedQueue, TokenBucket, WakeableSleep } from '@ron/core'
import type { Address, Broadcast, ServiceHost, Transport } from '@ron/core'
import { WorkScheduler } from './admission.js'
import { Announcer } from './announcer.js'
import type { ResolvedStorageConfig, StorageRuntime } from './config.js'
import type { StorageEvent } from './events.js'
import { ObjectGuard } from './object-guard.js'
import { REPLICATE_SCOPE, tokenFor, type TokenFor } from './peer-auth.js'
import type { PinSet } from './pins.js'
import { placement } from './placement.js'
import { RepairPlanner } from './repair-planner.js'
import { RepairState, type RepairItem } from './repair-state.js'
import { RepairWorkers } from './repair-worker.js'
import { Replicator } from './replication.js'
import type { BlobStore } from './store/types.js'
import { CHANNELS } from './topology.js'

/** The running parts of one storage service. */
export interface StorageParts {
  readonly work: WorkScheduler
  readonly replicator: Replicator
  readonly repairQueue: BoundedQueue<RepairItem>
  readonly repair: RepairState
  readonly planner: RepairPlanner
  readonly workers: RepairWorkers
  readonly announcer: Announcer | undefined
  readonly events: Broadcast<StorageEvent>
  readonly guard: ObjectGuard
  /** Wakes the planner early (a read found corrupt data). */
  readonly wakeable: WakeableSleep
  /** The bearer token of calls to peers (scope `storage:replicate`). */
  readonly peerToken: TokenFor
  /** Every node ranked for an address (placement is its first `rf` reachable entries). */
  ranking(this: void, address: Address): string[]
  /** Applies what a reload changed: work limits, the repair byte budget. */
  reconfigure(): void
}

/** Builds the parts on `host`; `net` is the transport (core's `noTransport` stand-in when none was given). */
export function storageParts(host: ServiceHost<ResolvedStorageConfig>, rt: StorageRuntime, store: BlobStore, net: Transport, pins: PinSet): StorageParts {
  const cfg = (): ResolvedStorageConfig => host.config.get()
  const o0 = cfg()
  const { clock, logger } = host
  const sink = host.metrics.sink
  const events = host.broadcast<StorageEvent>(CHANNELS.events)
  const repair = new RepairState()
  const guard = new ObjectGuard()
  const wakeable = new WakeableSleep(clock)
  const peerToken = tokenFor(rt.tokens, o0.id, REPLICATE_SCOPE)
  // Placement names a node by how its peers list it (`placementName`: its advertised storage URL or
  // transport name by default, its node id under ron-node), the same string on every node, so all
  // nodes compute the same placement.
  const ranking = (address: Address): string[] => placement(address, [cfg().placementName, ...cfg().peers], cfg().peers.length + 1)
  const work = new WorkScheduler({ name: CHANNELS.work, ...workLimits(o0), metrics: sink, clock, signal: host.signal })
  const replicator = new Replicator({
    store,
    // A local copy found corrupt while pushing it is repaired, not pushed again.
    markSuspect: (a) => {
      repair.markSuspect(a, clock.now())
      wakeable.wake()
    },
    transport: net,
    token: peerToken,
    timeoutMs: o0.peerTimeoutMs,
    nodeId: o0.placementName,
    get peers() {
      return cfg().peers
    },
    get rf() {
      return cfg().rf
    },
    get writeQuorum() {
      return cfg().writeQuorum
    },
    queueCapacity: o0.replicationQueue,
    supervisor: host.supervisor,
    metrics: sink,
    logger,
  })
  const repairQueue = new BoundedQueue<RepairItem>({ name: CHANNELS.repair, capacity: o0.repair.queue, metrics: sink })
  const planner = new RepairPlanner({
    nodeId: o0.placementName,
    get peers() {
      return cfg().peers
    },
    get rf() {
      return cfg().rf
    },
    store,
    transport: net,
    token: peerToken,
    probeTimeoutMs: o0.repair.probeTimeoutMs,
    ranking,
    pinned: () => pins.list(),
    state: repair,
    queue: repairQueue,
    metrics: sink,
    logger,
    now: () => clock.now(),
    sleep: (ms, signal) => clock.sleep(ms, signal),
  })
  let bucket = new TokenBucket({ capacity: o0.repair.burst, refillPerSec: o0.repair.bytesPerSec, clock })
  let rate = o0.repair.bytesPerSec
  const workers = new RepairWorkers({
    nodeId: o0.placementName,
    store,
    transport: net,
    token: peerToken,
    timeoutMs: o0.peerTimeoutMs,
    get bucket() {
      return bucket
    },
    get burst() {
      return cfg().repair.burst
    },
    queue: repairQueue,
    state: repair,
    guard,
    metrics: sink,
    logger,
    now: () => clock.now(),
    onDone: (item, ok) => events.publish({ type: ok ? 'repair:done' : 'repair:failed', address: item.address, action: item.action }),
  })
  const a = o0.announce
  const announcer =
    a.target === undefined
      ? undefined
      : new Announcer({
          target: a.target,
          nodeId: o0.nodeId,
          endpoint: o0.advertise,
          ttlSec: a.ttlSec,
          intervalMs: a.intervalMs,
          timeoutMs: a.timeoutMs,
          queueCapacity: a.queue,
          token: tokenFor(rt.tokens, 'index', 'index:announce'),
          transport: net,
          store,
          clock,
          metrics: sink,
          logger,
        })
  return {
    work,
    replicator,
    repairQueue,
    repair,
    planner,
    workers,
    announcer,
    events,
    guard,
    wakeable,
    peerToken,
    ranking,
    reconfigure() {
      const next = cfg()
      work.configure(workLimits(next))
      if (bucket.capacity !== next.repair.burst || rate !== next.repair.bytesPerSec) {
        // Pacing changes for the next chunk; a take in progress finishes on the old bucket.
        bucket = new TokenBucket({ capacity: next.repair.burst, refillPerSec: next.repair.bytesPerSec, clock })
        rate = next.repair.bytesPerSec
      }
    },
  }
}

function workLimits(o: ResolvedStorageConfig): { capacity: number; readers: number; writers: number; writersPerPrincipal: number } {
  return { capacity: o.workQueue, readers: o.getConcurrency, writers: o.writers, writersPerPrincipal: o.writersPerPrincipal }
}
