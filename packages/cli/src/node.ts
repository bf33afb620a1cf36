/**
 * The composition behind `ron-node start`: data directory, node identity, issuer key, admin token,
 * the hosted services each on its own listener, peers, and the admin listener. Exported as
 * {@link startNode} so tests and embedders can run a node in-process.
 *
 * @module
 */

import { HttpTransport, MemoryTransport, noopLogger, systemClock, type Clock, type CorsConfig, type Logger, type NodeDirectory, type NodeIdentity, type RonService } from '@ron/core'
import { EtcdCoordinator, type EtcdSettings } from './coordination/etcd.js'
import type { HostedService } from './admin.js'
import { attachAdminHandler } from './node/admin.js'
import { prepareDataDir, type PreparedDataDir } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'
import { startAdminToken, type AdminToken } from './node/admin-token.js'
import { startNodeAuth, type NodeAuth } from './node/auth.js'
import { nodeSettings, serviceContext, useCurrentAuth } from './node/context.js'
import { createService, createServices } from './node/create.js'
import { nodeHandle } from './node/handle.js'
import { loadNodeKeys, type NodeKeys } from './node/keys.js'
import { advertisedUrl, attachService, bindAdminListener, bindServiceListeners, closeServiceSlots, type ServiceSlot } from './node/listeners.js'
import { awaitPeers, openPeers } from './node/peers.js'
import { planStart } from './node/plan.js'
import { createNodeReloader, type ReloadResult } from './node/reload.js'
import { ADMIN_TOKEN_TTL_SEC } from './keys.js'
import { loadTls, type Listener, type TlsFiles } from './listener.js'
import { NodeTransport } from './node-transport.js'
import type { PeerDirectory } from './peers.js'
import { FACTORIES, type NodeReloadable, type NodeStorageOptions, type NodeHttpLimits, type ServiceContext } from './services.js'

export type { ReloadResult } from './node/reload.js'
export { advertisedUrl } from './node/listeners.js'
export type { NodeBase, NodeHttpLimits, NodeReloadable, NodeStorageOptions } from './services.js'
import type { ServiceName } from './ports.js'

/** Options of {@link startNode}. */
export interface StartNodeOptions {
  /**
   * Data directory; created (mode 0700) when missing, made private when group or others can access
   * it, and locked (`<dataDir>/lock`) while the node runs. Required unless `amnesia`.
   */
  dataDir?: string
  /** RAM only: nothing is written to disk (memory stores, ephemeral keys, token in the summary). @default false */
  amnesia?: boolean
  /** Interface every listener binds. @default '127.0.0.1' */
  host?: string
  /** Admin on `portBase`, storage on `portBase + 1`, ...; 0 picks free ports. @default 7700 */
  portBase?: number
  /** Services to host. @default every service this build has */
  services?: readonly ServiceName[]
  /** Host name (or `scheme://host`) reported in `/status` and announced. @default the bound host */
  advertise?: string
  /** Serve every listener (admin and services) over HTTPS with this certificate and key. @default plain HTTP */
  tls?: TlsFiles
  /** Other nodes' admin URLs. @default [] */
  peers?: readonly string[]
  /**
   * Another node's passport URL: this node hosts no passport; every service verifies with that
   * passport's keys (`GET /v1/passport/keys`) and revocation feed (staleness bound 5 s), and the
   * node's service tokens come from it by client assertion signed with the node key (which must be
   * enrolled there: `ron-node join`). Needs a data directory. @default none (the node's own passport)
   */
  passportUrl?: string
  /** Another node's registry URL: this node hosts no registry; `/status` lists that URL as `registry`. @default none */
  registryUrl?: string
  /**
   * Coordination on etcd (SPEC §6c): the registry's log, proposals and checkpoint signer,
   * passport's revocations, key sets and enrolments, and name bindings live in etcd under the
   * prefix, shared by every node of the cluster that names the same etcd and prefix. Not with
   * `passportUrl` or `registryUrl` (every node runs its own, on the shared state). @default none
   */
  etcd?: EtcdSettings
  /** How long start waits for peers it has never seen to answer `/status`. @default 10000 */
  peerWaitMs?: number
  /** How long shutdown lets in-flight requests finish: every hosted service's `drainDeadlineMs` unless its section sets one. @default 3000 */
  drainDeadlineMs?: number
  /** The read window of every hosted service's drain (`drainReadWindowMs`) unless its section sets one. @default each service's (250 ms) */
  drainReadWindowMs?: number
  /**
   * HTTP limits (core's base `http.*` keys, SPEC §4) of every hosted service; a service's own
   * `http` section (`storage.http`, `config.passport.http`, …) wins key by key. @default {} (each service's defaults)
   */
  http?: NodeHttpLimits
  /**
   * CORS of every hosted service: reads from `readOrigins` (default `*`), writes from the node's
   * admin origin (the dashboard) plus `writeOrigins`; a service's own `cors` section adds to it.
   * @default reads from anywhere, writes from the admin origin only
   */
  cors?: CorsConfig
  /** Lifetime of a newly minted admin token, in seconds. @default 2592000 (30 days) */
  adminTokenTtlSec?: number
  /** How often the running node checks its admin token (renewed under 10 days left or after a key rotation). @default 60000 */
  adminTokenCheckMs?: number
  /** Storage settings. @default {} */
  storage?: NodeStorageOptions
  /** Each other service's own config section (passport, registry, index, interop), passed through. @default {} */
  config?: Pick<NodeReloadable, 'passport' | 'registry' | 'index' | 'interop'>
  /**
   * Where `reload()` re-reads the configuration (the CLI re-reads its file and environment); the
   * partial given to `reload()` is applied on top. @default the settings given at start
   */
  reloadSource?: () => NodeReloadable | Promise<NodeReloadable>
  /** Logger (pino-compatible). @default noopLogger */
  logger?: Logger
  /** @default systemClock */
  clock?: Clock
}

/** What `ron-node start --json` prints once ready. */
export interface NodeSummary {
  /** This node's id. */
  nodeId: string
  /** Admin listener URL (`/metrics`, `/healthz`, `/readyz`, `/status`). */
  admin: string
  /** Base URL of each hosted service. */
  services: Record<string, string>
  /** Path of the admin token file (mode 0600); absent in amnesia mode. */
  tokenFile?: string
  /** The admin token itself, in amnesia mode only (it is saved nowhere). */
  token?: string
  /** Absolute data directory; absent in amnesia mode. */
  dataDir?: string
}

/** A running node. */
export interface RonNode extends NodeSummary {
  /** The issuer key id tokens of this node carry in their `kid`. */
  readonly issuerKid: string
  /**
   * This node's identity: its id and node key (the data directory's, or an ephemeral one in
   * amnesia mode), which signs what the node vouches for. Services get it as `identity`.
   */
  readonly identity: NodeIdentity
  /**
   * The nodes this node believes (SPEC.md §5 "Peers"): itself first, then its pinned, accepted
   * peers with their node keys, advertised service URLs and admin URLs. A live view: it follows
   * the peers as they are pinned, refused or forgotten. Services get it as `nodes`.
   */
  readonly nodes: NodeDirectory
  /**
   * Forgets the pin of the peer at `admin` (what `ron-node peers forget` asks through
   * `POST /admin/peers/forget`): its next answer is pinned afresh.
   * @returns false when that peer had no pin.
   */
  forgetPeer(admin: string): Promise<boolean>
  /** True when the node identity was created by this start (first start). */
  readonly firstStart: boolean
  /** True when every hosted service is ready and the node is not shutting down. */
  ready(): boolean
  /**
   * Resolves once every hosted service reports ready (checked every 20 ms); rejects with the
   * signal's reason when `signal` aborts first. Logs what is missing every 10 s while waiting.
   */
  whenReady(signal?: AbortSignal): Promise<void>
  /** The JSON-line summary. */
  summary(): NodeSummary
  /**
   * Re-reads the configuration (`reloadSource`), applies `partial` on top, and calls `reload()` of
   * every hosted service with its section (SPEC.md §3.3b): validated, swapped atomically, rolled
   * back on failure. Reloads are serialised.
   * @throws the first service's reload error (a ConfigError naming the field, or a refusal of
   *   something that cannot change live)
   */
  reload(partial?: NodeReloadable): Promise<ReloadResult>
  /** Runs the shutdown sequence (SPEC.md 3.3) within the drain deadline. Idempotent. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Starts a node: prepares and locks the data directory, binds every listener (each answers 503
 * `NotReady` until its service is attached, the admin listener answers `/status` at once so peers
 * can learn this node's id), loads or creates the node identity (format version, node id, node
 * key), the issuer key and the admin token, learns its peers, then creates every requested service
 * and attaches it to its listener.
 *
 * Nothing is left running when it fails: whatever was started is closed before the error is thrown.
 *
 * @throws {@link CliError} for an unusable data directory, a data directory in use by another
 *   node (the message names it and the pid holding its lock), a data directory of a newer release,
 *   an invalid key file, an unknown service, or a port in use (the message names the port).
 * @example
 * ```ts
 * const node = await startNode({ dataDir: '/tmp/ron', portBase: 0 })
 * console.log(node.services.storage, node.tokenFile)
 * await node.close()
 * ```
 */
export async function startNode(options: StartNodeOptions): Promise<RonNode> {
  const plan = planStart(options)
  const { host, remote, wanted, drainDeadlineMs } = plan
  const logger = options.logger ?? noopLogger
  const clock = options.clock ?? systemClock
  const startedAt = clock.now()
  // The services' packages load while the data dir is locked and fsync'd and the keys are made:
  // their imports are CPU on this thread, the start-up work before them mostly waits on the disk.
  for (const name of wanted) FACTORIES[name].preload?.()

  // The data directory is locked before anything in it is touched, and every port is bound before
  // any service is created (storage's crash recovery clears storage/tmp), so a second start on the
  // same directory or a port conflict fails without disturbing anything.
  const layout: PreparedDataDir | undefined = plan.amnesia ? undefined : await prepareDataDir(options.dataDir!, { logger })
  const memory = new MemoryTransport()
  const http = new HttpTransport({ timeoutMs: 30_000, breaker: false })
  const transport = new NodeTransport(memory, http, remote)
  const slots: ServiceSlot[] = []
  const hosted: (HostedService & { listener: Listener })[] = []
  let accepting = true
  let admin: Listener | undefined
  let peers: PeerDirectory | undefined
  let auth: NodeAuth | undefined
  let etcd: EtcdCoordinator | undefined
  let adminToken: AdminToken | undefined
  let reloadCtx: ServiceContext | undefined
  const reload = createNodeReloader({ hosted: () => hosted, context: () => reloadCtx, source: options.reloadSource, drainDeadlineMs, logger })

  const shutdown = async (): Promise<void> => {
    accepting = false
    adminToken?.stop()
    peers?.close()
    // Every service drains behind its open listener (SPEC.md 3.3); the admin listener goes last.
    await closeServiceSlots(slots, logger)
    await auth?.close()
    etcd?.close()
    await admin?.close()
    await transport.close()
    await layout?.release()
  }

  let keys: NodeKeys
  try {
    const tls = options.tls === undefined ? undefined : await loadTls(options.tls)
    etcd = await connectEtcd(options.etcd, logger, clock)
    // 1. Listeners: every service's (503 NotReady until attached), then the admin listener.
    const binding = { portBase: plan.portBase, host, advertise: options.advertise, tls }
    await bindServiceListeners(wanted, binding, slots)
    admin = await bindAdminListener(binding)
    const adminUrl = advertisedUrl(admin.url, options.advertise)
    // 2. Identity: node id, node key, issuer key.
    keys = await loadNodeKeys(layout, { clock, logger })
    const { nodeId, identity } = keys
    // 3. Auth: the issuer key (or passport.url) verifies and mints until the node's passport is up.
    auth = await startNodeAuth({ nodeId, issuer: keys.issuer, nodeKey: keys.nodeKey, remotePassport: remote.passport, http, clock, logger })
    // 4. Peers, and the admin listener: from here on it answers /status and /keys, so peers
    // starting at the same time learn this node's id and keys while its services are created.
    const self = { id: nodeId, nodeKey: identity.publicKey, admin: adminUrl, services: Object.fromEntries(slots.map((s) => [s.name, s.url])) }
    const dir = await openPeers({ admins: plan.peerAdmins, layout, self, http, enrolledVia: wanted.includes('passport') || remote.passport !== undefined ? transport : undefined, clock, logger })
    peers = dir
    transport.usePeers(dir)
    attachAdminHandler(admin, { identity, hosted: () => hosted, slots, remote, startedAt, accepting: () => accepting, auth, peers: dir, etcd, reload, host, advertise: options.advertise, clock })
    await dir.load()
    // 5. Services: passport first (every other service verifies with its keys and revocations,
    // and the node's service tokens come from it), a short wait for new peers (so storage starts
    // with the whole placement set; its enrolments vouch for their keys), then the others at once.
    const ctx = serviceContext({ identity, peers: dir, layout, transport, auth, slots, hosted: wanted, config: nodeSettings(options, drainDeadlineMs), adminUrl, etcd, logger, clock })
    const attach = (slot: ServiceSlot, service: RonService): void => {
      attachService(slot, service)
      memory.mount(slot.name, service)
      hosted.push({ name: slot.name, url: slot.url, service, listener: slot.listener })
      logger.info({ service: slot.name, url: slot.url }, 'service listening')
    }
    const passportSlot = slots.find((s) => s.name === 'passport')
    if (passportSlot !== undefined) {
      await auth.usePassport(await createService(passportSlot, ctx, attach))
      useCurrentAuth(ctx, auth)
    }
    await awaitPeers(dir, { waitMs: options.peerWaitMs ?? 10_000, clock, logger })
    await createServices(slots, ctx, attach)
    // /status, /readyz and the summary list services in port order.
    hosted.sort((x, y) => wanted.indexOf(x.name as ServiceName) - wanted.indexOf(y.name as ServiceName))
    // 6. The admin token, renewed while the node runs.
    const ttlSec = options.adminTokenTtlSec ?? ADMIN_TOKEN_TTL_SEC
    adminToken = await startAdminToken({ layout, issuer: keys.issuer, passport: auth.passport, ttlSec, checkEveryMs: options.adminTokenCheckMs ?? 60_000, clock, logger })
    // 7. Reload: from here on reloads apply; a peer whose id or URLs change reloads the peer set.
    reloadCtx = ctx
    dir.onChange = () => {
      reload({}).catch((e: unknown) => logger.warn({ err: e }, 'could not apply the new peer set'))
    }
    dir.start()
    logger.info({ url: adminUrl, nodeId }, 'admin listening')
  } catch (e) {
    await shutdown()
    throw e
  }

  const summary: NodeSummary = {
    nodeId: keys.nodeId,
    admin: advertisedUrl(admin.url, options.advertise),
    services: Object.fromEntries(hosted.map((h) => [h.name, h.url])),
    ...(layout === undefined ? { token: adminToken.token } : { tokenFile: layout.adminToken, dataDir: layout.root }),
  }
  return nodeHandle({
    summary,
    issuerKid: keys.issuer.kid,
    identity: keys.identity,
    firstStart: keys.firstStart,
    peers,
    hosted: () => hosted,
    accepting: () => accepting,
    reload,
    shutdown,
    drainDeadlineMs,
    logger,
    clock,
  })
}

/** Connects to etcd when the cluster coordinates on it (SPEC §6c). */
async function connectEtcd(settings: EtcdSettings | undefined, logger: Logger, clock: Clock): Promise<EtcdCoordinator | undefined> {
  if (settings === undefined) return undefined
  try {
    return await EtcdCoordinator.connect(settings, { logger: logger.child({ component: 'etcd' }), clock })
  } catch (e) {
    throw new CliError(`coordination.etcd: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Usage, { cause: e })
  }
}
