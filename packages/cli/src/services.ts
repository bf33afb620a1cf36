/**
 * How a node creates each service and wires it to the others (issue 15): passport first (every
 * service verifies with its keys and revocations, and it mints the node's service tokens), then
 * index (storage announces to it), storage, registry and interop (which calls storage, passport
 * and index), all over the node's in-process transport.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { z } from 'zod'
import {
  ConfigError,
  SERVICE_CALL_SCOPES,
  isRonError,
  parseSize,
  type serviceBaseSchema,
  type Clock,
  type CorsConfig,
  type HttpConfig,
  type KeySource,
  type Logger,
  type NodeDirectory,
  type NodeIdentity,
  type RonService,
  type ServiceRuntime,
  type TokenProvider,
  type Transport,
  type TokenVerifier,
} from '@ron/core'
import { CliError, ExitCode } from './exit-codes.js'
import { writeSecret } from './keys.js'
import type { EtcdCoordinator } from './coordination/etcd.js'
import type { NodeTransport } from './node-transport.js'
import type { PeerDirectory } from './peers.js'
import type { ServiceName } from './ports.js'

/** Storage settings of a node (the JSON-safe subset of storage's options ron-node exposes). */
export interface NodeStorageOptions extends NodeBaseOverrides {
  /** @default 16 GiB */
  maxObjectBytes?: number
  /** @default 64 KiB */
  chunkSize?: number
  /** @default true */
  publicReads?: boolean
  /** @default 512 */
  workQueue?: number
  /** @default 16 */
  getConcurrency?: number
  /** @default 32 */
  writers?: number
  /** Copies kept across this node and its peers. @default 2 with peers, 1 alone */
  rf?: number
  /** Durable copies before a PUT is acknowledged. @default 1 */
  writeQuorum?: number
  /** Repair pacing. */
  repair?: { intervalMs?: number; bytesPerSec?: number; burst?: number }
}

/**
 * The node-level `http.*` limits (core's base keys, SPEC §4): numbers (ms, bytes), only those
 * given. Every hosted service gets them as its base `http` section; a service's own
 * `[<service>.http]` wins key by key.
 */
export type NodeHttpLimits = { [K in keyof HttpConfig]?: HttpConfig[K] | undefined }

/** The base keys a service section may override (`[storage.http]`, `[passport.cors]`, …). */
export interface NodeBaseOverrides {
  http?: NodeHttpLimits
  cors?: CorsConfig
  drainDeadlineMs?: number
  drainReadWindowMs?: number
}

/**
 * The node's settings every hosted service gets as its base keys (the service contract,
 * docs/service-contract.md §8): HTTP limits, CORS, the drain deadline and the read window.
 */
export interface NodeBase {
  /** Node-level `[http]` limits. @default {} (each service's own defaults) */
  http?: NodeHttpLimits
  /** Node-level `[cors]`: reads from `readOrigins` (default `*`); writes from the admin origin plus `writeOrigins`. */
  cors?: CorsConfig
  /** How long a service's `close()` lets in-flight work finish (`--drain-deadline`). @default each service's (3 s) */
  drainDeadlineMs?: number
  /** The read window of a drain (writes unready, reads still served). @default each service's (250 ms) */
  drainReadWindowMs?: number
}

/** What can change on a running node (`reload()`, SIGHUP, `POST /admin/reload`). */
export interface NodeReloadable extends NodeBase {
  storage?: NodeStorageOptions
  /** Passed through to each service's own config (its schema validates it). */
  passport?: Record<string, unknown>
  registry?: Record<string, unknown>
  index?: Record<string, unknown>
  interop?: Record<string, unknown>
}

/** The handles of a hosted passport the node uses. */
export interface PassportHandles {
  keys: KeySource
  revocations: { isRevoked(jti: string): boolean | Promise<boolean> }
  jwks(): { keys: unknown[] }
  mintAdminToken(req: { sub?: string; aud: string[]; scope: string[]; ttlSec: number }): Promise<{ token: string }>
  mintServiceToken(req: { sub: string; aud: string; scope: string[]; ttlSec: number }, signal?: AbortSignal): Promise<{ token: string }>
  /** Retires a token (the replaced admin token): it stops verifying, what it minted lives on. */
  retire(jti: string, options?: { exp?: number }): Promise<unknown>
  /** Runs `fn` after every rotation, before the rotation answers; returns a disposer. */
  onRotate(fn: () => Promise<void>): () => void
}

/** Everything a service factory gets. */
export interface ServiceContext {
  nodeId: string
  /**
   * This node's identity (id, public node key, signer): what the index signs its name records with
   * and what the services state as `node`. Amnesia: an ephemeral key.
   */
  identity: NodeIdentity
  /**
   * The nodes this node believes: itself first, then its pinned, accepted peers (node key,
   * advertised service URLs, admin URL). A live view of the peer directory.
   */
  nodes: NodeDirectory
  /** Data directory root, undefined in amnesia mode. */
  root: string | undefined
  amnesia: boolean
  transport: NodeTransport
  /** The verifier every service uses (passport's keys and revocations, or the node's issuer key). */
  verifier: TokenVerifier
  /** Service-to-service tokens of this node (`sub: node:<id>`). */
  tokens: TokenProvider
  peers: PeerDirectory
  logger: Logger
  clock: Clock
  url: (name: ServiceName) => string
  hosted: ReadonlySet<ServiceName>
  /** Current settings (file/env/flags): the node-level base keys and each service's section. */
  config: NodeReloadable
  /** Origins the services let write cross-origin (the node's admin origin, for the dashboard). */
  writeOrigins: string[]
  /** The path of a file in the data directory (undefined in amnesia mode). */
  file(...parts: string[]): string | undefined
  /** The node's etcd connection when the cluster coordinates on etcd (SPEC §6c). */
  etcd?: EtcdCoordinator
}

/** Creates one service; says what its `reload()` gets. What {@link FACTORIES} holds per service. */
export interface ServiceFactory {
  create(ctx: ServiceContext): Promise<RonService>
  /**
   * Starts loading the service's package without waiting for it, so its import overlaps the node's
   * other start-up work (data dir, keys, fsyncs); a failure surfaces from {@link create}.
   */
  preload?(): void
  /** The partial a node reload gives the service: the node's base keys under its own part. */
  reloadPartial(ctx: ServiceContext, cfg: NodeReloadable): unknown
}

/**
 * How the node hosts one service (docs/service-contract.md §8): its factory, and only what is its
 * own — its section plus data directory and derived keys (`config`), its own injected objects
 * (`runtime`), what a reload gives it (`reload`). The base keys and the shared runtime come from
 * {@link baseFor} and {@link runtimeFor} for every service alike.
 */
export interface ServiceEntry<C extends BaseKeysInput, R extends ServiceRuntime> {
  /** The service's factory (imported on demand: a node hosting only storage never loads passport). */
  load(): Promise<(config: C, transport: Transport, runtime: R) => Promise<RonService>>
  /** The service's own config at start: its section, data directory and derived keys. */
  config(ctx: ServiceContext): Promise<C>
  /** The service's own injected objects (a KMS, a store, peer keys), added to {@link runtimeFor}; `{}` for none. */
  runtime(ctx: ServiceContext): Promise<R>
  /**
   * Passport verifies with its own keys and mints its own tokens: it gets no node verifier and no
   * service tokens. @default false
   */
  ownsAuth?: boolean
  /** The service's own part of a reload (its section, with what it derives from the peers). */
  reload(ctx: ServiceContext, cfg: NodeReloadable): C
}

/** The base keys as a service config takes them (core's `serviceBaseShape()`, input side). */
export type BaseKeysInput = z.input<typeof serviceBaseSchema>

/** Node-level base keys: the same for every hosted service (limits, CORS, drain deadline, read window). */
export function baseFor(ctx: Pick<ServiceContext, 'writeOrigins'>, cfg: NodeBase): { http: NodeHttpLimits; cors: CorsConfig; drainDeadlineMs?: number; drainReadWindowMs?: number } {
  return {
    http: { ...cfg.http },
    cors: { readOrigins: cfg.cors?.readOrigins ?? '*', writeOrigins: [...ctx.writeOrigins, ...(cfg.cors?.writeOrigins ?? [])] },
    ...(cfg.drainDeadlineMs === undefined ? {} : { drainDeadlineMs: cfg.drainDeadlineMs }),
    ...(cfg.drainReadWindowMs === undefined ? {} : { drainReadWindowMs: cfg.drainReadWindowMs }),
  }
}

/** The runtime every service gets; a service's entry adds only what is its own. */
export function runtimeFor(ctx: ServiceContext, ownsAuth = false): ServiceRuntime {
  return {
    ...(ownsAuth ? {} : { auth: { verifier: ctx.verifier }, tokens: ctx.tokens }),
    logger: ctx.logger,
    clock: ctx.clock,
    identity: ctx.identity,
    nodes: ctx.nodes,
  }
}

/**
 * A service's own config over the node's base keys: its `http.*` win key by key, its CORS read
 * origins replace the node's and its write origins add to them (the admin origin always writes,
 * for the dashboard), its drain keys win.
 */
export function withBase<C extends BaseKeysInput>(base: ReturnType<typeof baseFor>, own: C): C {
  return {
    ...base,
    ...own,
    http: { ...base.http, ...defined(own.http) },
    cors: {
      readOrigins: own.cors?.readOrigins ?? base.cors.readOrigins ?? '*',
      writeOrigins: [...new Set([...(base.cors.writeOrigins ?? []), ...(own.cors?.writeOrigins ?? [])])],
    },
  }
}

/** The keys of `o` whose value is not undefined (an absent override keeps the node's value). */
function defined<V>(o: Readonly<Record<string, V | undefined>> | undefined): Record<string, V> {
  return o === undefined ? {} : Object.fromEntries(Object.entries(o).filter((e): e is [string, V] => e[1] !== undefined))
}

/** One table entry, typed by its service, as the node drives it (no casts: the types meet here). */
export function hostedBy<C extends BaseKeysInput, R extends ServiceRuntime>(entry: ServiceEntry<C, R>): ServiceFactory {
  // One load shared by preload() and create(); a failed load is forgotten, so a later create retries it.
  let loading: ReturnType<ServiceEntry<C, R>['load']> | undefined
  const load = (): ReturnType<ServiceEntry<C, R>['load']> =>
    (loading ??= entry.load().catch((e: unknown) => {
      loading = undefined
      throw e
    }))
  return {
    preload() {
      // The error is create()'s to report (it awaits the same load, or retries a failed one).
      load().catch(() => undefined)
    },
    async create(ctx) {
      const factory = await load()
      const own = await entry.config(ctx)
      const runtime = await entry.runtime(ctx)
      return factory(withBase(baseFor(ctx, ctx.config), own), ctx.transport, { ...runtimeFor(ctx, entry.ownsAuth === true), ...runtime })
    },
    reloadPartial: (ctx, cfg) => withBase(baseFor(ctx, cfg), entry.reload(ctx, cfg)),
  }
}

/** Storage settings → storage's own config keys (JSON-safe), its base-key overrides included. */
export function storageSettings(s: NodeStorageOptions | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (s === undefined) return out
  for (const k of ['maxObjectBytes', 'chunkSize', 'publicReads', 'workQueue', 'getConcurrency', 'writers', 'writeQuorum', 'rf', 'http', 'cors', 'drainDeadlineMs', 'drainReadWindowMs'] as const) {
    if (s[k] !== undefined) out[k] = s[k]
  }
  const r = s.repair ?? {}
  const repair: Record<string, number> = {}
  if (r.intervalMs !== undefined) repair['intervalMs'] = r.intervalMs
  if (r.bytesPerSec !== undefined) repair['bytesPerSec'] = r.bytesPerSec
  if (r.burst !== undefined) repair['burst'] = r.burst
  if (Object.keys(repair).length > 0) out['repair'] = repair
  return out
}

/** Replication settings for the peers known right now: rf and writeQuorum never exceed what they allow. */
function replication(ctx: ServiceContext, s: NodeStorageOptions | undefined): { peers: string[]; rf: number; writeQuorum: number } {
  const peers = ctx.peers.storagePeers()
  const wanted = s?.rf ?? (ctx.peers.list().length > 0 ? 2 : 1)
  const rf = Math.max(1, Math.min(wanted, peers.length + 1))
  return { peers, rf, writeQuorum: Math.max(1, Math.min(s?.writeQuorum ?? 1, rf)) }
}

async function dir(ctx: ServiceContext, name: string): Promise<string | undefined> {
  const path = ctx.file(name)
  if (path !== undefined) await mkdir(path, { recursive: true, mode: 0o700 })
  return path
}

/** Webhook providers interop verifies out of the box. */
export const WEBHOOK_PROVIDERS = ['github', 'slack', 'stripe', 'standard'] as const

/**
 * The node's webhook secrets: `<root>/interop/webhook-secrets.json` (0600), one random secret per
 * provider, created at first start (in amnesia mode: in memory). `ron-node webhook test` reads it.
 */
export async function loadOrCreateWebhookSecrets(path: string | undefined): Promise<Record<string, string>> {
  if (path !== undefined) {
    try {
      return JSON.parse(await readFile(path, 'utf8')) as Record<string, string>
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'ENOENT') throw new CliError(`cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`, ExitCode.Error, { cause: e })
    }
  }
  const secrets = Object.fromEntries(WEBHOOK_PROVIDERS.map((p) => [p, `whsec_${randomBytes(24).toString('base64')}`]))
  if (path !== undefined) await writeSecret(path, `${JSON.stringify(secrets, null, 2)}\n`)
  return secrets
}

/** interop's `uploads.maxBytes` in bytes, when configured (a number or a size string). */
function uploadLimit(interop: Record<string, unknown> | undefined): number | undefined {
  const v = table(table(interop)['uploads'])['maxBytes']
  try {
    return typeof v === 'number' || typeof v === 'string' ? parseSize(v) : undefined
  } catch {
    return undefined // interop's own config validation reports it
  }
}

/** A service section of the node config (passed through; the service's schema validates it). */
type Section = Record<string, unknown>

const sectionOf = (cfg: NodeReloadable, name: 'passport' | 'registry' | 'index' | 'interop'): Section => cfg[name] ?? {}

/** The service-contract types of each hosted service, for the table below. */
type PassportEntry = ServiceEntry<import('@ron/passport').PassportConfig, import('@ron/passport').PassportRuntime>
type IndexEntry = ServiceEntry<import('@ron/index').IndexConfig, import('@ron/index').IndexRuntime>
type StorageEntry = ServiceEntry<import('@ron/storage').StorageConfig, import('@ron/storage').StorageRuntime>
type RegistryEntry = ServiceEntry<import('@ron/registry').RegistryServiceConfig, import('@ron/registry').RegistryRuntime>
type InteropEntry = ServiceEntry<import('@ron/interop').InteropConfigInput, import('@ron/interop').InteropRuntime>

const passport: PassportEntry = {
  load: async () => (await import('@ron/passport')).createPassportService,
  ownsAuth: true,
  async config(ctx) {
    const own = sectionOf(ctx.config, 'passport')
    const policy = table(own['policy'])
    // Service tokens carry storage:write with a maxBytes caveat; interop attenuates its upload
    // capabilities from them, so they must allow interop's largest upload.
    const uploads = uploadLimit(ctx.config.interop)
    // Passport's schema validates the section (a Section is any table: its keys meet their types there).
    const config: Section = {
      ...(uploads !== undefined && uploads > 1024 ** 3 ? { serviceWriteMaxBytes: uploads } : {}),
      ...own,
      ...(ctx.root === undefined ? {} : { dataDir: await dir(ctx, 'passport'), issuerKeyFile: ctx.file('keys', 'issuer.json') }),
      policy: {
        ...policy,
        callers: {
          // The policy only narrows what a caller's own token grants (SPEC §5): the admin token's
          // holder issues at most the admin token's authority; this node's service tokens carry at
          // most the service-call scopes (never *, passport:* or node:admin).
          admin: { scopes: ['*'], audiences: ['*'] },
          [`node:${ctx.nodeId}`]: { scopes: [...SERVICE_CALL_SCOPES], audiences: ['storage', 'index'] },
          ...table(policy['callers']),
        },
      },
    }
    return config
  },
  // A cluster on etcd shares revocations, key sets and enrolments there (SPEC §6c).
  runtime: async (ctx) => (ctx.etcd === undefined ? {} : { cluster: (await import('./coordination/etcd-passport.js')).createEtcdPassportStore(ctx.etcd, ctx.nodeId) }),
  reload: (_ctx, cfg) => sectionOf(cfg, 'passport'),
}

const index: IndexEntry = {
  load: async () => (await import('@ron/index')).createIndexService,
  config: async (ctx) => ({
    ...indexSection(ctx, ctx.config),
    nodeId: ctx.nodeId,
    ...(ctx.amnesia ? { amnesia: true } : { dataDir: await dir(ctx, 'index') }),
  }),
  // Name records are signed with the node key; peers' answers and announcements are checked
  // against the pinned nodes only (SPEC §5 "Peers", §6a). A cluster on etcd binds names there,
  // with compare-and-set (SPEC §6c).
  runtime: async (ctx) => (ctx.etcd === undefined ? {} : { nameStore: await (await import('./coordination/etcd-names.js')).openEtcdNameStore(ctx.etcd) }),
  reload: indexSection,
}

const storage: StorageEntry = {
  load: async () => (await import('@ron/storage')).createStorageService,
  config: async (ctx) => ({
    ...storageSection(ctx, ctx.config),
    ...(ctx.root === undefined ? {} : { dataDir: ctx.file('storage') }),
    nodeId: ctx.nodeId,
    advertise: ctx.url('storage'),
    // Peers are named by their node ids (routed by the node transport to the pinned peer's
    // storage URL), so this node names itself by its id too: every node computes one placement.
    placementName: ctx.nodeId,
    ...(ctx.hosted.has('index') ? { announce: { target: 'index' } } : {}),
  }),
  runtime: async (ctx) => ({ peerKeys: { peers: ctx.peers.keySource() } }),
  reload: storageSection,
}

const registry: RegistryEntry = {
  load: async () => (await import('@ron/registry')).createRegistryService,
  async config(ctx) {
    const reg = await import('@ron/registry')
    const own = sectionOf(ctx.config, 'registry')
    const dataDir = await dir(ctx, 'registry')
    let signers: import('@ron/registry').RegistryServiceConfig['signers']
    if (dataDir === undefined) {
      const key = reg.generateSignerKey(ctx.nodeId)
      signers = { threshold: 1, signers: [{ id: key.id, publicKey: key.publicKey }] }
    } else {
      signers = (await reg.initRegistrySigner(dataDir, ctx.nodeId)).signers
    }
    // On etcd, the node that creates the cluster's log gives the genesis signer set (its own
    // signer, unless registry.signers names one); the others join the existing log.
    if (ctx.etcd !== undefined && own['signers'] === undefined && (await (await registryStore(ctx, ctx.etcd)).storedGenesis()) !== undefined) signers = undefined
    return { ...(signers === undefined ? {} : { signers }), ...own, ...(dataDir === undefined ? {} : { dataDir }) }
  },
  // The cluster's log on etcd (SPEC §6c).
  runtime: async (ctx) => (ctx.etcd === undefined ? {} : { store: await registryStore(ctx, ctx.etcd) }),
  reload: (_ctx, cfg) => sectionOf(cfg, 'registry'),
}

const interop: InteropEntry = {
  load: async () => (await import('@ron/interop')).createInteropService,
  async config(ctx) {
    const own = sectionOf(ctx.config, 'interop')
    const webhooks = table(own['webhooks'])
    const interopDir = await dir(ctx, 'interop')
    const secrets = await loadOrCreateWebhookSecrets(interopDir === undefined ? undefined : join(interopDir, 'webhook-secrets.json'))
    return {
      ...own,
      ...(ctx.amnesia ? { amnesia: true } : {}),
      // The webhook dedupe window (and the admin's credentials) survive a restart (amnesia: memory only).
      ...(interopDir === undefined || ctx.amnesia ? {} : { dataDir: interopDir }),
      webhooks: {
        ...webhooks,
        providers: { ...Object.fromEntries(Object.entries(secrets).map(([p, s]) => [p, { secrets: [s] }])), ...table(webhooks['providers']) },
      },
    }
  },
  runtime: async () => ({}),
  reload: (_ctx, cfg) => sectionOf(cfg, 'interop'),
}

/** The registry's log store on etcd, one per creation (its config step reads the genesis, its runtime step hands it over). */
const etcdLogStores = new WeakMap<ServiceContext, Promise<RegistryEntryStore>>()
type RegistryEntryStore = ReturnType<typeof import('./coordination/etcd-log.js').createEtcdLogStore>
function registryStore(ctx: ServiceContext, etcd: EtcdCoordinator): Promise<RegistryEntryStore> {
  let store = etcdLogStores.get(ctx)
  if (store === undefined) {
    const segmentEntries = sectionOf(ctx.config, 'registry')['segmentEntries']
    store = import('./coordination/etcd-log.js').then(({ createEtcdLogStore }) => createEtcdLogStore(etcd, { nodeId: ctx.nodeId, ...(typeof segmentEntries === 'number' ? { segmentEntries } : {}) }))
    etcdLogStores.set(ctx, store)
  }
  return store
}

/** `v` when it is a plain object (a section's sub-table), else `{}`. */
function table(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...v } : {}
}

/** The index section with the accepted peers' index URLs as its peer targets. */
function indexSection(ctx: ServiceContext, cfg: NodeReloadable): Section {
  const own = sectionOf(cfg, 'index')
  return { ...own, peers: { targets: peerIndexes(ctx), ...table(own['peers']) } }
}

/** The storage section with replication sized for the peers known right now. */
function storageSection(ctx: ServiceContext, cfg: NodeReloadable): Section {
  return { ...storageSettings(cfg.storage), ...replication(ctx, cfg.storage) }
}

/** Every service a node can host, and how: data, driven by `startNode` in {@link CREATE_ORDER}. */
export const FACTORIES: { readonly [K in ServiceName]: ServiceFactory } = {
  passport: hostedBy(passport),
  index: hostedBy(index),
  storage: hostedBy(storage),
  registry: hostedBy(registry),
  interop: hostedBy(interop),
}

/** The order services are created in (each only needs those before it). */
export const CREATE_ORDER: readonly ServiceName[] = ['passport', 'index', 'storage', 'registry', 'interop']

/**
 * What a service's creation waits for besides passport (which every service waits for): storage
 * announces what it holds to the index from its start, so the index is mounted first.
 */
export const CREATE_AFTER: Partial<Record<ServiceName, readonly ServiceName[]>> = { storage: ['index'] }

/** The index URLs of the accepted peers (a refused or unpinned peer is never asked). */
function peerIndexes(ctx: ServiceContext): string[] {
  return ctx.peers.serviceUrls('index')
}

/** A service's creation error as a CliError: config errors are usage errors naming the service. */
export function creationError(name: string, e: unknown): unknown {
  if (e instanceof ConfigError || isRonError(e, 'Malformed')) {
    return new CliError(`invalid ${name} config: ${(e as Error).message}`, ExitCode.Usage, { cause: e })
  }
  return e
}
