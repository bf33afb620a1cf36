/**
 * `createStorageService(options, transport)`: wires the backend, routes, work pool, replication,
 * repair planner and workers, announcer and disk probe onto a core service host, per the seed's
 * topology (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { join } from 'node:path'
import { BoundedQueue, ConfigError, MalformedError, TokenBucket, WakeableSleep, createServiceHost, noopLogger, systemClock } from '@ron/core'
import type { Address, Clock, CorsOptions, RonService, SlowClientLimits, Subscription, Transport } from '@ron/core'
import { RequestGate, WorkScheduler } from './admission.js'
import { Announcer } from './announcer.js'
import { resolveOptions, storageConfigSchema, type ResolvedStorageOptions, type StorageConfig, type StorageServiceOptions } from './config.js'
import { registerStorageMetrics } from './metrics.js'
import { REPLICATE_SCOPE, readAuthorizer, replicaAuthorizer, tokenFor } from './peer-auth.js'
import { ObjectGuard } from './object-guard.js'
import { PinSet } from './pins.js'
import { RepairPlanner } from './repair-planner.js'
import { RepairState, type RepairItem, type RepairPlan } from './repair-state.js'
import { RepairWorkers } from './repair-worker.js'
import { placement } from './placement.js'
import { Replicator } from './replication.js'
import type { StorageEvent } from './events.js'
import { storageRoutes, type StorageContext } from './routes/index.js'
import { createFsStore, createMemoryStore } from './store/index.js'
import type { BlobStore } from './store/types.js'
import { CHANNELS, TASKS, storageTopology } from './topology.js'
import { packageVersion } from './version.js'

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
  /** Objects, bytes and free space, as last sampled by the disk probe (also in `GET /status`). */
  usage(): StorageUsage
}

/** What a node stores, as last sampled by the disk-probe task. */
export interface StorageUsage {
  /** Objects stored on this node. */
  objects: number
  /** Bytes of those objects. */
  bytes: number
  /** Free bytes of the backend; `undefined` when the backend cannot tell (memory). */
  freeBytes: number | undefined
  /** When objects and bytes were counted (clock ms); `undefined` before the first count. */
  sampledAt: number | undefined
}

/** Objects and bytes are counted at most this often (the walk reads every object's metadata). */
const USAGE_EVERY_MS = 60_000

/** Options that cannot change live: `reload()` refuses a change to them. */
const IMMUTABLE = [
  'id',
  'version',
  'dataDir',
  'chunkSize',
  'nodeId',
  'advertise',
  'placementName',
  'replicationQueue',
  'repair.workers',
  'repair.queue',
  'repair.auto',
  'announce',
  'http.readTimeoutMs',
  'http.writeTimeoutMs',
  'http.jsonBodyLimit',
  'http.decompressionRatio',
  'http.maxDecompressedBytes',
  'http.maxConcurrentPerIp',
  'http.maxRpsPerIp',
  'http.idleTimeoutMs',
  'drainDeadlineMs',
] as const

/** Runtime objects of the options (never part of the reloadable, frozen config snapshot). */
const RUNTIME_KEYS = ['backend', 'auth', 'peerKeys', 'tokens', 'clock', 'random', 'logger'] as const

function configPart(options: StorageServiceOptions): StorageConfig {
  const out: Record<string, unknown> = { ...options }
  for (const k of RUNTIME_KEYS) delete out[k]
  return out
}

function runtimePart(options: StorageServiceOptions): StorageServiceOptions {
  const out: Record<string, unknown> = {}
  for (const k of RUNTIME_KEYS) if (options[k] !== undefined) out[k] = options[k]
  return out
}

type StorageConfigOutput = ReturnType<typeof storageConfigSchema.parse>

/** The slow-client rules (SPEC 4) core's host enforces on every body, uploads included. */
function slowClientLimits(o: ResolvedStorageOptions): SlowClientLimits {
  const h = o.http
  return { minBytesPerSec: h.minBytesPerSec, rateWindowMs: h.rateWindowMs, requestTimeoutMs: h.requestTimeoutMs, maxBodiesPerPrincipal: h.maxBodiesPerPrincipal }
}

function corsOf(c: NonNullable<ResolvedStorageOptions['cors']>): CorsOptions {
  return { ...(c.readOrigins === undefined ? {} : { readOrigins: c.readOrigins }), ...(c.writeOrigins === undefined ? {} : { writeOrigins: c.writeOrigins }) }
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
    return await build(o, options, transport, store, ownStore, pins, clock)
  } catch (e) {
    if (ownStore) await store.close().catch(() => undefined)
    throw e
  }
}

async function build(
  initial: ResolvedStorageOptions,
  options: StorageServiceOptions,
  transport: Transport | undefined,
  store: BlobStore,
  ownStore: boolean,
  pins: PinSet,
  clock: Clock,
): Promise<StorageService> {
  // The current options: swapped whole by reload(); components read it through getters.
  let o = initial
  const topology = storageTopology(o)
  const host = createServiceHost<StorageConfigOutput>({
    id: o.id,
    version: o.version ?? packageVersion(),
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
      ...slowClientLimits(o),
    },
    admission: {
      maxConcurrentPerIp: o.http.maxConcurrentPerIp,
      ...(o.http.maxRpsPerIp === undefined ? {} : { ratePerIp: { capacity: 2 * o.http.maxRpsPerIp, refillPerSec: o.http.maxRpsPerIp } }),
    },
    ...(o.cors === undefined ? {} : { cors: corsOf(o.cors) }),
    // The JSON-safe part is the reloadable config (runtime objects never go into a frozen snapshot).
    config: { schema: storageConfigSchema, input: configPart(options), immutable: IMMUTABLE },
    clock,
    ...(o.random === undefined ? {} : { random: o.random }),
    logger: o.logger ?? noopLogger,
  })
  registerStorageMetrics(host.metrics, topology, o.peers)
  const sink = host.metrics.sink
  const logger = host.logger
  const events = host.broadcast<StorageEvent>(CHANNELS.events)
  const guard = new ObjectGuard()
  const repair = new RepairState()
  // Placement names a node by how its peers list it (`placementName`: its advertised storage URL or
  // transport name by default, its node id under ron-node), the same string on every node, so all
  // nodes compute the same placement.
  const ranking = (address: Address): string[] => placement(address, [o.placementName, ...o.peers], o.peers.length + 1)
  const net: Transport = transport ?? unreachableTransport
  const peerToken = tokenFor(o.tokens, o.id, REPLICATE_SCOPE)
  const gate = new RequestGate({ maxInflight: o.http.maxInflight, maxRps: o.http.maxRps }, clock)
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
    nodeId: o.placementName,
    get peers() {
      return o.peers
    },
    get rf() {
      return o.rf
    },
    get writeQuorum() {
      return o.writeQuorum
    },
    queueCapacity: o.replicationQueue,
    supervisor: host.supervisor,
    metrics: sink,
    logger,
  })
  const repairQueue = new BoundedQueue<RepairItem>({ name: CHANNELS.repair, capacity: o.repair.queue, metrics: sink })
  const planner = new RepairPlanner({
    nodeId: o.placementName,
    get peers() {
      return o.peers
    },
    get rf() {
      return o.rf
    },
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
    sleep: (ms, signal) => clock.sleep(ms, signal),
  })
  let bucket = new TokenBucket({ capacity: o.repair.burst, refillPerSec: o.repair.bytesPerSec, clock })
  let rate = o.repair.bytesPerSec
  const workers = new RepairWorkers({
    nodeId: o.placementName,
    store,
    transport: net,
    token: peerToken,
    timeoutMs: o.peerTimeoutMs,
    get bucket() {
      return bucket
    },
    get burst() {
      return o.repair.burst
    },
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
  let writesClosed = false
  host.readiness.declare('disk', 'write', true)
  // Per path (SPEC 3.3a): uploads shed first, reads stay up.
  host.readiness.setPath('get', true)
  host.readiness.setPath('put', true)
  const setDisk = (ok: boolean, reason?: string): void => {
    disk.ok = ok
    if (ok) delete disk.reason
    else disk.reason = reason ?? 'not_writable'
    host.readiness.set('disk', ok, disk.reason)
    host.readiness.setPath('put', ok, 'disk')
  }
  // Usage (objects, bytes, free space) is sampled by the probe task, a full count at most every
  // USAGE_EVERY_MS, so /status never walks the store.
  let usage: StorageUsage = { objects: 0, bytes: 0, freeBytes: undefined, sampledAt: undefined }
  let usageAt = -Infinity
  const sampleUsage = async (freeBytes: number | undefined, signal: AbortSignal): Promise<void> => {
    if (clock.now() - usageAt < USAGE_EVERY_MS) {
      usage = { ...usage, freeBytes }
      return
    }
    usageAt = clock.now()
    let objects = 0
    let bytes = 0
    for await (const a of store.list(signal)) {
      const st = await store.stat(a)
      if (st === undefined) continue
      objects++
      bytes += st.size
    }
    usage = { objects, bytes, freeBytes, sampledAt: clock.now() }
    sink.set('storage_objects', undefined, objects)
    sink.set('storage_bytes', undefined, bytes)
    if (freeBytes !== undefined) sink.set('storage_free_bytes', undefined, freeBytes)
  }
  const probeOnce = async (signal: AbortSignal = host.signal): Promise<void> => {
    try {
      const r = await store.probe()
      await sampleUsage(r.freeBytes, signal).catch((e: unknown) => logger.debug({ err: e }, 'usage sample failed'))
      if (!r.writable) setDisk(false, r.reason ?? 'not_writable')
      else if (r.freeBytes !== undefined && r.freeBytes < o.writeReadiness.minFreeBytes) setDisk(false, 'low_space')
      else if (clock.now() < slowUntil) setDisk(false, 'slow')
      else if (writesClosed) setDisk(false, 'draining')
      else setDisk(true)
    } catch (e) {
      logger.warn({ err: e }, 'disk probe failed')
      setDisk(false, 'probe_failed')
    }
  }

  const authorizeReplica = replicaAuthorizer({ serviceId: o.id, peerKeys: o.peerKeys, clock, own: (req, scope) => host.authenticate(req, scope) })
  const ctx: StorageContext = {
    o,
    usage: () => usage,
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
    gate,
    signalFor: (rc) => AbortSignal.any([rc.signal, host.signal]),
    shutdown: host.signal,
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
  let replicating = o.peers.length > 0
  if (replicating) replicator.start()

  // reload(): the host validated the JSON part and swapped its snapshot; resolve it with the
  // runtime objects and apply what can change live. Throwing rolls the whole reload back.
  host.onReload(() => {
    const next = resolveOptions({ ...runtimePart(options), ...(host.config.get() as StorageConfig) })
    o = next
    ctx.o = next
    work.configure({ capacity: next.workQueue, readers: next.getConcurrency, writers: next.writers, writersPerPrincipal: next.writersPerPrincipal })
    gate.configure({ maxInflight: next.http.maxInflight, maxRps: next.http.maxRps })
    host.setSlowClientLimits(slowClientLimits(next))
    host.setCors(next.cors === undefined ? undefined : corsOf(next.cors))
    if (bucket.capacity !== next.repair.burst || rate !== next.repair.bytesPerSec) {
      // Pacing changes for the next chunk; a take in progress finishes on the old bucket.
      bucket = new TokenBucket({ capacity: next.repair.burst, refillPerSec: next.repair.bytesPerSec, clock })
      rate = next.repair.bytesPerSec
    }
    if (!replicating && next.peers.length > 0) {
      replicating = true
      replicator.start()
    }
  })
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
      await probeOnce(signal)
    }
  })

  // SPEC 3.3: writes turn unready first, with a visible window before reads follow.
  const close = async (): Promise<void> => {
    if (!host.closing && !writesClosed) {
      writesClosed = true
      setDisk(false, 'draining')
      if (o.shutdown.writesFirstMs > 0) await clock.sleep(o.shutdown.writesFirstMs)
    }
    await host.service.close()
  }
  let closing: Promise<void> | undefined

  host.onClose(async () => {
    repairQueue.close()
    replicator.close()
    announcer?.close()
    if (ownStore) await store.close()
  })

  const service: StorageService = {
    ...host.service,
    close: () => (closing ??= close()),
    [Symbol.asyncDispose]: () => (closing ??= close()),
    usage: () => usage,
    nodeId: o.nodeId,
    store,
    runRepair: (opts) => planner.plan(opts?.signal === undefined ? host.signal : AbortSignal.any([opts.signal, host.signal]), opts?.dryRun ?? false),
    repairIdle: () => repair.idle(),
    placement: (address) => ranking(address).slice(0, o.rf),
    subscribe: () => events.subscribe(),
  }
  return service
}


/** Stand-in when no transport was given (then there are no peers and no index to reach). */
const unreachableTransport: Transport = {
  request(target) {
    return Promise.reject(new MalformedError(`no transport configured to reach ${target}`))
  },
  close: () => Promise.resolve(),
}

