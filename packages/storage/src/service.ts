/**
 * `createStorageService(options, transport)`: wires the backend, routes, work pool, replication,
 * repair planner and workers, announcer and disk probe onto a core service host, per the seed's
 * topology (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { join } from 'node:path'
import { BoundedQueue, ConfigError, MalformedError, TokenBucket, abortReason, createServiceHost, noopLogger, systemClock } from '@ron/core'
import type { Address, Clock, RonService, Subscription, Transport } from '@ron/core'
import { WorkScheduler } from './admission.js'
import { Announcer } from './announcer.js'
import { resolveOptions, type ResolvedStorageOptions, type StorageServiceOptions } from './config.js'
import { REPLICATE_SCOPE, readAuthorizer, replicaAuthorizer, tokenFor } from './peer-auth.js'
import { ObjectGuard, PinSet } from './pins.js'
import { RepairPlanner, RepairState, type RepairItem, type RepairPlan } from './repair-planner.js'
import { RepairWorkers } from './repair-worker.js'
import { placement } from './placement.js'
import { Replicator } from './replication.js'
import type { StorageEvent } from './events.js'
import { storageRoutes, type StorageContext } from './routes/index.js'
import { createFsStore, createMemoryStore } from './store/index.js'
import type { BlobStore } from './store/types.js'
import { CHANNELS, TASKS, storageTopology } from './topology.js'

/** The storage service: a {@link RonService} plus storage-specific handles. */
export interface StorageService extends RonService {
  /** This node's transport name. */
  readonly nodeId: string
  /** The backend (for hosts and tests; writing to it directly bypasses replication and announcements). */
  readonly store: BlobStore
  /**
   * Runs a repair planner tick now; with `dryRun` only computes the plan.
   * @throws `CanceledError` when `signal` aborts or the service closes.
   */
  runRepair(opts?: { dryRun?: boolean; signal?: AbortSignal }): Promise<RepairPlan>
  /** Resolves when no repair is queued or running. */
  repairIdle(): Promise<void>
  /** The nodes that should hold `address` (rendezvous placement over this node and its peers). */
  placement(address: Address): string[]
  /** Subscribes to the `events` broadcast (drop-oldest, 1024 per subscriber). */
  subscribe(): Subscription<StorageEvent>
}

/**
 * Creates a storage service. With `dataDir` it stores objects durably on disk, without it in
 * memory; with `peers` (other storage nodes reachable through `transport`) it keeps `rf` copies
 * and repairs missing or corrupt ones.
 *
 * @throws {@link ConfigError} (code `Malformed`) for invalid options (`details.path` names the key),
 *   or when `peers` or `announce.target` are configured without a transport.
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createStorageService } from '@ron/storage'
 *
 * const storage = await createStorageService({ dataDir: './data', auth: { keys: jwks } })
 * createServer(storage.handle).listen(7701)
 * ```
 */
export async function createStorageService(options: StorageServiceOptions = {}, transport?: Transport): Promise<StorageService> {
  const o = resolveOptions(options)
  if (transport === undefined && (o.peers.length > 0 || o.announce.target !== undefined)) {
    throw new ConfigError('storage options: peers and announce.target need a transport', { details: { path: 'peers' } })
  }
  const clock = o.clock ?? systemClock
  const ownStore = o.backend === undefined
  const store: BlobStore =
    o.backend ?? (o.dataDir !== undefined ? await createFsStore({ dir: o.dataDir, chunkSize: o.chunkSize }) : createMemoryStore({ chunkSize: o.chunkSize }))
  let pins: PinSet
  try {
    pins = await PinSet.open(o.dataDir === undefined ? undefined : join(o.dataDir, 'meta'))
  } catch (e) {
    if (ownStore) await store.close()
    throw e
  }

  try {
    return await build(o, transport, store, ownStore, pins, clock)
  } catch (e) {
    if (ownStore) await store.close().catch(() => undefined)
    throw e
  }
}

async function build(
  o: ResolvedStorageOptions,
  transport: Transport | undefined,
  store: BlobStore,
  ownStore: boolean,
  pins: PinSet,
  clock: Clock,
): Promise<StorageService> {
  const topology = storageTopology(o)
  const host = createServiceHost({
    id: o.id,
    version: o.version,
    topology,
    ...(transport === undefined ? {} : { transport }),
    ...(o.auth === undefined ? {} : { auth: o.auth }),
    drainDeadlineMs: o.drainDeadlineMs,
    limits: {
      jsonBodyLimit: o.http.jsonBodyLimit,
      decompressionRatio: o.http.decompressionRatio,
      maxDecompressedBytes: o.http.maxDecompressedBytes,
      readTimeoutMs: o.http.readTimeoutMs,
      writeTimeoutMs: o.http.writeTimeoutMs,
    },
    admission: {
      maxConcurrentPerIp: o.http.maxConcurrentPerIp,
      ...(o.http.maxRpsPerIp === undefined ? {} : { ratePerIp: { capacity: 2 * o.http.maxRpsPerIp, refillPerSec: o.http.maxRpsPerIp } }),
    },
    clock,
    ...(o.random === undefined ? {} : { random: o.random }),
    logger: o.logger ?? noopLogger,
  })
  const sink = host.metrics.sink
  const logger = host.logger
  const events = host.broadcast<StorageEvent>(CHANNELS.events)
  const guard = new ObjectGuard()
  const repair = new RepairState()
  const nodes = [o.nodeId, ...o.peers]
  const ranking = (address: Address): string[] => placement(address, nodes, nodes.length)
  const net: Transport = transport ?? unreachableTransport
  const peerToken = tokenFor(o.tokens, o.id, REPLICATE_SCOPE)
  const work = new WorkScheduler({
    name: CHANNELS.work,
    capacity: o.workQueue,
    readers: o.getConcurrency,
    writers: o.writers,
    writersPerPrincipal: o.writersPerPrincipal,
    metrics: sink,
    clock,
    signal: host.signal,
  })

  // The planner sleeps until its next tick or until a read finds corrupt data (urgent work).
  const wakeable = new WakeableSleep(clock)

  const replicator = new Replicator({
    store,
    // A local copy found corrupt while pushing it is repaired, not pushed again.
    markSuspect: (a) => {
      repair.markSuspect(a, clock.now())
      wakeable.wake()
    },
    transport: net,
    token: peerToken,
    timeoutMs: o.peerTimeoutMs,
    nodeId: o.nodeId,
    peers: o.peers,
    rf: o.rf,
    writeQuorum: o.writeQuorum,
    queueCapacity: o.replicationQueue,
    supervisor: host.supervisor,
    metrics: sink,
    logger,
  })
  const repairQueue = new BoundedQueue<RepairItem>({ name: CHANNELS.repair, capacity: o.repair.queue, metrics: sink })
  const planner = new RepairPlanner({
    nodeId: o.nodeId,
    peers: o.peers,
    rf: o.rf,
    store,
    transport: net,
    token: peerToken,
    probeTimeoutMs: o.repair.probeTimeoutMs,
    ranking,
    pinned: () => pins.list(),
    state: repair,
    queue: repairQueue,
    metrics: sink,
    logger,
    now: () => clock.now(),
  })
  const bucket = new TokenBucket({ capacity: o.repair.burst, refillPerSec: o.repair.bytesPerSec, clock })
  const workers = new RepairWorkers({
    nodeId: o.nodeId,
    store,
    transport: net,
    token: peerToken,
    timeoutMs: o.peerTimeoutMs,
    bucket,
    burst: o.repair.burst,
    queue: repairQueue,
    state: repair,
    guard,
    metrics: sink,
    logger,
    now: () => clock.now(),
    onDone: (item, ok) => events.publish({ type: ok ? 'repair:done' : 'repair:failed', address: item.address, action: item.action }),
  })
  const announcer =
    o.announce.target === undefined
      ? undefined
      : new Announcer({
          target: o.announce.target,
          nodeId: o.nodeId,
          endpoint: o.advertise,
          ttlSec: o.announce.ttlSec,
          intervalMs: o.announce.intervalMs,
          timeoutMs: o.announce.timeoutMs,
          queueCapacity: o.announce.queue,
          token: tokenFor(o.tokens, 'index', 'index:announce'),
          transport: net,
          store,
          clock,
          metrics: sink,
          logger,
        })

  // Write readiness: the disk probe and the put path report here; reads never depend on it.
  const disk: StorageContext['disk'] = { ok: true }
  let slowUntil = 0
  host.readiness.declare('disk', 'write', true)
  const setDisk = (ok: boolean, reason?: string): void => {
    disk.ok = ok
    if (ok) delete disk.reason
    else disk.reason = reason ?? 'not_writable'
    host.readiness.set('disk', ok, disk.reason)
  }
  const probeOnce = async (): Promise<void> => {
    try {
      const r = await store.probe()
      if (!r.writable) setDisk(false, r.reason ?? 'not_writable')
      else if (r.freeBytes !== undefined && r.freeBytes < o.writeReadiness.minFreeBytes) setDisk(false, 'low_space')
      else if (clock.now() < slowUntil) setDisk(false, 'slow')
      else setDisk(true)
    } catch (e) {
      logger.warn({ err: e }, 'disk probe failed')
      setDisk(false, 'probe_failed')
    }
  }

  const authorizeReplica = replicaAuthorizer({ serviceId: o.id, peerKeys: o.peerKeys, clock, own: (req, scope) => host.authenticate(req, scope) })
  const ctx: StorageContext = {
    o,
    store,
    pins,
    guard,
    repair,
    replicator,
    announcer,
    transport,
    authenticate: (req, scope) => host.authenticate(req, scope),
    authorizeReplica,
    authorizeRead: readAuthorizer((req, scope) => host.authenticate(req, scope), authorizeReplica),
    peerToken,
    work,
    signalFor: (rc) => AbortSignal.any([rc.signal, host.signal]),
    metrics: sink,
    clock,
    logger,
    events,
    disk,
    commitTime(ms) {
      sink.observe('put_commit_seconds', undefined, ms / 1000)
      if (ms > o.writeReadiness.slowPutMs) {
        slowUntil = clock.now() + 2 * o.writeReadiness.probeIntervalMs
        setDisk(false, 'slow')
      }
    },
    diskError(reason) {
      setDisk(false, reason)
    },
    plan: (dryRun, signal) => planner.plan(AbortSignal.any([signal, host.signal]), dryRun),
    lastPlan: () => planner.lastPlan,
    placement: ranking,
    kick: () => wakeable.wake(),
  }
  host.routes(storageRoutes(ctx))

  await probeOnce()
  if (o.peers.length > 0) replicator.start()
  for (let i = 0; i < o.repair.workers; i++) host.supervisor.spawn(TASKS.repairWorker, (signal) => workers.run(signal))
  if (o.repair.auto) {
    host.supervisor.spawn(TASKS.planner, async (signal) => {
      for (;;) {
        await wakeable.sleep(o.repair.intervalMs, signal)
        try {
          await planner.plan(signal)
        } catch (e) {
          if (signal.aborted) return
          logger.warn({ err: e }, 'repair planning failed')
        }
      }
    })
  }
  if (announcer !== undefined) host.supervisor.spawn(TASKS.announcer, (signal) => announcer.run(signal), { critical: false })
  host.supervisor.spawn(TASKS.probe, async (signal) => {
    for (;;) {
      await clock.sleep(o.writeReadiness.probeIntervalMs, signal)
      await probeOnce()
    }
  })

  host.onClose(async () => {
    repairQueue.close()
    replicator.close()
    announcer?.close()
    if (ownStore) await store.close()
  })

  const service: StorageService = {
    ...host.service,
    nodeId: o.nodeId,
    store,
    runRepair: (opts) => planner.plan(opts?.signal === undefined ? host.signal : AbortSignal.any([opts.signal, host.signal]), opts?.dryRun ?? false),
    repairIdle: () => repair.idle(),
    placement: (address) => ranking(address).slice(0, o.rf),
    subscribe: () => events.subscribe(),
  }
  return service
}

/** A sleep on the injected clock that {@link WakeableSleep.wake} can cut short. */
class WakeableSleep {
  readonly #clock: Clock
  #wake: (() => void) | undefined
  #pending = false

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /** Ends the current sleep now (or the next one at once, when nobody sleeps). */
  wake(): void {
    if (this.#wake !== undefined) this.#wake()
    else this.#pending = true
  }

  /** Sleeps `ms`, or less when woken. @throws the abort reason when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted()
    if (this.#pending) {
      this.#pending = false
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.#clock.clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        this.#wake = undefined
      }
      const onAbort = (): void => {
        done()
        reject(abortReason(signal))
      }
      const timer = this.#clock.setTimeout(() => {
        done()
        resolve()
      }, ms)
      timer.unref?.()
      this.#wake = () => {
        done()
        resolve()
      }
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }
}

/** Stand-in when no transport was given (then there are no peers and no index to reach). */
const unreachableTransport: Transport = {
  request(target) {
    return Promise.reject(new MalformedError(`no transport configured to reach ${target}`))
  },
  close: () => Promise.resolve(),
}

