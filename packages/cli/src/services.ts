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
import {
  ConfigError,
  SERVICE_CALL_SCOPES,
  isRonError,
  parseSize,
  type Clock,
  type KeySource,
  type Logger,
  type NodeDirectory,
  type NodeIdentity,
  type RonService,
  type TokenProvider,
  type TokenVerifier,
} from '@ron/core'
import type { PassportConfig } from '@ron/passport'
import { CliError, ExitCode } from './exit-codes.js'
import { writeSecret } from './keys.js'
import type { EtcdCoordinator } from './coordination/etcd.js'
import type { NodeTransport } from './node-transport.js'
import type { PeerDirectory } from './peers.js'
import type { ServiceName } from './ports.js'

/** Storage settings of a node (the JSON-safe subset of storage's options ron-node exposes). */
export interface NodeStorageOptions {
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

/** What can change on a running node (`reload()`, SIGHUP, `POST /admin/reload`). */
export interface NodeReloadable {
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
  drainDeadlineMs: number
  clock: Clock
  url: (name: ServiceName) => string
  hosted: ReadonlySet<ServiceName>
  /** Current reloadable settings (file/env/flags). */
  config: NodeReloadable
  /** Origins the services let write cross-origin (the node's admin origin, for the dashboard). */
  writeOrigins: string[]
  /** The path of a file in the data directory (undefined in amnesia mode). */
  file(...parts: string[]): string | undefined
  /** The node's etcd connection when the cluster coordinates on etcd (SPEC §6c). */
  etcd?: EtcdCoordinator
}

/** Creates one service; optionally says what its `reload()` gets. */
export interface ServiceFactory {
  create(ctx: ServiceContext): Promise<RonService>
  reloadPartial?(ctx: ServiceContext, cfg: NodeReloadable): unknown
}

/** Storage settings → storage options (JSON-safe). */
export function storageSettings(s: NodeStorageOptions | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (s === undefined) return out
  for (const k of ['maxObjectBytes', 'chunkSize', 'publicReads', 'workQueue', 'getConcurrency', 'writers', 'writeQuorum', 'rf'] as const) {
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

const cors = (ctx: ServiceContext): { cors: { readOrigins: '*'; writeOrigins: string[] } } => ({ cors: { readOrigins: '*', writeOrigins: ctx.writeOrigins } })

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
  const v = (interop as { uploads?: { maxBytes?: unknown } } | undefined)?.uploads?.maxBytes
  try {
    return typeof v === 'number' || typeof v === 'string' ? parseSize(v) : undefined
  } catch {
    return undefined // interop's own config validation reports it
  }
}

/** Every service a node can host, and how. */
export const FACTORIES: Record<ServiceName, ServiceFactory> = {
  passport: {
    async create(ctx) {
      const { createPassportService } = await import('@ron/passport')
      const own = (ctx.config.passport ?? {}) as { policy?: { callers?: Record<string, unknown> } & Record<string, unknown> } & Record<string, unknown>
      // Service tokens carry storage:write with a maxBytes caveat; interop attenuates its upload
      // capabilities from them, so they must allow interop's largest upload.
      const uploads = uploadLimit(ctx.config.interop)
      // A cluster on etcd shares revocations, key sets and enrolments there (SPEC §6c).
      const cluster = ctx.etcd === undefined ? undefined : (await import('./coordination/etcd-passport.js')).createEtcdPassportStore(ctx.etcd, ctx.nodeId)
      return createPassportService(
        {
          ...(uploads !== undefined && uploads > 1024 ** 3 ? { serviceWriteMaxBytes: uploads } : {}),
          // The node's CORS and drain deadline; the [passport] section (its http.* limits
          // included) overrides them.
          ...cors(ctx),
          drainDeadlineMs: ctx.drainDeadlineMs,
          ...own,
          ...(ctx.root === undefined ? {} : { dataDir: await dir(ctx, 'passport'), issuerKeyFile: ctx.file('keys', 'issuer.json') }),
          policy: {
            ...(own.policy ?? {}),
            callers: {
              // The policy only narrows what a caller's own token grants (SPEC §5): the admin token's
              // holder issues at most the admin token's authority; this node's service tokens carry at
              // most the service-call scopes (never *, passport:* or node:admin).
              admin: { scopes: ['*'], audiences: ['*'] },
              [`node:${ctx.nodeId}`]: { scopes: [...SERVICE_CALL_SCOPES], audiences: ['storage', 'index'] },
              ...(own.policy?.callers ?? {}),
            },
          },
        } as PassportConfig,
        ctx.transport,
        // The service contract's runtime argument (docs/service-contract.md).
        { logger: ctx.logger, clock: ctx.clock, identity: ctx.identity, nodes: ctx.nodes, ...(cluster === undefined ? {} : { cluster }) },
      )
    },
  },
  index: {
    async create(ctx) {
      const { createIndexService } = await import('@ron/index')
      // A cluster on etcd binds names there, with compare-and-set (SPEC §6c).
      const nameStore = ctx.etcd === undefined ? undefined : await (await import('./coordination/etcd-names.js')).openEtcdNameStore(ctx.etcd)
      return createIndexService(
        {
          ...(ctx.config.index ?? {}),
          nodeId: ctx.nodeId,
          ...(ctx.amnesia ? { amnesia: true } : { dataDir: await dir(ctx, 'index') }),
          peers: { targets: peerIndexes(ctx), ...(((ctx.config.index ?? {}) as { peers?: object }).peers ?? {}) },
          // The dashboard sets and removes names from the admin origin, with the token pasted into it.
          ...cors(ctx),
          drainDeadlineMs: ctx.drainDeadlineMs,
        },
        ctx.transport,
        // The service contract's runtime argument (docs/service-contract.md). Name records are
        // signed with the node key; peers' answers and announcements are checked against the
        // pinned nodes only (SPEC §5 "Peers", §6a).
        { auth: { verifier: ctx.verifier }, identity: ctx.identity, nodes: ctx.nodes, logger: ctx.logger, clock: ctx.clock, ...(nameStore === undefined ? {} : { nameStore }) },
      )
    },
    reloadPartial: (ctx, cfg) => ({ ...(cfg.index ?? {}), peers: { targets: peerIndexes(ctx), ...(((cfg.index ?? {}) as { peers?: object }).peers ?? {}) } }),
  },
  storage: {
    async create(ctx) {
      const { createStorageService } = await import('@ron/storage')
      return createStorageService(
        {
          ...storageSettings(ctx.config.storage),
          ...replication(ctx, ctx.config.storage),
          ...(ctx.root === undefined ? {} : { dataDir: ctx.file('storage') }),
          nodeId: ctx.nodeId,
          advertise: ctx.url('storage'),
          // Peers are named by their node ids (routed by the node transport to the pinned peer's
          // storage URL), so this node names itself by its id too: every node computes one placement.
          placementName: ctx.nodeId,
          ...(ctx.hosted.has('index') ? { announce: { target: 'index' } } : {}),
          ...cors(ctx),
          drainDeadlineMs: ctx.drainDeadlineMs,
        },
        ctx.transport,
        // The service contract's runtime argument (docs/service-contract.md).
        { auth: { verifier: ctx.verifier }, peerKeys: { peers: ctx.peers.keySource() }, tokens: ctx.tokens, logger: ctx.logger, clock: ctx.clock, identity: ctx.identity, nodes: ctx.nodes },
      )
    },
    reloadPartial: (ctx, cfg) => ({ ...storageSettings(cfg.storage), ...replication(ctx, cfg.storage) }),
  },
  registry: {
    async create(ctx) {
      const reg = await import('@ron/registry')
      const own = ctx.config.registry ?? {}
      let signers: unknown
      const dataDir = await dir(ctx, 'registry')
      if (dataDir === undefined) {
        const key = reg.generateSignerKey(ctx.nodeId)
        signers = { threshold: 1, signers: [{ id: key.id, publicKey: key.publicKey }] }
      } else {
        signers = (await reg.initRegistrySigner(dataDir, ctx.nodeId)).signers
      }
      let store: import('@ron/registry').LogStore | undefined
      if (ctx.etcd !== undefined) {
        // The cluster's log on etcd: the node that creates it gives the genesis signer set (its
        // own signer, unless registry.signers names one); the others join the existing log.
        const { createEtcdLogStore } = await import('./coordination/etcd-log.js')
        const etcdStore = createEtcdLogStore(ctx.etcd, { nodeId: ctx.nodeId, ...(typeof own['segmentEntries'] === 'number' ? { segmentEntries: own['segmentEntries'] } : {}) })
        if ((await etcdStore.storedGenesis()) !== undefined && own['signers'] === undefined) signers = undefined
        store = etcdStore
      }
      return reg.createRegistryService(
        {
          ...(signers === undefined ? {} : { signers }),
          ...own,
          ...(dataDir === undefined ? {} : { dataDir }),
          ...cors(ctx),
          drainDeadlineMs: ctx.drainDeadlineMs,
        } as import('@ron/registry').RegistryServiceConfig,
        ctx.transport,
        // The service contract's runtime argument (docs/service-contract.md).
        { auth: { verifier: ctx.verifier }, logger: ctx.logger, clock: ctx.clock, ...(store === undefined ? {} : { store }) },
      )
    },
    reloadPartial: (_ctx, cfg) => cfg.registry ?? {},
  },
  interop: {
    async create(ctx) {
      const { createInteropService } = await import('@ron/interop')
      const own = (ctx.config.interop ?? {}) as { webhooks?: { providers?: Record<string, unknown> } & Record<string, unknown>; cors?: { readOrigins?: '*' | string[]; writeOrigins?: string[] } } & Record<string, unknown>
      const interopDir = await dir(ctx, 'interop')
      const secrets = await loadOrCreateWebhookSecrets(interopDir === undefined ? undefined : join(interopDir, 'webhook-secrets.json'))
      return createInteropService(
        {
          // The node's settings (the service contract's base keys): the drain deadline unless the
          // [interop] section sets one; CORS below, with the node's admin origin always allowed to write.
          drainDeadlineMs: ctx.drainDeadlineMs,
          ...own,
          ...(ctx.amnesia ? { amnesia: true } : {}),
          // The webhook dedupe window (and the admin's credentials) survive a restart (amnesia: memory only).
          ...(interopDir === undefined || ctx.amnesia ? {} : { dataDir: interopDir }),
          webhooks: {
            ...(own.webhooks ?? {}),
            providers: { ...Object.fromEntries(Object.entries(secrets).map(([p, s]) => [p, { secrets: [s] }])), ...(own.webhooks?.providers ?? {}) },
          },
          cors: { readOrigins: own.cors?.readOrigins ?? '*', writeOrigins: [...ctx.writeOrigins, ...(own.cors?.writeOrigins ?? [])] },
        },
        ctx.transport,
        // The runtime argument: the node's verifier guards the admin routes (interop:admin).
        { auth: { verifier: ctx.verifier }, tokens: ctx.tokens, logger: ctx.logger, clock: ctx.clock, identity: ctx.identity, nodes: ctx.nodes },
      )
    },
    reloadPartial: (_ctx, cfg) => cfg.interop ?? {},
  },
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
