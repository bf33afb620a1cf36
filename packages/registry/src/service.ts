/**
 * `createRegistryService(config, transport?)`: opens (or creates) the log, then wires the
 * Committer, Bus Publisher, Checkpointor, Retention, Deep Verifier, disk probe and routes onto a
 * core service host, per the seed's topology (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { randomBytes, type KeyObject } from 'node:crypto'
import { join } from 'node:path'
import { BoundedQueue, ConfigError, HttpTransport, NotReadyError, SseHub, canonicalJson, createServiceHost, noopLogger, systemClock, systemRandom } from '@ron/core'
import type { RonService, ServiceHost, Subscription, Transport } from '@ron/core'
import { generateLogKey, noteSigner, parseVerifierKey } from './checkpoint.js'
import { cosigner } from './cosignature.js'
import { Checkpointor, type RetentionCommand } from './checkpointor.js'
import { Committer, type RegistryUpdated } from './committer.js'
import { IMMUTABLE_KEYS, registryConfigSchema, resolveConfig, splitConfig, type RegistryConfig, type RegistryServiceConfig } from './config.js'
import { DeepVerifier, type VerifyReport } from './deep-verifier.js'
import type { Genesis, Head } from './entry.js'
import { LOG_KEY_FILE, WITNESS_KEY_FILE, loadOrCreateLogKey } from './keys.js'
import { RegistryLog } from './log.js'
import { Notary } from './notary.js'
import { Publisher, UPDATED_EVENT } from './publisher.js'
import { Retention } from './retention.js'
import { registryRoutes } from './routes/index.js'
import { witnessRoutes } from './routes/witness.js'
import { faultReason } from './write-fault.js'
import { createMemoryStore, createSegmentStore } from './store/index.js'
import type { SegmentInfo, StoredCheckpoint } from './store/types.js'
import { CHANNELS, TASKS, registryTopology } from './topology.js'
import { WITNESS_RESULTS, Witness } from './witness.js'
import { WitnessPusher, type WitnessStatus } from './witness-pusher.js'
import { packageVersion } from './version.js'

/** The registry service: a {@link RonService} plus registry handles. */
export interface RegistryService extends RonService {
  /** The log (HEAD, tree, reads). Only the service's Committer appends to it. */
  readonly log: RegistryLog
  /** The log's origin line. */
  readonly origin: string
  /** The log key's C2SP verifier key (`name+id+key`): Go's `note` verifier key form. */
  readonly logKey: string
  /** This node's witness verifier key (`name+id+base64(0x04 || key)`), for logs that list it as a witness. */
  readonly witnessKey: string
  /** Current HEAD. */
  head(): Head
  /** Signs a checkpoint now (unless the latest one already covers HEAD) and asks Retention to run. */
  checkpoint(): Promise<StoredCheckpoint>
  /** Runs Retention now. */
  prune(): Promise<SegmentInfo[]>
  /** Runs one Deep Verifier pass now. */
  verify(): Promise<VerifyReport>
  /** Subscribes to `RegistryUpdated` events (the `committed` broadcast, drop-oldest, 1024). */
  subscribe(): Subscription<RegistryUpdated>
  /** The latest signed checkpoint with the witness cosignatures collected for it (what `GET /registry/checkpoint` serves). */
  signedCheckpoint(): string
  /** The configured witnesses and what this log knows of each. */
  witnesses(): WitnessStatus[]
}

/** Registered at startup so a fresh `/metrics` shows them at zero. */
function registerMetrics(host: ServiceHost<RegistryConfig>): void {
  const m = host.metrics
  m.counter('commit_cas_fail_total', 'Commits refused because HEAD moved since the proposal (409 ChainMismatch).')
  m.counter('io_timeouts_total', 'Operations past their deadline.', ['op']).labels({ op: 'commit' }).inc(0)
  m.counter('backoff_retries_total', 'Retries with backoff.', ['op'])
  m.counter('registry_reload_success_total', 'Config reloads applied.', ['source'])
  m.counter('registry_reload_fail_total', 'Config reloads refused or rolled back.', ['reason'])
  m.counter('registry_updates_total', 'Accepted and rejected mutations (audit events), by result.', ['result'])
  m.counter('registry_recoveries_total', 'Repairs made by recovery at startup, by kind.', ['kind'])
  m.counter('registry_approvals_total', 'Approvals by result.', ['result'])
  m.counter('registry_proposals_expired_total', 'Proposals removed at expiry without a commit.')
  m.counter('registry_checkpoints_total', 'Checkpoints stored durably (every commit is checkpointed in memory before it is answered).')
  m.counter('registry_witness_requests_total', 'add-checkpoint calls to this log\'s witnesses, by witness and result.', ['witness', 'result'])
  const witnessed = m.counter('registry_witness_checkpoints_total', 'add-checkpoint requests this node answered as a witness, by result.', ['result'])
  for (const result of WITNESS_RESULTS) witnessed.labels({ result }).inc(0)
  m.counter('registry_pruned_segments_total', 'Segments removed by retention.')
  m.counter('registry_integrity_failures_total', 'Mismatches found by the deep verifier.')
  m.counter('registry_events_published_total', 'RegistryUpdated events published on /registry/stream.')
  m.gauge('registry_head_version', 'Version of HEAD.')
  m.gauge('registry_checkpoint_age_seconds', 'Age of the latest checkpoint.')
  m.gauge('registry_log_segments', 'Segments held.')
  m.gauge('registry_storage_bytes', 'Bytes held by the log (segments, leaf hashes, checkpoints).')
  m.histogram('audit_chain_verify_seconds', 'Duration of a deep verification pass.', [], [0.001, 0.01, 0.1, 1, 10, 60])
  m.histogram('registry_commit_seconds', 'Duration of the append + fsync of a commit.', [], [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5])
  for (const kind of ['torn_tail', 'empty_segment', 'leaves_rebuilt', 'leaves_truncated', 'torn_checkpoint', 'head_rolled_forward']) {
    m.counter('registry_recoveries_total', '', ['kind']).labels({ kind }).inc(0)
  }
  const depth = m.gauge('queue_depth', 'Items waiting in a bounded queue.', ['queue'])
  for (const q of [CHANNELS.proposals, CHANNELS.approvals, CHANNELS.retention]) depth.labels({ queue: q }).set(0)
  // The labels the Committer's Busy errors carry (endpoint = the command), so a 429 lands on a line listed at zero.
  const busy = m.counter('busy_rejections_total', 'Requests rejected with Busy because a queue was full.', ['endpoint', 'queue'])
  for (const [endpoint, queue] of [
    ['propose', CHANNELS.proposals],
    ['commit', CHANNELS.proposals],
    ['approve', CHANNELS.approvals],
    ['get', CHANNELS.approvals],
  ] as const) {
    busy.labels({ endpoint, queue }).inc(0)
  }
  const lagged = m.counter('bus_lagged_total', 'Broadcast events a slow subscriber missed.', ['topic'])
  for (const topic of [CHANNELS.committed, CHANNELS.stream]) lagged.labels({ topic }).inc(0)
}

/**
 * Creates a registry service. With `dataDir` the log lives in segment files there (and the log
 * key in `<dataDir>/registry-log.key`); without it, in memory. A new log needs `signers` (the
 * genesis M-of-N set); an existing one keeps its genesis, and a `signers` or `origin` that
 * differs from it is refused.
 *
 * @throws {@link ConfigError} naming the field for invalid config, a missing genesis `signers`,
 *   or a config that contradicts the existing log
 * @throws {@link IntegrityFailedError} when the log on disk is corrupt beyond a torn tail
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createRegistryService, initRegistrySigner } from '@ron/registry'
 *
 * const { signers } = await initRegistrySigner('./data/registry', 'node-a')
 * const registry = await createRegistryService({ dataDir: './data/registry', signers, auth: { keys: jwks } })
 * createServer(registry.handle).listen(7702)
 * ```
 */
export async function createRegistryService(config: RegistryServiceConfig = {}, transport?: Transport): Promise<RegistryService> {
  const { data, runtime } = splitConfig(config)
  const c = resolveConfig(data)
  const clock = runtime.clock ?? systemClock
  let logKey: KeyObject
  if (runtime.logKey !== undefined) logKey = runtime.logKey
  else if (c.logKeyFile !== undefined || c.dataDir !== undefined) logKey = await loadOrCreateLogKey(c.logKeyFile ?? join(c.dataDir!, LOG_KEY_FILE))
  else logKey = generateLogKey()
  let witnessKey: KeyObject
  if (runtime.witnessKey !== undefined) witnessKey = runtime.witnessKey
  else if (c.witnessKeyFile !== undefined || c.dataDir !== undefined) witnessKey = await loadOrCreateLogKey(c.witnessKeyFile ?? join(c.dataDir!, WITNESS_KEY_FILE))
  else witnessKey = generateLogKey()

  const store = runtime.store ?? (c.dataDir !== undefined ? createSegmentStore({ dir: c.dataDir, segmentEntries: c.segmentEntries, segmentBytes: c.segmentBytes }) : createMemoryStore({ segmentEntries: c.segmentEntries }))
  const origin = c.origin ?? `ron.registry/${randomBytes(4).toString('hex')}`
  const signer = noteSigner(origin, logKey)
  const genesis: Genesis | undefined =
    c.signers === undefined ? undefined : { origin, treeHash: c.treeHash, signers: c.signers, logKey: signer.verifierKey, createdAt: clock.now(), leafFormat: 'bundle' }
  let log: RegistryLog
  try {
    log = await RegistryLog.open(store, genesis)
    checkAgainstGenesis(c, data.treeHash !== undefined, log.genesis, logKey)
    checkWitnessKeys(c, log.genesis, logKey, witnessKey)
  } catch (e) {
    await store.close().catch(() => undefined)
    throw e
  }
  try {
    return build(c, runtime, transport, log, noteSigner(log.origin, logKey), witnessKey)
  } catch (e) {
    await store.close().catch(() => undefined)
    throw e
  }
}

function checkAgainstGenesis(c: RegistryConfig, explicitTreeHash: boolean, g: Genesis, logKey: KeyObject): void {
  if (c.origin !== undefined && c.origin !== g.origin) {
    throw new ConfigError(`origin: the log's origin is '${g.origin}', not '${c.origin}'`, { details: { path: 'origin' } })
  }
  // The default applies to new logs only; asking an existing log for another hash is a mistake.
  if (explicitTreeHash && c.treeHash !== g.treeHash) {
    throw new ConfigError(`treeHash: the log was created with ${g.treeHash}, fixed at genesis`, { details: { path: 'treeHash' } })
  }
  if (c.signers !== undefined && canonicalJson(c.signers) !== canonicalJson(g.signers)) {
    throw new ConfigError('signers: differs from the genesis signer set of the existing log (change signers by a signer-set proposal)', { details: { path: 'signers' } })
  }
  if (noteSigner(g.origin, logKey).verifierKey !== g.logKey) {
    throw new ConfigError('logKeyFile: this is not the key the log was created with', { details: { path: 'logKeyFile' } })
  }
}

/**
 * A witness must not hold the key of a log it witnesses (it would vouch for itself): its own log
 * is refused among the logs it witnesses, and its witness key must not be the log key.
 * @throws {@link ConfigError}
 */
function checkWitnessKeys(c: RegistryConfig, g: Genesis, logKey: KeyObject, witnessKey: KeyObject): void {
  const own = parseVerifierKey(g.logKey)
  if (Buffer.compare(Buffer.from(noteSigner(g.origin, witnessKey).publicKey), Buffer.from(noteSigner(g.origin, logKey).publicKey)) === 0) {
    throw new ConfigError('witnessKeyFile: the witness key must not be the log key', { details: { path: 'witnessKeyFile' } })
  }
  c.witness.logs.forEach((l, i) => {
    const k = parseVerifierKey(l.key)
    if (l.origin === g.origin || k.publicKey.equals(own.publicKey)) {
      throw new ConfigError(`witness.logs.${i}: this node holds that log's key; a witness must not witness its own log`, { details: { path: `witness.logs.${i}` } })
    }
  })
}

function build(
  c: RegistryConfig,
  runtime: ReturnType<typeof splitConfig>['runtime'],
  transport: Transport | undefined,
  log: RegistryLog,
  signer: ReturnType<typeof noteSigner>,
  witnessPrivateKey: KeyObject,
): RegistryService {
  const clock = runtime.clock ?? systemClock
  const host = createServiceHost<RegistryConfig>({
    id: c.id,
    version: c.version ?? packageVersion(),
    topology: registryTopology(c),
    ...(transport === undefined ? {} : { transport }),
    ...(runtime.auth === undefined ? {} : { auth: runtime.auth as NonNullable<Parameters<typeof createServiceHost>[0]['auth']> }),
    drainDeadlineMs: c.drainDeadlineMs,
    ...(runtime.limits === undefined ? {} : { limits: runtime.limits }),
    ...(runtime.cors === undefined ? {} : { cors: runtime.cors }),
    clock,
    ...(runtime.random === undefined ? {} : { random: runtime.random }),
    logger: runtime.logger ?? noopLogger,
    config: { schema: registryConfigSchema, input: { ...c }, immutable: IMMUTABLE_KEYS },
  })
  const cfg = (): RegistryConfig => host.config.get()
  const sink = host.metrics.sink
  const logger = host.logger
  registerMetrics(host)
  for (const [kind, n] of Object.entries(log.recoveries)) {
    sink.inc('registry_recoveries_total', { kind }, n)
    logger.warn({ kind, count: n }, 'log recovery')
  }
  sink.set('registry_head_version', undefined, log.head().version)

  // Readiness: writes shed first (disk, integrity); reads depend on neither.
  host.readiness.declare('disk', 'write', true)
  host.readiness.declare('integrity', 'write', true)
  host.readiness.setPath('commit', true)
  host.readiness.setPath('read', true)
  // `reason`: slow, or a disk fault (disk_full, io_error, read_only) — what `missing` and a
  // shed write's `details.reason` say.
  const disk: { ok: boolean; slowUntil: number; reason: string | undefined } = { ok: true, slowUntil: 0, reason: undefined }
  const setDisk = (ok: boolean, reason?: string): void => {
    disk.ok = ok
    disk.reason = ok ? undefined : (reason ?? 'io_error')
    host.readiness.set('disk', ok, disk.reason)
    host.readiness.setPath('commit', ok && integrity.ok, ok ? 'integrity' : disk.reason)
  }
  const onFault = (reason: string, error: unknown): void => {
    if (disk.ok || disk.reason !== reason) logger.error({ err: error, reason }, 'registry log write failed: writes are unready until the disk probe passes')
    setDisk(false, reason)
  }
  const integrity = { ok: true }
  const setIntegrity = (ok: boolean): void => {
    integrity.ok = ok
    host.readiness.set('integrity', ok, ok ? undefined : 'log_mismatch')
    host.readiness.setPath('commit', ok && disk.ok, ok ? 'disk' : 'integrity')
  }

  const committed = host.broadcast<RegistryUpdated>(CHANNELS.committed)
  // Every commit is checkpointed before it is answered (see notary.ts).
  const notary = new Notary({ log, signer, clock, logger, ...(log.store.shared === undefined ? {} : { lease: log.store.shared.signer }) })
  const committer = new Committer({
    log,
    committed,
    capacity: { proposals: c.queues.proposals, approvals: c.queues.approvals },
    settings: () => ({ proposalTtlMs: cfg().proposalTtlMs, maxProposals: cfg().maxProposals, slowCommitMs: cfg().writeReadiness.slowCommitMs }),
    clock,
    metrics: sink,
    logger,
    onAppend(ms, error) {
      sink.observe('registry_commit_seconds', undefined, ms / 1000)
      if (error !== undefined) {
        const reason = faultReason(error)
        if (reason !== undefined) onFault(reason, error)
        else logger.error({ err: error }, 'commit append failed')
      } else if (ms > cfg().writeReadiness.slowCommitMs) {
        disk.slowUntil = clock.now() + 2 * cfg().writeReadiness.probeIntervalMs
        setDisk(false, 'slow')
      }
    },
    onCommitted: () => notary.advance(),
    // A shared log's entry that does not extend HEAD: this node stops writing until a restart.
    onFollowError: () => setIntegrity(false),
  })
  const hub = new SseHub<RegistryUpdated>({
    name: CHANNELS.stream,
    bufferPerClient: c.sse.bufferPerClient,
    maxClients: c.sse.maxClients,
    heartbeatMs: c.sse.heartbeatMs,
    onLag: 'latest',
    signal: host.drainSignal,
    clock,
    metrics: sink,
    replay: (lastEventId) => replayAfter(log, lastEventId, c.queues.committed),
  })
  const publisher = new Publisher({ committed, hub, log, metrics: sink, logger })
  const retentionQueue = new BoundedQueue<RetentionCommand>({ name: CHANNELS.retention, capacity: c.queues.retention, metrics: sink })
  const checkpointor = new Checkpointor({ log, notary, retention: retentionQueue, intervalMs: () => cfg().checkpointIntervalMs, clock, metrics: sink, logger, onFault })
  const retention = new Retention({ log, queue: retentionQueue, limits: () => cfg().retention, clock, metrics: sink, logger, onFault })
  const verifier = new DeepVerifier({
    log,
    committed,
    settings: () => cfg().deepVerify,
    clock,
    metrics: sink,
    logger,
    onResult: (ok) => setIntegrity(ok),
  })
  checkpointor.gauge()
  retention.gauge()

  // Witnesses: this log's (checkpoints pushed to them), and this node as a witness of others.
  const witnessTransport = transport ?? new HttpTransport()
  const ownTransport = transport === undefined ? witnessTransport : undefined
  const pusher = new WitnessPusher({
    log,
    notary,
    transport: witnessTransport,
    witnesses: () => cfg().witnesses,
    intervalMs: () => cfg().checkpointIntervalMs,
    timeoutMs: () => cfg().witnessTimeoutMs,
    clock,
    random: runtime.random ?? systemRandom,
    metrics: sink,
    logger,
  })
  pusher.gauge()
  let witnessSigner = cosigner(c.witness.name ?? `${log.origin}/witness`, witnessPrivateKey)
  const witness = new Witness({
    cosigner: () => {
      const name = cfg().witness.name ?? `${log.origin}/witness`
      if (witnessSigner.name !== name) witnessSigner = cosigner(name, witnessPrivateKey)
      return witnessSigner
    },
    logs: () => cfg().witness.logs,
    stateFile: c.dataDir === undefined ? undefined : join(c.dataDir, 'witness-state.json'),
    clock,
    metrics: sink,
    logger,
  })

  host.routes(
    registryRoutes({
      log,
      committer,
      checkpointor,
      notary,
      get witnessKey() {
        return witness.cosignerKey()
      },
      hub,
      config: cfg,
      clock,
      metrics: sink,
      authenticate: (req, scope) => host.authenticate(req, scope),
      writeGate() {
        if (!disk.ok || !integrity.ok) {
          const reason = disk.ok ? 'integrity' : (disk.reason ?? 'io_error')
          throw new NotReadyError(`registry writes are unavailable: ${reason}`, { details: { reason }, retryAfterMs: 1000 })
        }
      },
    }),
  )
  host.routes(witnessRoutes(witness))

  host.supervisor.spawn(TASKS.committer, (signal) => committer.run(signal))
  host.supervisor.spawn(TASKS.witnesses, (signal) => pusher.run(signal), { critical: false })
  host.supervisor.spawn(TASKS.publisher, (signal) => publisher.run(signal))
  host.supervisor.spawn(TASKS.checkpointor, (signal) => checkpointor.run(signal))
  host.supervisor.spawn(TASKS.retention, (signal) => retention.run(signal), { critical: false })
  host.supervisor.spawn(TASKS.verifier, (signal) => verifier.run(signal), { critical: false })
  host.supervisor.spawn(TASKS.probe, async (signal) => {
    for (;;) {
      await clock.sleep(cfg().writeReadiness.probeIntervalMs, signal)
      checkpointor.gauge()
      if (disk.ok || clock.now() < disk.slowUntil) continue
      try {
        // Also undoes what a failed write left behind, before writes turn ready again.
        await log.store.probe()
        setDisk(true)
      } catch (e) {
        logger.warn({ err: e }, 'disk probe failed')
        const reason = faultReason(e)
        if (reason !== undefined && reason !== disk.reason) setDisk(false, reason)
      }
    }
  })

  host.onReload(() => {
    checkWitnessKeys(cfg(), log.genesis, signer.privateKey, witnessPrivateKey)
    sink.inc('registry_reload_success_total', { source: 'reload' })
    checkpointor.wake()
    pusher.reconfigure()
  })
  host.onClose(async () => {
    committer.close()
    notary.close()
    publisher.close()
    hub.close()
    retentionQueue.close()
    await ownTransport?.close()
    await log.store.close()
  })

  // Reloads beyond the 16 that may wait coalesce into one (latest value per key wins).
  const reload = coalescingReload(host.service.reload.bind(host.service), () => sink.inc('registry_reload_fail_total', { reason: 'invalid' }))

  return {
    ...host.service,
    reload,
    log,
    origin: log.origin,
    logKey: log.genesis.logKey,
    get witnessKey() {
      return witness.cosignerKey()
    },
    head: () => log.head(),
    checkpoint: () => checkpointor.checkpointNow(),
    prune: () => retention.pruneNow(),
    verify: () => verifier.verifyNow(),
    subscribe: () => committed.subscribe(),
    signedCheckpoint: () => notary.served(),
    witnesses: () => pusher.status(),
  }
}

/** Events after `lastEventId` (a version), read from the log; a long gap sends only HEAD. */
async function* replayAfter(log: RegistryLog, lastEventId: string, max: number): AsyncGenerator<{ id: string; event: string; data: RegistryUpdated }> {
  if (!/^[0-9]{1,15}$/.test(lastEventId)) return
  const head = log.head().version
  let from = Number(lastEventId) + 1
  if (head - from + 1 > max) from = head
  from = Math.max(from, log.oldest())
  for (let v = from; v <= head; v++) {
    const r = await log.read(v)
    if (r === undefined || !('entry' in r)) continue
    yield { id: String(v), event: UPDATED_EVENT, data: { type: 'RegistryUpdated', version: v, b3: r.entry.payloadB3, hash: r.hash, committedAt: r.entry.committedAt } }
  }
}

/**
 * Wraps `reload` so that at most 15 reloads wait in core's queue (of 16); later partials merge
 * into one pending reload (the latest value of each key wins), started when a slot frees. When
 * the merged reload is refused, its parts are applied one by one in order, so one invalid partial
 * fails only its own caller and the latest valid values still win.
 */
function coalescingReload(inner: (partial: unknown) => Promise<void>, onFail: () => void): (partial: unknown) => Promise<void> {
  const SLOTS = 15
  let waiting = 0
  interface Part {
    partial: unknown
    resolve: () => void
    reject: (e: unknown) => void
  }
  let merged: { partial: Record<string, unknown>; parts: Part[] } | undefined
  const next = (): void => {
    const m = merged
    if (m !== undefined && waiting < SLOTS) {
      merged = undefined
      void runMerged(m)
    }
  }
  const run = (partial: unknown): Promise<void> => {
    waiting++
    return inner(partial)
      .catch((e: unknown) => {
        onFail()
        throw e
      })
      .finally(() => {
        waiting--
        next()
      })
  }
  const runMerged = async (m: { partial: Record<string, unknown>; parts: Part[] }): Promise<void> => {
    waiting++
    try {
      try {
        await inner(m.partial)
        for (const p of m.parts) p.resolve()
        return
      } catch (e) {
        if (m.parts.length === 1) {
          onFail()
          m.parts[0]!.reject(e)
          return
        }
      }
      for (const p of m.parts) {
        try {
          await inner(p.partial)
          p.resolve()
        } catch (e) {
          onFail()
          p.reject(e)
        }
      }
    } finally {
      waiting--
      next()
    }
  }
  return (partial) => {
    if (waiting < SLOTS || typeof partial !== 'object' || partial === null) return run(partial)
    const copy = structuredClone(partial as Record<string, unknown>)
    merged ??= { partial: {}, parts: [] }
    deepAssign(merged.partial, structuredClone(copy))
    const m = merged
    return new Promise<void>((resolve, reject) => m.parts.push({ partial: copy, resolve, reject }))
  }
}

function deepAssign(target: Record<string, unknown>, src: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(src)) {
    const t = target[k]
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && typeof t === 'object' && t !== null && !Array.isArray(t)) deepAssign(t as Record<string, unknown>, v as Record<string, unknown>)
    else target[k] = v
  }
}
