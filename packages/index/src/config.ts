/**
 * Configuration of the index service: ONE strict zod schema spreading core's base keys (`http.*`,
 * `cors`, `drainDeadlineMs`, `drainReadWindowMs`: the service contract, docs/service-contract.md)
 * with the index's own and the seed's defaults, and the keys a reload may not change right next to
 * it. Types derive from it (`IndexConfig` = input, `ResolvedIndexConfig` = output); validation goes
 * through core's `validateConfig`, so an invalid value throws a `ConfigError` naming the field.
 * Injected objects (name store, identity, node directory, clock, logger…) are the factory's third
 * argument, {@link IndexRuntime}.
 *
 * @module
 */

import { availableParallelism } from 'node:os'
import { z } from 'zod'
import { BASE_IMMUTABLE_KEYS, SERVICE_RUNTIME_KEYS, durationSchema, serviceBaseShape, validateConfig } from '@ron/core'
import type { NameStore } from './store/types.js'
import type { ServiceRuntime } from '@ron/core'

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
  // The index has no read window: it turns unready as a whole at the start of a drain (SPEC §3.3a).
  ...serviceBaseShape({ drainReadWindowMs: 0 }),
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
  /** Period of the breaker janitor (gauges, pruning breakers of removed peers). */
  breakerJanitorMs: duration.default(1_000),
  /** Keys resolved once at start by the optional warm-up prefetcher. */
  warmupKeys: z.array(z.string().min(1)).max(1024).default([]),
  peers: peersSchema,
  breaker: breakerSchema,
  cache: cacheSchema,
})

/**
 * The injected objects of the index (the factory's third argument): core's {@link ServiceRuntime}
 * (`auth`, `clock`, `random`, `logger`, `metrics`, `tokens`, `identity`, `nodes`) and the index's
 * name store.
 *
 * `identity` is this node's identity: the home of the names this index stores and the key that
 * signs their records (SPEC §6a); it must be the directory's own node when `nodes` is given
 * (default: an ephemeral identity, a fresh node id and key per start, as an amnesia node has).
 * `nodes` are the nodes this index believes (SPEC §5 "Peers"): a peer's name answer counts only
 * when it verifies under the pinned key of the name's home in there, and an announcement's
 * endpoint must be a URL its node advertises there (default none: no peer's name answer is
 * believed, and endpoints may also be transport target names, embedded and in-process).
 */
export interface IndexRuntime extends ServiceRuntime {
  /**
   * A name store to use instead of the one `dataDir` selects, e.g. a cluster's shared store on
   * etcd (SPEC §6c); the service closes it. @default LMDB in dataDir, else memory
   */
  nameStore?: NameStore
}

/** Keys of {@link IndexRuntime}: split out of a config that still carries them (the form before the runtime argument). */
export const INDEX_RUNTIME_KEYS: readonly string[] = [...SERVICE_RUNTIME_KEYS, 'nameStore']

/** The data configuration: what a config file or a node's `[index]` section may hold. */
export type IndexConfig = z.input<typeof indexConfigSchema>

/**
 * What `createIndexService` accepts as its first argument: the data configuration, optionally
 * still carrying runtime objects (split out; runtime values given as the third argument win).
 * @deprecated in-config runtime objects: pass them as the third argument, {@link IndexRuntime}.
 */
export type IndexServiceOptions = IndexConfig & IndexRuntime

/** The validated configuration with every default filled in (the reloadable snapshot). */
export type ResolvedIndexConfig = z.output<typeof indexConfigSchema>

/**
 * Validates the data part of `config` and fills in defaults.
 * @throws {@link ConfigError} naming the offending field.
 */
export function resolveIndexConfig(config: IndexServiceOptions = {}): ResolvedIndexConfig {
  const data: Record<string, unknown> = { ...config }
  for (const k of INDEX_RUNTIME_KEYS) delete data[k]
  return validateConfig(indexConfigSchema, data)
}

/**
 * Config paths a reload may not change (they shape the store, the queues, the pools and the
 * identity), after the base keys of {@link BASE_IMMUTABLE_KEYS}.
 */
export const INDEX_IMMUTABLE_KEYS = [...BASE_IMMUTABLE_KEYS, 'id', 'version', 'nodeId', 'dataDir', 'amnesia', 'resolverWorkers', 'workQueue', 'nameWriters', 'nameQueue', 'eventsCapacity'] as const
