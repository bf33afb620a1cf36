/**
 * The composition behind `ron-node start`: data directory, node identity, issuer key, admin token,
 * the hosted services each on its own listener, peers, and the admin listener. Exported as
 * {@link startNode} so tests and embedders can run a node in-process.
 *
 * @module
 */

import { join } from 'node:path'
import {
  HttpTransport,
  MemoryTransport,
  createRevocationFeed,
  createTokenProvider,
  createTokenVerifier,
  localMinter,
  nodeIdentityFromKey,
  noopLogger,
  remoteKeySource,
  staticKeySource,
  systemClock,
  type Clock,
  type CorsConfig,
  type IssuerKey,
  type Jwk,
  type Logger,
  type NodeDirectory,
  type NodeIdentity,
  type RevocationFeed,
  type RonService,
  type RevocationCheck,
  type TokenProvider,
  type TokenVerifier,
} from '@ron/core'
import { EtcdCoordinator, type EtcdSettings } from './coordination/etcd.js'
import { createAdminHandler, type HostedService } from './admin.js'
import { prepareDataDir, type PreparedDataDir } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'
import { startAdminToken, type AdminToken } from './node/admin-token.js'
import { loadNodeKeys } from './node/keys.js'
import { advertisedUrl, attachService, bindAdminListener, bindServiceListeners, closeServiceSlots, handlerOf, type ServiceSlot } from './node/listeners.js'
import { createNodeReloader, parseReloadBody, type ReloadResult } from './node/reload.js'
import { ADMIN_TOKEN_TTL_SEC } from './keys.js'
import { loadTls, type Listener, type TlsFiles } from './listener.js'
import { NodeTransport } from './node-transport.js'
import { PeerDirectory, normalizeUrl, passportEnrolments } from './peers.js'
import { adminHosts } from './host-check.js'
import { PinStore } from './pins.js'
import { CREATE_AFTER, CREATE_ORDER, FACTORIES, creationError, type NodeHttpLimits, type NodeReloadable, type NodeStorageOptions, type PassportHandles, type ServiceContext } from './services.js'

export type { ReloadResult } from './node/reload.js'
export { advertisedUrl } from './node/listeners.js'
export type { NodeBase, NodeHttpLimits, NodeReloadable, NodeStorageOptions } from './services.js'
import { AVAILABLE_SERVICES, DEFAULT_PORT_BASE, KNOWN_SERVICES, type ServiceName } from './ports.js'
import { cliVersion } from './version.js'

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
  const host = options.host ?? '127.0.0.1'
  const portBase = options.portBase ?? DEFAULT_PORT_BASE
  const amnesia = options.amnesia === true
  // A service used on another node (passport.url, registry.url) is not hosted here.
  const remote: Partial<Record<ServiceName, string>> = {}
  if (options.passportUrl !== undefined) remote.passport = options.passportUrl.replace(/\/+$/, '')
  if (options.registryUrl !== undefined) remote.registry = options.registryUrl.replace(/\/+$/, '')
  const wanted: ServiceName[] = KNOWN_SERVICES.filter((n) => (options.services ?? AVAILABLE_SERVICES).includes(n) && remote[n] === undefined)
  const unknownServices = (options.services ?? []).filter((n) => !KNOWN_SERVICES.includes(n))
  const drainDeadlineMs = options.drainDeadlineMs ?? 3000
  const logger = options.logger ?? noopLogger
  const clock = options.clock ?? systemClock
  const startedAt = clock.now()
  if (!Number.isInteger(portBase) || portBase < 0 || portBase > 65535 - 5) {
    throw new CliError(`--port-base must be 0 or an integer up to 65530, got ${portBase}`, ExitCode.Usage)
  }
  for (const name of [...wanted, ...unknownServices]) {
    if (!AVAILABLE_SERVICES.includes(name)) {
      throw new CliError(`service ${name} is not available in this build (available: ${AVAILABLE_SERVICES.join(', ')})`, ExitCode.Usage)
    }
  }
  if (!amnesia && (options.dataDir === undefined || options.dataDir === '')) throw new CliError('a data directory is required (or amnesia mode)', ExitCode.Usage)
  if (options.etcd !== undefined && (remote.passport !== undefined || remote.registry !== undefined)) {
    throw new CliError('with etcd every node runs its own passport and registry on the shared state: drop passport.url and registry.url', ExitCode.Usage)
  }
  if (amnesia && remote.passport !== undefined) {
    throw new CliError('passport.url needs a data directory: the node key enrolled with that passport (ron-node join) is kept there; drop --amnesia', ExitCode.Usage)
  }
  let peerAdmins: string[]
  try {
    peerAdmins = [...new Set((options.peers ?? []).map(normalizeUrl))]
  } catch (e) {
    throw new CliError(`peers: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Usage, { cause: e })
  }

  // The data directory is locked before anything in it is touched, and every port is bound before
  // any service is created (storage's crash recovery clears storage/tmp), so a second start on the
  // same directory or a port conflict fails without disturbing anything.
  const layout: PreparedDataDir | undefined = amnesia ? undefined : await prepareDataDir(options.dataDir!, { logger })
  const memory = new MemoryTransport()
  const http = new HttpTransport({ timeoutMs: 30_000, breaker: false })
  const transport = new NodeTransport(memory, http, remote)
  const slots: ServiceSlot[] = []
  const hosted: (HostedService & { listener: Listener })[] = []
  let accepting = true
  let admin: Listener | undefined
  let peers: PeerDirectory | undefined
  let tokens: TokenProvider | undefined
  let feed: RevocationFeed | undefined
  let etcd: EtcdCoordinator | undefined
  let reloadCtx: ServiceContext | undefined
  const reload = createNodeReloader({ hosted: () => hosted, context: () => reloadCtx, source: options.reloadSource, drainDeadlineMs, logger })

  const shutdown = async (): Promise<void> => {
    accepting = false
    adminToken?.stop()
    peers?.close()
    // Every service drains behind its open listener (SPEC.md 3.3); the admin listener goes last.
    await closeServiceSlots(slots, logger)
    tokens?.close()
    await feed?.close()
    etcd?.close()
    await admin?.close()
    await transport.close()
    await layout?.release()
  }

  let issuer: IssuerKey
  let nodeKey: IssuerKey
  let nodeId: string
  let identity: NodeIdentity
  let firstStart: boolean
  let adminToken: AdminToken | undefined
  try {
    const tls = options.tls === undefined ? undefined : await loadTls(options.tls)
    if (options.etcd !== undefined) {
      try {
        etcd = await EtcdCoordinator.connect(options.etcd, { logger: logger.child({ component: 'etcd' }), clock })
      } catch (e) {
        throw new CliError(`coordination.etcd: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Usage, { cause: e })
      }
    }
    const binding = { portBase, host, advertise: options.advertise, tls }
    await bindServiceListeners(wanted, binding, slots)
    admin = await bindAdminListener(binding)
    const adminUrl = advertisedUrl(admin.url, options.advertise)

    ;({ issuer, nodeKey, nodeId, firstStart } = await loadNodeKeys(layout, { clock, logger }))

    // Until passport is up (or without it), the node's own issuer key signs and verifies.
    let passport: PassportHandles | undefined
    let verifier: TokenVerifier = createTokenVerifier({ keys: staticKeySource([issuer]), clock })
    let serviceMinter = localMinter(issuer, { iss: `ron-node:${nodeId}`, sub: `node:${nodeId}`, clock })
    if (remote.passport !== undefined) {
      // Another node's passport: its key set and revocation feed (5 s staleness bound; while stale,
      // writes answer 503 revocation_stale) over HTTP, and service tokens by client assertion.
      const { remotePassportMinter } = await import('@ron/passport')
      feed = createRevocationFeed({ transport: http, target: remote.passport, staleAfterMs: 5000, pollIntervalMs: 1000, clock })
      await feed.sync().catch((e: unknown) => logger.warn({ url: remote.passport, err: e }, 'cannot read the revocation feed of the passport yet; writes wait until it answers'))
      feed.start()
      verifier = createTokenVerifier({ keys: remoteKeySource({ transport: http, target: remote.passport, cooldownMs: 1000, clock }), revocations: feed, clock })
      serviceMinter = remotePassportMinter(http, { nodeId, nodeKey, target: remote.passport, clock })
    }
    const publicKeys = (): unknown[] => passport?.jwks().keys ?? [issuer.publicJwk]
    identity = nodeIdentityFromKey(nodeId, nodeKey)
    const pins = await PinStore.open(layout?.pinsFile)
    peers = new PeerDirectory({
      admins: peerAdmins,
      pins,
      file: layout?.peersFile,
      self: { id: nodeId, nodeKey: identity.publicKey, admin: adminUrl, services: Object.fromEntries(slots.map((s) => [s.name, s.url])) },
      http,
      // The passport this node uses (its own or passport.url, nothing else) vouches for the keys it enrolled.
      ...(wanted.includes('passport') || remote.passport !== undefined ? { enrolled: passportEnrolments(transport, clock) } : {}),
      logger,
      now: () => clock.now(),
    })
    transport.usePeers(peers)
    const pending = (): Record<string, string> => Object.fromEntries(slots.filter((s) => s.service === undefined).map((s) => [s.name, s.url]))
    // The admin listener answers /status and /keys from here on: peers starting at the same time
    // learn this node's id and keys while its services are still being created.
    admin.attach(
      handlerOf(
        createAdminHandler({
          nodeId,
          nodeKey: identity.publicKey,
          services: () => hosted,
          pending,
          remote: () => remote,
          version: cliVersion(),
          startedAt,
          accepting: () => accepting,
          keys: publicKeys as () => Jwk[],
          verifier: { verify: (token, req) => verifier.verify(token, req) },
          peers: () => peers!.list(),
          ...(etcd === undefined ? {} : { coordination: etcd }),
          forgetPeer: (url) => peers!.forget(url),
          reload: (partial: unknown) => reload(parseReloadBody(partial)),
          allowedHosts: adminHosts(host, options.advertise),
          clock,
        }),
      ),
    )
    await peers.load()
    const dir = peers
    // Peers this node has never seen are waited for a little (nodes of a new cluster start
    // together), so storage starts with the whole placement set; later changes are reloaded. The
    // wait runs once passport is up (it is created first), whose enrolments vouch for peers' keys.
    const awaitPeers = async (): Promise<void> => {
      const waitUntil = clock.now() + (options.peerWaitMs ?? 10_000)
      for (;;) {
        await dir.refresh()
        if (dir.settled() || clock.now() >= waitUntil) break
        await clock.sleep(200)
      }
      const unknown = dir.list().filter((p) => p.state !== 'pinned')
      if (unknown.length > 0) logger.warn({ peers: unknown.map((p) => ({ admin: p.admin, state: p.state, error: p.error })) }, 'some peers are unreachable or refused; they join placement once they answer as pinned')
    }

    const ctx: ServiceContext = {
      nodeId,
      identity,
      nodes: peers.directory(),
      root: layout?.root,
      amnesia,
      transport,
      verifier,
      tokens: createTokenProvider({ minter: serviceMinter, clock }),
      peers,
      logger,
      clock,
      url: (name) => slots.find((s) => s.name === name)?.url ?? '',
      hosted: new Set(wanted),
      config: {
        ...(options.config ?? {}),
        ...(options.storage === undefined ? {} : { storage: options.storage }),
        // The node's base keys: every hosted service's defaults (docs/service-contract.md §8).
        drainDeadlineMs,
        ...(options.drainReadWindowMs === undefined ? {} : { drainReadWindowMs: options.drainReadWindowMs }),
        ...(options.http === undefined ? {} : { http: options.http }),
        ...(options.cors === undefined ? {} : { cors: options.cors }),
      },
      writeOrigins: [new URL(adminUrl).origin],
      file: (...parts) => (layout === undefined ? undefined : join(layout.root, ...parts)),
      ...(etcd === undefined ? {} : { etcd }),
    }
    tokens = ctx.tokens
    const attach = (slot: (typeof slots)[number], service: RonService): void => {
      attachService(slot, service)
      memory.mount(slot.name, service)
      hosted.push({ name: slot.name, url: slot.url, service, listener: slot.listener })
      logger.info({ service: slot.name, url: slot.url }, 'service listening')
    }
    const create = async (slot: (typeof slots)[number]): Promise<void> => {
      let service: RonService
      try {
        // Each service gets its own child logger: a service that freezes its config snapshot must
        // not freeze the logger the others share.
        service = await FACTORIES[slot.name].create({ ...ctx, logger: logger.child({}) })
      } catch (e) {
        throw creationError(slot.name, e)
      }
      attach(slot, service)
    }
    const passportSlot = slots.find((s) => s.name === 'passport')
    if (passportSlot !== undefined) {
      await create(passportSlot)
      // From here on every service verifies with passport's keys and revocations, and the
      // node's service tokens come from passport (sub node:<id>).
      const { passportMinter } = await import('@ron/passport')
      passport = passportSlot.service as unknown as PassportHandles
      verifier = createTokenVerifier({ keys: passport.keys, revocations: passport.revocations as RevocationCheck, clock })
      ctx.verifier = verifier
      ctx.tokens.close()
      ctx.tokens = createTokenProvider({ minter: passportMinter(passportSlot.service as never, { sub: `node:${nodeId}` }), clock })
      tokens = ctx.tokens
    }
    await awaitPeers()
    // The others need only passport (and storage the index it announces to), so they are created
    // at once: their module loads, key files, stores and fsyncs overlap instead of queueing (the
    // start used to wait for each in turn). Every creation is awaited before a failure is thrown,
    // so a service created next to a failing one is attached, and closed by the shutdown.
    const creating = new Map<ServiceName, Promise<void>>()
    for (const name of CREATE_ORDER) {
      const slot = slots.find((s) => s.name === name)
      if (slot === undefined || name === 'passport') continue
      const after = CREATE_AFTER[name]?.map((n) => creating.get(n)).filter((x) => x !== undefined) ?? []
      creating.set(name, Promise.all(after).then(() => create(slot)))
    }
    const created = await Promise.allSettled(creating.values())
    const failed = created.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    // /status, /readyz and the summary list services in port order.
    hosted.sort((x, y) => wanted.indexOf(x.name as ServiceName) - wanted.indexOf(y.name as ServiceName))

    adminToken = await startAdminToken({
      layout,
      issuer,
      passport,
      ttlSec: options.adminTokenTtlSec ?? ADMIN_TOKEN_TTL_SEC,
      checkEveryMs: options.adminTokenCheckMs ?? 60_000,
      clock,
      logger,
    })

    reloadCtx = ctx
    // When a peer's id or URLs change (it came up, or moved), the services learn the new peer set.
    peers.onChange = () => {
      reload({}).catch((e: unknown) => logger.warn({ err: e }, 'could not apply the new peer set'))
    }
    peers.start()
    logger.info({ url: adminUrl, nodeId }, 'admin listening')
  } catch (e) {
    await shutdown()
    throw e
  }

  const summary: NodeSummary = {
    nodeId,
    admin: advertisedUrl(admin.url, options.advertise),
    services: Object.fromEntries(hosted.map((h) => [h.name, h.url])),
    ...(layout === undefined ? { token: adminToken.token } : { tokenFile: layout.adminToken, dataDir: layout.root }),
  }
  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= (async () => {
      logger.info({ drainDeadlineMs }, 'shutting down')
      await shutdown()
      logger.info({}, 'stopped')
    })()
    return closing
  }
  const ready = (): boolean => accepting && hosted.every((h) => h.service.health().ready)
  const whenReady = async (signal?: AbortSignal): Promise<void> => {
    let lastReport = clock.now()
    while (!ready()) {
      if (!accepting) throw new CliError('node closed before it became ready')
      if (clock.now() - lastReport >= 10_000) {
        lastReport = clock.now()
        const missing = hosted.flatMap((h) => (h.service.health().ready ? [] : [`${h.name}: ${h.service.health().missing.join(', ') || 'not ready'}`]))
        logger.warn({ missing }, 'waiting for services to become ready')
      }
      await clock.sleep(20, signal)
    }
  }
  const nodes = peers.directory()
  const forgetPeer = (url: string): Promise<boolean> => peers.forget(url)
  return {
    ...summary,
    issuerKid: issuer.kid,
    identity,
    nodes,
    forgetPeer,
    firstStart,
    ready,
    whenReady,
    summary: () => ({ ...summary, services: { ...summary.services } }),
    reload,
    close,
    [Symbol.asyncDispose]: close,
  }
}
