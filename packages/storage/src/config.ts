/**
 * Options of the storage service, validated strictly with zod (unknown keys are rejected, the
 * message names the key). Every field is optional; defaults are resolved by {@link resolveOptions}.
 *
 * @module
 */

import { z } from 'zod'
import { MalformedError } from '@ron/core'
import type { Clock, KeySource, Logger, Random, TokenVerifier } from '@ron/core'
import type { BlobStore } from './store/types.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

/** Repair planner and worker settings. */
export interface RepairOptions {
  /** How often the planner diffs what should exist against what does. @default 30000 */
  intervalMs?: number
  /** Global byte budget of all repair workers together (token bucket refill). @default 52428800 (50 MiB/s) */
  bytesPerSec?: number
  /** Token bucket capacity: bytes that may move at once after an idle period. @default 4194304 (4 MiB) */
  burst?: number
  /** Number of repair worker tasks. @default 2 */
  workers?: number
  /** Capacity of the `repair` queue between planner and workers. @default 256 */
  queue?: number
  /** Deadline for one HEAD probe of a peer while planning. @default 2000 */
  probeTimeoutMs?: number
  /** Run the planner on a timer. Tests turn it off and call `runRepair()`. @default true */
  auto?: boolean
}

/** Index announcement settings. */
export interface AnnounceOptions {
  /** Transport target of the index service; no target → announcements are off. @default undefined */
  target?: string
  /** TTL of an announcement, in seconds. @default 3600 */
  ttlSec?: number
  /** Period of the full re-announcement of every local object. @default ttlSec * 1000 / 2 */
  intervalMs?: number
  /** Capacity of the announcement queue (drop-oldest). @default 1024 */
  queue?: number
  /** Deadline of one announcement call. @default 1000 */
  timeoutMs?: number
  /** Bearer token for the index (e.g. scope `index:announce`). @default peerToken */
  token?: string
}

/** Write-readiness settings. */
export interface WriteReadinessOptions {
  /** Below this many free bytes the node turns write-unready. @default 67108864 (64 MiB) */
  minFreeBytes?: number
  /** How often `store.probe()` runs (readiness recovers by itself on the next good probe). @default 5000 */
  probeIntervalMs?: number
  /** A put whose commit (end of body → durable) takes longer than this marks the disk slow. @default 5000 */
  slowPutMs?: number
}

/**
 * Options of {@link createStorageService}. All optional.
 *
 * @example
 * ```ts
 * const svc = await createStorageService({ dataDir: './data', peers: ['storage-b'], peerToken }, transport)
 * ```
 */
export interface StorageServiceOptions {
  /** Service id: the `aud` tokens must name and the `service` metric label. @default 'storage' */
  id?: string
  /** Directory of the filesystem backend. Absent (and no `backend`) → memory backend. @default undefined */
  dataDir?: string
  /** A backend to use instead of creating one. The service does not close a backend it was given. @default undefined */
  backend?: BlobStore
  /** Chunk size of integrity data for new objects. @default 65536 */
  chunkSize?: number
  /** Largest object accepted by PUT. @default 17179869184 (16 GiB) */
  maxObjectBytes?: number
  /** GET/HEAD of objects (and their status) without a token. @default true */
  publicReads?: boolean
  /** This node's transport name, so peers know where copies are. @default 'storage' */
  nodeId?: string
  /** Transport target names of the other storage nodes. @default [] */
  peers?: string[]
  /** Copies kept of every object. @default 2 with peers, 1 alone */
  rf?: number
  /** Durable copies before a PUT is acknowledged (1 = local only). @default 1 */
  writeQuorum?: number
  /** Bearer token (scope `storage:write`, aud the service id) used for writes to peers. @default undefined */
  peerToken?: string
  /** Deadline of one replica write to a peer. @default 30000 */
  peerTimeoutMs?: number
  /** Capacity of the asynchronous replication queue (overflow: shed, the planner catches up). @default 1024 */
  replicationQueue?: number
  /** Repair planner and workers. */
  repair?: RepairOptions
  /** Announcements to the index service. */
  announce?: AnnounceOptions
  /** Write readiness. */
  writeReadiness?: WriteReadinessOptions
  /** Capacity of the `work` queue in front of the GET/PUT pools. @default 512 */
  workQueue?: number
  /** GET/HEAD workers of the work pool. @default 16 */
  getConcurrency?: number
  /** PUT workers of the work pool; more PUTs in flight → 429 Busy. @default 8 */
  putConcurrency?: number
  /** How long close() lets in-flight requests finish. @default 3000 */
  drainDeadlineMs?: number
  /** Token verification (no auth → every write route answers 401). @default undefined */
  auth?: { verifier?: TokenVerifier; keys?: KeySource | { keys: unknown[] } }
  /** Injectable clock. @default systemClock */
  clock?: Clock
  /** Injectable randomness. @default systemRandom */
  random?: Random
  /** Logger (pino-compatible). @default noopLogger */
  logger?: Logger
  /** Service version reported by /version. @default '0.1.0' */
  version?: string
}

const positiveInt = z.number().int().positive()
const nonNegInt = z.number().int().nonnegative()
const anyObject = z.custom<object>((v) => typeof v === 'object' && v !== null, 'expected an object')

/** The zod schema of {@link StorageServiceOptions} (strict). */
export const storageOptionsSchema = z
  .object({
    id: z.string().min(1).optional(),
    dataDir: z.string().min(1).optional(),
    backend: anyObject.optional(),
    chunkSize: positiveInt.min(1024).max(16 * MiB).optional(),
    maxObjectBytes: nonNegInt.optional(),
    publicReads: z.boolean().optional(),
    nodeId: z.string().min(1).optional(),
    peers: z.array(z.string().min(1)).optional(),
    rf: positiveInt.optional(),
    writeQuorum: positiveInt.optional(),
    peerToken: z.string().min(1).optional(),
    peerTimeoutMs: positiveInt.optional(),
    replicationQueue: positiveInt.optional(),
    repair: z
      .object({
        intervalMs: positiveInt.optional(),
        bytesPerSec: positiveInt.optional(),
        burst: positiveInt.optional(),
        workers: positiveInt.optional(),
        queue: positiveInt.optional(),
        probeTimeoutMs: positiveInt.optional(),
        auto: z.boolean().optional(),
      })
      .strict()
      .optional(),
    announce: z
      .object({
        target: z.string().min(1).optional(),
        ttlSec: positiveInt.optional(),
        intervalMs: positiveInt.optional(),
        queue: positiveInt.optional(),
        timeoutMs: positiveInt.optional(),
        token: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    writeReadiness: z
      .object({
        minFreeBytes: nonNegInt.optional(),
        probeIntervalMs: positiveInt.optional(),
        slowPutMs: positiveInt.optional(),
      })
      .strict()
      .optional(),
    workQueue: positiveInt.optional(),
    getConcurrency: positiveInt.optional(),
    putConcurrency: positiveInt.optional(),
    drainDeadlineMs: nonNegInt.optional(),
    auth: anyObject.optional(),
    clock: anyObject.optional(),
    random: anyObject.optional(),
    logger: anyObject.optional(),
    version: z.string().optional(),
  })
  .strict()

/** {@link StorageServiceOptions} with every default filled in. */
export interface ResolvedStorageOptions {
  id: string
  version: string
  dataDir: string | undefined
  backend: BlobStore | undefined
  chunkSize: number
  maxObjectBytes: number
  publicReads: boolean
  nodeId: string
  peers: string[]
  rf: number
  writeQuorum: number
  peerToken: string | undefined
  peerTimeoutMs: number
  replicationQueue: number
  repair: Required<RepairOptions>
  announce: Required<Omit<AnnounceOptions, 'target' | 'token'>> & { target: string | undefined; token: string | undefined }
  writeReadiness: Required<WriteReadinessOptions>
  workQueue: number
  getConcurrency: number
  putConcurrency: number
  drainDeadlineMs: number
}

/**
 * Validates `options` and fills in the defaults.
 * @throws {@link MalformedError} naming the offending key (details `{ field }`), also when
 *   `rf` exceeds the number of nodes or `writeQuorum` exceeds `rf`.
 */
export function resolveOptions(options: StorageServiceOptions = {}): ResolvedStorageOptions {
  const parsed = storageOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const keys = issue && 'keys' in issue && Array.isArray(issue.keys) ? issue.keys : []
    const path = [...(issue?.path ?? []), ...keys.slice(0, 1)].join('.')
    throw new MalformedError(`storage options: ${path || '(root)'}: ${issue?.message ?? 'invalid'}`, {
      details: { field: path },
    })
  }
  const nodeId = options.nodeId ?? 'storage'
  const peers = [...new Set((options.peers ?? []).filter((p) => p !== nodeId))]
  const rf = options.rf ?? (peers.length > 0 ? 2 : 1)
  if (rf > peers.length + 1) {
    throw new MalformedError(`storage options: rf: ${rf} copies need at least ${rf - 1} peers`, { details: { field: 'rf' } })
  }
  const writeQuorum = options.writeQuorum ?? 1
  if (writeQuorum > rf) {
    throw new MalformedError(`storage options: writeQuorum: ${writeQuorum} exceeds rf ${rf}`, {
      details: { field: 'writeQuorum' },
    })
  }
  const ttlSec = options.announce?.ttlSec ?? 3600
  return {
    id: options.id ?? 'storage',
    version: options.version ?? '0.1.0',
    dataDir: options.dataDir,
    backend: options.backend,
    chunkSize: options.chunkSize ?? 64 * KiB,
    maxObjectBytes: options.maxObjectBytes ?? 16 * GiB,
    publicReads: options.publicReads ?? true,
    nodeId,
    peers,
    rf,
    writeQuorum,
    peerToken: options.peerToken,
    peerTimeoutMs: options.peerTimeoutMs ?? 30_000,
    replicationQueue: options.replicationQueue ?? 1024,
    repair: {
      intervalMs: options.repair?.intervalMs ?? 30_000,
      bytesPerSec: options.repair?.bytesPerSec ?? 50 * MiB,
      burst: options.repair?.burst ?? 4 * MiB,
      workers: options.repair?.workers ?? 2,
      queue: options.repair?.queue ?? 256,
      probeTimeoutMs: options.repair?.probeTimeoutMs ?? 2000,
      auto: options.repair?.auto ?? true,
    },
    announce: {
      target: options.announce?.target,
      ttlSec,
      intervalMs: options.announce?.intervalMs ?? (ttlSec * 1000) / 2,
      queue: options.announce?.queue ?? 1024,
      timeoutMs: options.announce?.timeoutMs ?? 1000,
      token: options.announce?.token ?? options.peerToken,
    },
    writeReadiness: {
      minFreeBytes: options.writeReadiness?.minFreeBytes ?? 64 * MiB,
      probeIntervalMs: options.writeReadiness?.probeIntervalMs ?? 5000,
      slowPutMs: options.writeReadiness?.slowPutMs ?? 5000,
    },
    workQueue: options.workQueue ?? 512,
    getConcurrency: options.getConcurrency ?? 16,
    putConcurrency: options.putConcurrency ?? 8,
    drainDeadlineMs: options.drainDeadlineMs ?? 3000,
  }
}
