/**
 * Config of the storage service: ONE zod schema spreading core's base keys (`http.*`, `cors`,
 * `drainDeadlineMs`, `drainReadWindowMs`: the service contract, docs/service-contract.md) with
 * storage's own, and the keys a reload may not change right next to it. The option types are
 * derived from it (`z.input` for what callers write, `z.output` for the resolved form); it is
 * validated through core's {@link validateConfig} (a {@link ConfigError} naming the key path).
 * It is data only — what a config file may hold; durations and sizes may also be written `"5s"`,
 * `"64KiB"`. Injected objects (backend, peer keys, tokens, clock, logger…) are the factory's third
 * argument, {@link StorageRuntime}.
 *
 * @module
 */

import { z } from 'zod'
import { BASE_IMMUTABLE_KEYS, NODE_ID_PATTERN, blake3, durationSchema, serviceBaseShape, sizeSchema, validateConfig } from '@ron/core'
import type { KeySource, OutgoingTokens, ServiceRuntime } from '@ron/core'
import type { BlobStore } from './store/types.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

const positiveInt = z.number().int().positive()

/** The endpoint of a storage that says nothing about itself: its target name on a MemoryTransport. */
const DEFAULT_ADVERTISE = 'storage'

/** A stable node id for a storage without one: `n` + 16 hex digits of BLAKE3 over its placement name. */
function derivedNodeId(placementName: string): string {
  return `n${Buffer.from(blake3(new TextEncoder().encode(`ron:storage-node-id:v1\n${placementName}`))).toString('hex').slice(0, 16)}`
}
/** A duration (ms, or `"5s"`) that must be positive. */
const positiveMs = durationSchema.refine((n) => n > 0, 'expected a positive duration')
const positiveBytes = sizeSchema.refine((n) => n > 0, 'expected a positive size')

/** Repair planner and worker settings. */
const repairSchema = z.strictObject({
  /** How often the planner diffs what should exist against what does. @default 30000 */
  intervalMs: positiveMs.default(30_000),
  /** Global byte budget of all repair workers together (token bucket refill), bytes/s. @default 50 MiB */
  bytesPerSec: positiveBytes.default(50 * MiB),
  /** Token bucket capacity: bytes that may move at once after an idle period. @default 4 MiB */
  burst: positiveBytes.default(4 * MiB),
  /** Number of repair worker tasks. @default 2 */
  workers: positiveInt.default(2),
  /** Capacity of the `repair` queue between planner and workers. @default 256 */
  queue: positiveInt.default(256),
  /** Deadline for one HEAD probe of a peer while planning. @default 2000 */
  probeTimeoutMs: positiveMs.default(2000),
  /** Run the planner on a timer. Tests turn it off and call `runRepair()`. @default true */
  auto: z.boolean().default(true),
})

/** Index announcement settings. */
const announceSchema = z.strictObject({
  /** Transport target of the index service (a name or a URL); absent → announcements are off. */
  target: z.string().min(1).optional(),
  /** TTL of an announcement, in seconds. @default 3600 */
  ttlSec: positiveInt.default(3600),
  /** Period of the full re-announcement of every local object. @default ttlSec * 1000 / 2 */
  intervalMs: positiveMs.optional(),
  /** Capacity of the announcement queue (drop-oldest). @default 1024 */
  queue: positiveInt.default(1024),
  /** Deadline of one announcement call. @default 1000 */
  timeoutMs: positiveMs.default(1000),
})

/** Write-readiness settings. */
const writeReadinessSchema = z.strictObject({
  /** Below this many free bytes the node turns write-unready. @default 64 MiB */
  minFreeBytes: sizeSchema.default(64 * MiB),
  /** How often `store.probe()` runs (readiness recovers by itself on the next good probe). @default 5000 */
  probeIntervalMs: positiveMs.default(5000),
  /** A put whose commit (end of body → durable) takes longer than this marks the disk slow. @default 5000 */
  slowPutMs: positiveMs.default(5000),
})

/**
 * The JSON-safe options (what a config file may set). Every field is optional; defaults are
 * filled in by parsing. Durations accept ms or `"5s"`, sizes bytes or `"64KiB"`.
 */
export const storageConfigSchema = z.strictObject({
  // The base keys (core): http.* limits, cors, drainDeadlineMs, drainReadWindowMs. Storage's
  // uploads are long: a slower minimum rate is allowed over a longer window than core's default.
  ...serviceBaseShape({ http: { minBytesPerSec: 8 * KiB, rateWindowMs: 30_000 } }),
  /** Service id: the `aud` tokens must name and the `service` metric label. @default 'storage' */
  id: z.string().min(1).default('storage'),
  /** Service version reported by /version. @default this package's version (its package.json) */
  version: z.string().optional(),
  /** Directory of the filesystem backend. Absent (and no `backend`) → memory backend. */
  dataDir: z.string().min(1).optional(),
  /** Chunk size of integrity data for new objects. @default 64 KiB */
  chunkSize: sizeSchema.refine((n) => n >= 1024 && n <= 16 * MiB, 'expected a size between 1 KiB and 16 MiB').default(64 * KiB),
  /** Largest object accepted by PUT (decoded bytes). @default 16 GiB */
  maxObjectBytes: sizeSchema.default(16 * GiB),
  /** GET/HEAD of objects (and their status) without a token. @default true */
  publicReads: z.boolean().default(true),
  /**
   * This node's id, `n` + 16 lowercase hex digits (SPEC §5): the `node` of its announcements (and
   * the `sub: node:<id>` of the tokens its host's provider mints for it).
   * @default derived from `placementName`: `n` + the first 16 hex digits of its BLAKE3 hash, so an
   *   embedded storage keeps one id across restarts
   */
  nodeId: z.string().regex(NODE_ID_PATTERN, 'expected a node id: n + 16 lowercase hex digits (e.g. n3f9c0a1b2c3d4e5f)').optional(),
  /**
   * The storage URL (or, on a `MemoryTransport`, the transport name) peers and the index reach
   * this node at: announced as the provider `endpoint`.
   * @default 'storage'
   */
  advertise: z.string().min(1).optional(),
  /**
   * This node's name in placement: the string its peers list it by in their `peers` (their
   * transport target for it), the same on every node so that all compute the same placement.
   * `ron-node` names nodes by their node ids and routes those ids to the pinned peers.
   * @default advertise
   */
  placementName: z.string().min(1).optional(),
  /**
   * The other storage nodes: transport targets, spelled exactly as each of them names itself in
   * placement (`placementName`, by default its `advertise`), so every node computes the same
   * placement. This node's own entry, if listed, is ignored. @default []
   */
  peers: z.array(z.string().min(1)).default([]),
  /** Copies kept of every object. @default 2 with peers, 1 alone */
  rf: positiveInt.optional(),
  /** Durable copies before a PUT is acknowledged (1 = local only). @default 1 */
  writeQuorum: positiveInt.default(1),
  /** Deadline of one replica write to a peer. @default 30000 */
  peerTimeoutMs: positiveMs.default(30_000),
  /** Capacity of the asynchronous replication queue (overflow: shed, the planner catches up). @default 1024 */
  replicationQueue: positiveInt.default(1024),
  /** Repair planner and workers. */
  repair: repairSchema.prefault({}),
  /** Announcements to the index service. */
  announce: announceSchema.prefault({}),
  /** Write readiness. */
  writeReadiness: writeReadinessSchema.prefault({}),
  /** Capacity of the `work` queue where reads and uploads wait for a slot; full → 429 Busy. @default 512 */
  workQueue: positiveInt.default(512),
  /** Concurrent GET/HEAD/status requests. @default 16 */
  getConcurrency: positiveInt.default(16),
  /**
   * Concurrent uploads being written: sized for the disk (fsync-bound), not the CPU count. Further
   * uploads wait in the `work` queue. @default 32
   */
  writers: positiveInt.default(32),
  /** Concurrent uploads being written per principal (token `sub`). @default half of `writers` (at least 1) */
  writersPerPrincipal: positiveInt.optional(),
})

/**
 * Config keys a reload may not change (SPEC.md 3.3b): core's {@link BASE_IMMUTABLE_KEYS} and
 * storage's own that shape the store, placement, queues and tasks.
 */
export const STORAGE_IMMUTABLE_KEYS = [
  ...BASE_IMMUTABLE_KEYS,
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
] as const

/**
 * {@link storageConfigSchema} with the cross-field rules and derived defaults: `rf` needs enough
 * peers, `writeQuorum` ≤ `rf`; this node is dropped from its own peer list; `rf`, `advertise`,
 * `writersPerPrincipal`, `http.maxBodiesPerPrincipal` and `announce.intervalMs` get their
 * computed defaults. The host validates every config and reload with it.
 */
export const resolvedStorageConfigSchema = storageConfigSchema
  .superRefine((o, ctx) => {
    const self = o.placementName ?? o.advertise ?? DEFAULT_ADVERTISE
    const peers = o.peers.filter((p) => p !== self)
    const rf = o.rf ?? (peers.length > 0 ? 2 : 1)
    if (rf > peers.length + 1) ctx.addIssue({ code: 'custom', path: ['rf'], message: `${rf} copies need at least ${rf - 1} peers` })
    if (o.writeQuorum > rf) ctx.addIssue({ code: 'custom', path: ['writeQuorum'], message: `${o.writeQuorum} exceeds rf ${rf}` })
  })
  .transform((o) => {
    // A node listed among its own peers (one shared peer list for the whole cluster) is itself.
    const advertise = o.advertise ?? DEFAULT_ADVERTISE
    const self = o.placementName ?? advertise
    const peers = [...new Set(o.peers.filter((p) => p !== self))]
    const nodeId = o.nodeId ?? derivedNodeId(self)
    const placementName = self
    const writersPerPrincipal = o.writersPerPrincipal ?? Math.max(1, Math.floor(o.writers / 2))
    // A principal's uploads are read only once they hold a writer: never refuse one that does.
    const http = { ...o.http, maxBodiesPerPrincipal: o.http.maxBodiesPerPrincipal ?? Math.max(16, writersPerPrincipal) }
    return {
      ...o,
      peers,
      rf: o.rf ?? (peers.length > 0 ? 2 : 1),
      nodeId,
      advertise,
      placementName,
      writersPerPrincipal,
      http,
      announce: { ...o.announce, intervalMs: o.announce.intervalMs ?? (o.announce.ttlSec * 1000) / 2 },
    }
  })

/**
 * The injected objects of {@link createStorageService} (its third argument): core's
 * {@link ServiceRuntime} (clock, random, logger, metrics sink, `auth`, outgoing `tokens`) plus
 * storage's own.
 */
export interface StorageRuntime extends ServiceRuntime {
  /** A backend to use instead of creating one. The service does not close a backend it was given. @default fs (with `dataDir`) or memory */
  backend?: BlobStore
  /**
   * Issuer keys of the peers, accepted for `storage:replicate` ONLY (replica writes and repair
   * pushes), keyed by peer. A token signed by one of these keys for any other scope is refused.
   * @default {}
   */
  peerKeys?: Record<string, KeySource>
}

/** The runtime keys a config from before the runtime argument may still carry. */
export const STORAGE_RUNTIME_KEYS = ['clock', 'random', 'logger', 'metrics', 'auth', 'tokens', 'identity', 'nodes', 'backend', 'peerKeys'] as const

/**
 * A source of short-lived bearer tokens for outgoing calls: core's `createTokenProvider(...)`
 * fits as is (it caches per audience and scopes and renews at two thirds of a token's life).
 */
export type { OutgoingTokens }

/** The config as a caller or a config file writes it: every field optional. */
export type StorageConfig = z.input<typeof storageConfigSchema>

/**
 * Runtime objects inside the config, as `createStorageService` took them before its third
 * argument. Still accepted (they are split out, and the runtime argument wins); each is deprecated.
 */
export interface DeprecatedRuntimeInConfig {
  /** @deprecated Pass it in the runtime argument: `createStorageService(config, transport, { auth })`. */
  auth?: StorageRuntime['auth']
  /** @deprecated Pass it in the runtime argument. */
  tokens?: StorageRuntime['tokens']
  /** @deprecated Pass it in the runtime argument. */
  peerKeys?: StorageRuntime['peerKeys']
  /** @deprecated Pass it in the runtime argument. */
  backend?: StorageRuntime['backend']
  /** @deprecated Pass it in the runtime argument. */
  clock?: StorageRuntime['clock']
  /** @deprecated Pass it in the runtime argument. */
  random?: StorageRuntime['random']
  /** @deprecated Pass it in the runtime argument. */
  logger?: StorageRuntime['logger']
}

/**
 * What `createStorageService` accepts as its first argument: the config, and (deprecated) the
 * runtime objects it carried before the runtime argument existed.
 */
export type StorageServiceOptions = StorageConfig & DeprecatedRuntimeInConfig

/** The config with every default filled in (the host's snapshot, `host.config.get()`). */
export type ResolvedStorageConfig = z.output<typeof resolvedStorageConfigSchema>

/**
 * Validates `config` and fills in the defaults.
 * @throws {@link ConfigError} (code `Malformed`) naming the offending key path in `details.path`,
 *   also when `rf` exceeds the number of nodes or `writeQuorum` exceeds `rf`.
 * @internal
 */
export function resolveConfig(config: StorageConfig = {}): ResolvedStorageConfig {
  return validateConfig(resolvedStorageConfigSchema, config)
}
