/**
 * `createRegistryService(config, transport, runtime)`: the registry on the service contract
 * (docs/service-contract.md). Opens (or creates) the log, then wires the parts (`parts.ts`) and
 * routes onto a core service host, which owns the lifecycle, limits, CORS, readiness and metrics
 * registration, per the seed's topology (see `topology.ts` and `docs/CONCURRENCY.md`).
 *
 * @module
 */

import { randomBytes, type KeyObject } from 'node:crypto'
import { join } from 'node:path'
import { ConfigError, canonicalJson, createServiceHost, splitRuntime, systemClock } from '@ron/core'
import type { RonService, Subscription, Transport } from '@ron/core'
import { generateLogKey, noteSigner, parseVerifierKey } from './checkpoint.js'
import type { RegistryUpdated } from './committer.js'
import { REGISTRY_IMMUTABLE_KEYS, REGISTRY_RUNTIME_KEYS, registryConfigSchema, resolveConfig, type RegistryConfig, type RegistryRuntime, type RegistryServiceConfig } from './config.js'
import type { VerifyReport } from './deep-verifier.js'
import type { Genesis, Head } from './entry.js'
import { LOG_KEY_FILE, WITNESS_KEY_FILE, loadOrCreateLogKey } from './keys.js'
import { RegistryLog } from './log.js'
import { registerLogView } from './log-view.js'
import { REGISTRY_METRICS } from './metrics.js'
import { closeParts, registryParts, spawnRegistryTasks } from './parts.js'
import { coalescingReload } from './reload.js'
import { auditRouteRefusals } from './route-audit.js'
import { registryRoutes } from './routes/index.js'
import { witnessRoutes } from './routes/witness.js'
import { createMemoryStore, createSegmentStore } from './store/index.js'
import type { SegmentInfo, StoredCheckpoint } from './store/types.js'
import { registryTopology } from './topology.js'
import type { WitnessStatus } from './witness-pusher.js'
import { DEPS, WriteHealth } from './write-health.js'
import { packageVersion } from './version.js'

/** The registry service: a {@link RonService} plus registry handles. */
export interface RegistryService extends RonService {
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

/**
 * Creates a registry service. With `dataDir` the log lives in segment files there (and the log
 * key in `<dataDir>/registry-log.key`); without it, in memory. A new log needs `signers` (the
 * genesis M-of-N set); an existing one keeps its genesis, and a `signers` or `origin` that
 * differs from it is refused. `runtime` carries the injected objects (`auth`, `store`, `logKey`,
 * `witnessKey`, `clock`, `random`, `logger`…); a config that still carries them (the form before
 * the runtime argument) is accepted, they are split out (deprecated). Without a transport the
 * witnesses (URLs) are reached over HTTP by a transport of the service's own.
 *
 * Only the service's Committer appends to the log: the service object exposes HEAD, checkpoints
 * and reads, never the log itself, so nothing moves HEAD without a quorum of approvals.
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
 * const registry = await createRegistryService({ dataDir: './data/registry', signers }, undefined, { auth: { keys: jwks } })
 * createServer(registry.handle).listen(7702)
 * ```
 */
export async function createRegistryService(config: RegistryServiceConfig = {}, transport?: Transport, runtime: RegistryRuntime = {}): Promise<RegistryService> {
  const { data, runtime: rt } = splitRuntime<RegistryRuntime>(config, runtime, REGISTRY_RUNTIME_KEYS)
  const c = resolveConfig(data)
  const clock = rt.clock ?? systemClock
  let logKey: KeyObject
  if (rt.logKey !== undefined) logKey = rt.logKey
  else if (c.logKeyFile !== undefined || c.dataDir !== undefined) logKey = await loadOrCreateLogKey(c.logKeyFile ?? join(c.dataDir!, LOG_KEY_FILE))
  else logKey = generateLogKey()
  let witnessKey: KeyObject
  if (rt.witnessKey !== undefined) witnessKey = rt.witnessKey
  else if (c.witnessKeyFile !== undefined || c.dataDir !== undefined) witnessKey = await loadOrCreateLogKey(c.witnessKeyFile ?? join(c.dataDir!, WITNESS_KEY_FILE))
  else witnessKey = generateLogKey()

  const store = rt.store ?? (c.dataDir !== undefined ? createSegmentStore({ dir: c.dataDir, segmentEntries: c.segmentEntries, segmentBytes: c.segmentBytes }) : createMemoryStore({ segmentEntries: c.segmentEntries }))
  const origin = c.origin ?? `ron.registry/${randomBytes(4).toString('hex')}`
  const signer = noteSigner(origin, logKey)
  const genesis: Genesis | undefined =
    c.signers === undefined ? undefined : { origin, treeHash: c.treeHash, signers: c.signers, logKey: signer.verifierKey, createdAt: clock.now(), leafFormat: 'bundle' }
  let log: RegistryLog
  try {
    log = await RegistryLog.open(store, genesis)
    checkAgainstGenesis(c, data['treeHash'] !== undefined, log.genesis, logKey)
    checkWitnessKeys(c, log.genesis, logKey, witnessKey)
    return build(data, c, rt, transport, log, noteSigner(log.origin, logKey), witnessKey)
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

function build(input: Record<string, unknown>, c: RegistryConfig, rt: RegistryRuntime, transport: Transport | undefined, log: RegistryLog, signer: ReturnType<typeof noteSigner>, witnessKey: KeyObject): RegistryService {
  const store = log.store
  const host = createServiceHost<RegistryConfig>({
    id: c.id,
    version: c.version ?? packageVersion(),
    topology: registryTopology(c),
    runtime: rt,
    ...(transport === undefined ? {} : { transport }),
    config: { schema: registryConfigSchema, input, immutable: REGISTRY_IMMUTABLE_KEYS, extendsBase: true },
    readiness: {
      dependencies: [
        { name: DEPS.log, gates: 'both', check: () => (store.closed === true ? 'closed' : true) },
        { name: DEPS.disk, gates: 'write', ok: true },
        { name: DEPS.integrity, gates: 'write', ok: true },
      ],
      // SPEC 3.3a: writes shed first (a slow or failing disk, a log mismatch, stale revocations, the
      // drain's write phase); reads need only the log store open, and stay up through the read window.
      paths: { write: { needs: [DEPS.log, DEPS.disk, DEPS.integrity], shed: 'writes' }, read: { needs: [DEPS.log], shed: 'reads' } },
    },
  })
  const cfg = (): RegistryConfig => host.config.get()
  host.metrics.register(REGISTRY_METRICS)
  const sink = host.metrics.sink
  for (const [kind, n] of Object.entries(log.recoveries)) {
    sink.inc('registry_recoveries_total', { kind }, n)
    host.logger.warn({ kind, count: n }, 'log recovery')
  }
  sink.set('registry_head_version', undefined, log.head().version)
  const health = new WriteHealth(host.readiness, host.clock, host.logger)
  let reloads = 0
  const p = registryParts(host, rt, transport, log, signer, witnessKey, health)
  const { committer, checkpointor, notary, witness, pusher } = p
  const routes = registryRoutes({
    log,
    committer,
    checkpointor,
    notary,
    get witnessKey() {
      return witness.cosignerKey()
    },
    hub: p.hub,
    reloads: () => reloads,
    config: cfg,
    clock: host.clock,
    metrics: sink,
    authenticate: (req, scope) => host.authenticate(req, scope),
    writeGate: () => health.gate(),
  })
  host.routes([...routes, ...witnessRoutes(witness)])
  auditRouteRefusals(host, routes, committer)
  spawnRegistryTasks(host, p, log, health)
  host.onReload(() => {
    reloads++
    checkWitnessKeys(cfg(), log.genesis, signer.privateKey, witnessKey)
    sink.inc('registry_reload_success_total', { source: 'reload' })
    checkpointor.wake()
    pusher.reconfigure()
  })
  host.onClose(async () => {
    await closeParts(p)
    await store.close()
  })
  // Reloads beyond the 16 that may wait coalesce into one (latest value per key wins).
  const reload = coalescingReload(host.service.reload.bind(host.service), () => sink.inc('registry_reload_fail_total', { reason: 'invalid' }))
  const service: RegistryService = {
    ...host.service,
    reload,
    origin: log.origin,
    logKey: log.genesis.logKey,
    get witnessKey() {
      return witness.cosignerKey()
    },
    head: () => log.head(),
    checkpoint: () => checkpointor.checkpointNow(),
    prune: () => p.retention.pruneNow(),
    verify: () => p.verifier.verifyNow(),
    subscribe: (): Subscription<RegistryUpdated> => p.committed.subscribe(),
    signedCheckpoint: () => notary.served(),
    witnesses: () => pusher.status(),
  }
  registerLogView(service, log)
  return service
}
