/**
 * Configuration of the index service: ONE strict zod schema with the seed's defaults. Types derive
 * from it (`IndexConfig` = input, `ResolvedIndexConfig` = output); validation goes through core's
 * `validateConfig`, so an invalid value throws a `ConfigError` naming the field.
 *
 * @module
 */

import { availableParallelism } from 'node:os'
import { z } from 'zod'
import { durationSchema, validateConfig } from '@ron/core'
import type { NameStore } from './store/types.js'
import type { Clock, CorsOptions, HttpLimits, KeySource, Logger, NodeDirectory, NodeIdentity, Random, TokenVerifier } from '@ron/core'

const positiveInt = z.number().int().positive()
const duration = durationSchema

/** Default number of resolver workers: `max(2, cores / 2)` (seed svc-index section 2). */
export const DEFAULT_RESOLVER_WORKERS = Math.max(2, Math.floor(availableParallelism() / 2))

/** Hedged peer lookup settings (seed section 5). */
const peersSchema = z
  .strictObject({
    /** Transport targets (names or base URLs) of the peer index services. */
    targets: z.array(z.string().min(1)).max(256).default([]),
    /** Peers queried in parallel first. */
    alpha: positiveInt.max(16).default(3),
    /** Further distinct peers queried after the hedge delay. */
    beta: z.number().int().nonnegative().max(16).default(2),
    /** Delay before the β peers are asked. */
    hedgeMs: duration.default(150),
    /** Use the observed p95 of peer answers (bounded by `hedgeMs` / 4 and `hedgeMs` * 4) instead of the fixed delay. */
    hedgeFromP95: z.boolean().default(false),
    /** Retries of one peer call on transient errors (attempts including the first). */
    tries: positiveInt.max(10).default(3),
    /** Lower bound of the jittered backoff between retries. */
    retryMinMs: duration.default(50),
    /** Upper bound of the jittered backoff between retries. */
    retryMaxMs: duration.default(100),
  })
  .refine((p) => p.retryMaxMs >= p.retryMinMs, { message: 'retryMaxMs must be at least retryMinMs', path: ['retryMaxMs'] })
  .prefault({})

/** Per-peer circuit breaker settings (seed section 5, *orig*). */
const breakerSchema = z
  .strictObject({
    /** Rolling window of the error ratio. */
    windowMs: duration.default(30_000),
    /** Error ratio that opens the breaker. */
    tripRatio: z.number().gt(0).max(1).default(0.5),
    /** Calls needed in the window before the breaker may open. */
    minCalls: positiveInt.default(5),
    /** Time open before probing. */
    cooldownMs: duration.default(10_000),
    /** Half-open probes that must all succeed to close. */
    halfOpenProbes: positiveInt.default(3),
  })
  .prefault({})

/** Cache settings (seed *orig*). */
const cacheSchema = z
  .strictObject({
    /** Lifetime of a positive answer. */
    ttlMs: duration.default(10_000),
    /** Entries of the positive cache. */
    maxEntries: positiveInt.default(100_000),
    /** Lifetime of a NotFound answer (jittered by ±`negativeJitter`). */
    negativeTtlMs: duration.default(2_000),
    /** Relative jitter of the negative TTL. */
    negativeJitter: z.number().min(0).max(0.9).default(0.2),
    /** Entries of the negative cache. */
    negativeMaxEntries: positiveInt.default(10_000),
  })
  .prefault({})

/**
 * The index service's configuration schema (strict: unknown keys are rejected). Every field has a
 * default; durations also accept strings like `"150ms"` or `"2s"`.
 */
export const indexConfigSchema = z.strictObject({
  /** Service id: the `aud` tokens must name and the `service` metric label. */
  id: z.string().min(1).default('index'),
  /** Reported by `/version`. @default this package's version (its package.json) */
  version: z.string().min(1).optional(),
  /** This node's id (reported in announcements of peers and logs). */
  nodeId: z.string().min(1).default('index'),
  /** Directory of the LMDB name store. Absent → names live in memory. Ignored in amnesia mode. */
  dataDir: z.string().min(1).optional(),
  /** Amnesia mode: nothing touches disk (memory name store); the janitor purges every `purgeIntervalMs`. */
  amnesia: z.boolean().default(false),
  /** Janitor period: expired cache entries and provider records are purged this often. */
  purgeIntervalMs: duration.default(30_000),
  /** Transport target of the storage service that holds manifests (checked on every name write). */
  storage: z.string().min(1).default('storage'),
  /** Deadline of one manifest fetch from storage. */
  storageTimeoutMs: duration.default(2_000),
  /** Largest manifest accepted, in bytes (SPEC §6a: a directory manifest may be 2 MiB). */
  maxManifestBytes: positiveInt.default(2 * 1024 * 1024),
  /** End-to-end budget of one resolve (seed I-4). */
  deadlineMs: duration.default(1_200),
  /** Providers returned by `/resolve` at most (and the upper bound of `/providers?limit=`). */
  maxProviders: positiveInt.max(32).default(32),
  /** Provider records kept at most (soft state; new announcements beyond this are refused with Busy). */
  maxProviderRecords: positiveInt.default(1_000_000),
  /** Largest `ttlSec` an announcement may ask for. */
  maxAnnounceTtlSec: positiveInt.default(86_400),
  /** How long the signed tombstone of a deleted name is kept (SPEC §6a): its home keeps counting `seq`, and peers learn the delete. */
  tombstoneTtlSec: positiveInt.default(7 * 86_400),
  /** While the disk refuses name writes (full, failing, read-only), the store janitor probes it this often; writes come back once a probe succeeds. */
  storeProbeMs: duration.default(1_000),
  /** Resolver workers consuming the `work` queue. */
  resolverWorkers: positiveInt.max(1024).default(DEFAULT_RESOLVER_WORKERS),
  /** Capacity of the `work` queue (full → 429 Busy). */
  workQueue: positiveInt.default(512),
  /**
   * Name writers consuming the `names` queue: name writes and deletes, which wait for the disk.
   * Writes in flight together share LMDB's commits and flushes, so more writers, more writes per
   * flush; none of them holds a resolver.
   */
  nameWriters: positiveInt.max(1024).default(16),
  /** Capacity of the `names` queue (full → 429 Busy). */
  nameQueue: positiveInt.default(256),
  /** Capacity of the `events` broadcast. */
  eventsCapacity: positiveInt.default(1024),
  /** Per-IP concurrent request cap. */
  maxConcurrentPerIp: positiveInt.default(256),
  /** Optional per-IP token bucket. */
  ratePerIp: z.strictObject({ capacity: positiveInt, refillPerSec: z.number().positive() }).optional(),
  /**
   * How long `close()` lets in-flight work finish before aborting it (fixed at start: not
   * reloadable). The seed's drain = min(request budget, 1–5 s) holds with the defaults: every job
   * ends by its own budget (`deadlineMs` for resolves, `storageTimeoutMs` for name writes) first.
   */
  drainDeadlineMs: duration.default(3_000),
  /** Period of the breaker janitor (gauges, pruning breakers of removed peers). */
  breakerJanitorMs: duration.default(1_000),
  /** Keys resolved once at start by the optional warm-up prefetcher. */
  warmupKeys: z.array(z.string().min(1)).max(1024).default([]),
  peers: peersSchema,
  breaker: breakerSchema,
  cache: cacheSchema,
})

/** Token verification options, as for every service host. */
export interface IndexAuthOptions {
  verifier?: TokenVerifier
  keys?: KeySource | { keys: unknown[] }
}

/** The runtime dependencies a service takes beside its (reloadable) data configuration. */
export interface IndexRuntimeOptions {
  /** Token verification. @default none: write routes answer 401 */
  auth?: IndexAuthOptions
  /** @default systemClock */
  clock?: Clock
  /** @default systemRandom */
  random?: Random
  /** @default noopLogger */
  logger?: Logger
  /** CORS of the host (SPEC §6b): reads from `readOrigins`, writes from `writeOrigins`. @default reads from any origin, no cross-origin writes */
  cors?: CorsOptions
  /** HTTP limits (timeouts, JSON body cap, decompression caps) of the host. @default the host's defaults */
  limits?: HttpLimits
  /**
   * This node's identity: the home of the names this index stores and the key that signs their
   * records (SPEC §6a). Must be the directory's own node when `nodes` is given.
   * @default an ephemeral identity (a fresh node id and key per start), as an amnesia node has
   */
  identity?: NodeIdentity
  /**
   * The nodes this index believes (SPEC §5 "Peers"): a peer's name answer counts only when it
   * verifies under the pinned key of the name's home in here, and an announcement's endpoint must
   * be a URL its node advertises in here.
   * @default none: no peer's name answer is believed, and endpoints may also be transport target names (embedded, in-process)
   */
  nodes?: NodeDirectory
  /**
   * A name store to use instead of the one `dataDir` selects, e.g. a cluster's shared store on
   * etcd (SPEC §6c); the service closes it. @default LMDB in dataDir, else memory
   */
  nameStore?: NameStore
}

/** What `createIndexService` accepts: every field optional, with the documented defaults. */
export type IndexConfig = z.input<typeof indexConfigSchema> & IndexRuntimeOptions

/** The validated configuration with every default filled in (the reloadable snapshot). */
export type ResolvedIndexConfig = z.output<typeof indexConfigSchema>

/** Splits the runtime dependencies from the data configuration. */
export function splitConfig(config: IndexConfig): { data: z.input<typeof indexConfigSchema>; runtime: IndexRuntimeOptions } {
  const { auth, clock, random, logger, cors, limits, identity, nodes, nameStore, ...data } = config
  const runtime: IndexRuntimeOptions = {}
  if (nameStore !== undefined) runtime.nameStore = nameStore
  if (identity !== undefined) runtime.identity = identity
  if (nodes !== undefined) runtime.nodes = nodes
  if (cors !== undefined) runtime.cors = cors
  if (limits !== undefined) runtime.limits = limits
  if (auth !== undefined) runtime.auth = auth
  if (clock !== undefined) runtime.clock = clock
  if (random !== undefined) runtime.random = random
  if (logger !== undefined) runtime.logger = logger
  return { data, runtime }
}

/**
 * Validates the data part of `config` and fills in defaults.
 * @throws {@link ConfigError} naming the offending field.
 */
export function resolveIndexConfig(config: IndexConfig = {}): ResolvedIndexConfig {
  return validateConfig(indexConfigSchema, splitConfig(config).data)
}

/** Config paths that cannot change through `reload()` (they shape storage, queues and identity). */
export const IMMUTABLE_PATHS: readonly string[] = ['id', 'version', 'nodeId', 'dataDir', 'amnesia', 'resolverWorkers', 'workQueue', 'nameWriters', 'nameQueue', 'eventsCapacity', 'maxConcurrentPerIp', 'ratePerIp', 'drainDeadlineMs']
