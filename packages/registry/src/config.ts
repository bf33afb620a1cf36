/**
 * The registry's config: ONE zod schema spreading core's base keys (`http.*`, `cors`,
 * `drainDeadlineMs`, `drainReadWindowMs`: the service contract, docs/service-contract.md) with the
 * registry's own, every default in it (types derive from it), validated through core's
 * `validateConfig` (an invalid value throws a `ConfigError` naming the field), and the keys a
 * reload may not change next to it. Injected objects (auth, store, keys, clock, logger) are the
 * factory's third argument, {@link RegistryRuntime}, never part of the reloadable snapshot.
 *
 * @module
 */

import type { KeyObject } from 'node:crypto'
import { z } from 'zod'
import { BASE_IMMUTABLE_KEYS, SERVICE_RUNTIME_KEYS, durationSchema, serviceBaseShape, sizeSchema, validateConfig } from '@ron/core'
import type { ServiceRuntime } from '@ron/core'
import { signerSetSchema } from './descriptors.js'
import { witnessedLogSchema } from './witness.js'
import { witnessEndpointSchema } from './witness-pusher.js'
import type { LogStore } from './store/types.js'

const DAY = 24 * 60 * 60 * 1000
const positiveInt = z.number().int().positive()
const ms = durationSchema
const bytes = sizeSchema
const keyName = z.string().min(1).max(255).regex(/^[^\s+]+$/, 'a key name has no whitespace and no "+"')

/** The registry's data config (strict; every field optional with a default). */
export const registryConfigSchema = z.strictObject({
  ...serviceBaseShape(),
  /** Service id: token audience, transport name, `service` metric label. */
  id: z.string().min(1).default('registry'),
  /** Reported by `/version`. @default this package's version (its package.json) */
  version: z.string().optional(),
  /** Directory of the durable log (segment files). Absent → memory store (amnesia). */
  dataDir: z.string().min(1).optional(),
  /**
   * The log's origin line (checkpoints and approval messages). Fixed at creation; an existing log
   * keeps its own. @default `ron.registry/<8 random hex>` for a new log
   */
  origin: z.string().min(1).max(255).regex(/^[^\s+]+$/, 'an origin has no whitespace and no "+"').optional(),
  /**
   * Merkle tree hash of a new log: `sha256` is RFC 6962 as C2SP tlog-tiles and Go's `sumdb/tlog`
   * expect; `blake3` by explicit choice. Fixed at genesis: an existing log keeps its own.
   */
  treeHash: z.enum(['blake3', 'sha256']).default('sha256'),
  /** The genesis signer set (M-of-N). Required to create a log; must match an existing log's genesis. */
  signers: signerSetSchema.optional(),
  /** File holding the log's own Ed25519 checkpoint key (JWK, 0600). @default `<dataDir>/registry-log.key`, created when missing */
  logKeyFile: z.string().min(1).optional(),
  /** Proposals expire (and are removed) this long after they were made. */
  proposalTtlMs: ms.pipe(positiveInt).default(600_000),
  /** Live proposals at most; more → 429 Busy. */
  maxProposals: positiveInt.default(4096),
  /** Deadline of a commit when the caller sends none (`X-Deadline-Ms`). */
  commitTimeoutMs: ms.pipe(positiveInt).default(5000),
  /** Queue capacities (SPEC 3.2). */
  queues: z
    .strictObject({
      proposals: positiveInt.default(512),
      approvals: positiveInt.default(512),
      committed: positiveInt.default(1024),
      retention: positiveInt.default(8),
    })
    .default({ proposals: 512, approvals: 512, committed: 1024, retention: 8 }),
  /**
   * Every commit is checkpointed before it is answered; when the log is idle, the checkpoint is
   * re-sent to the witnesses for fresh cosignatures, and stored durably, this often.
   */
  checkpointIntervalMs: ms.pipe(positiveInt).default(600_000),
  /** Witnesses this log sends each checkpoint to, and whose cosignatures it serves with it. */
  witnesses: z.array(witnessEndpointSchema).max(32).default([]),
  /** Deadline of one `add-checkpoint` call to a witness. */
  witnessTimeoutMs: ms.pipe(positiveInt).default(5000),
  /**
   * This node as a witness of other logs: their `{origin, key}`, and its own key name. A witness
   * must not hold the log's key: its own log is refused here.
   */
  witness: z
    .strictObject({
      /** The witness key's name. @default `<this log's origin>/witness` */
      name: keyName.optional(),
      /** The logs this node witnesses: each log's origin and note verifier key (as its `ron-node status` prints it). */
      logs: z.array(witnessedLogSchema).max(1024).default([]),
    })
    .default({ logs: [] }),
  /** File holding this node's witness key (JWK, 0600). @default `<dataDir>/registry-witness.key`, created when missing */
  witnessKeyFile: z.string().min(1).optional(),
  /** Entries per segment file (the unit of pruning). */
  segmentEntries: positiveInt.default(1000),
  /** Bytes per segment file. */
  segmentBytes: bytes.pipe(positiveInt).default(64 * 1024 * 1024),
  /** Retention: segments beyond any limit are pruned once a signed checkpoint covers them. */
  retention: z
    .strictObject({
      maxAgeMs: ms.pipe(positiveInt).default(30 * DAY),
      maxEntries: positiveInt.default(10_000),
      maxBytes: bytes.pipe(positiveInt).default(1024 * 1024 * 1024),
    })
    .default({ maxAgeMs: 30 * DAY, maxEntries: 10_000, maxBytes: 1024 * 1024 * 1024 }),
  /** Deep verifier: a full re-verification pass every `intervalMs`, `sliceEntries` at a time. */
  deepVerify: z
    .strictObject({ intervalMs: ms.pipe(positiveInt).default(60_000), sliceEntries: positiveInt.default(256) })
    .default({ intervalMs: 60_000, sliceEntries: 256 }),
  /** SSE `/registry/stream`: per-client buffer (then drop to the latest HEAD), client cap, heartbeat. */
  sse: z
    .strictObject({ bufferPerClient: positiveInt.default(64), maxClients: positiveInt.default(8192), heartbeatMs: ms.pipe(positiveInt).default(5000) })
    .default({ bufferPerClient: 64, maxClients: 8192, heartbeatMs: 5000 }),
  /** Write readiness: a commit slower than `slowCommitMs` (or failing) turns writes unready until a probe passes. */
  writeReadiness: z
    .strictObject({ slowCommitMs: ms.pipe(positiveInt).default(2000), probeIntervalMs: ms.pipe(positiveInt).default(5000) })
    .default({ slowCommitMs: 2000, probeIntervalMs: 5000 }),
})

/** Config as written (every field optional; durations and sizes may be strings like `"5s"`). */
export type RegistryConfigInput = z.input<typeof registryConfigSchema>
/** Config with every default filled in. */
export type RegistryConfig = z.output<typeof registryConfigSchema>

/**
 * Keys a `reload()` may not change (dotted paths): the base's listener- and handler-shaping
 * `http.*` keys, then the registry's identity, log layout and queue/stream capacities. A reload
 * changing one is refused with a `ConfigError` (`details.reason: 'immutable'`).
 */
export const REGISTRY_IMMUTABLE_KEYS = [
  ...BASE_IMMUTABLE_KEYS,
  'id',
  'version',
  'dataDir',
  'origin',
  'treeHash',
  'signers',
  'logKeyFile',
  'witnessKeyFile',
  'queues',
  'segmentEntries',
  'segmentBytes',
  'sse',
] as const

/**
 * The factory's third argument: core's {@link ServiceRuntime} (`auth`, `clock`, `random`,
 * `logger`, `metrics`…) plus the registry's own injected objects. Not reloadable, not validated
 * by the schema.
 */
export interface RegistryRuntime extends ServiceRuntime {
  /** A log store to use instead of the one `dataDir` selects (the service closes it). @default segment store in dataDir, else memory */
  store?: LogStore
  /** The log's checkpoint key (instead of `logKeyFile`). @default from logKeyFile, or generated */
  logKey?: KeyObject
  /** This node's witness key (instead of `witnessKeyFile`). @default from witnessKeyFile, or generated */
  witnessKey?: KeyObject
}

/** Keys of {@link RegistryRuntime}, split out of a config that still carries them (deprecated form). */
export const REGISTRY_RUNTIME_KEYS = [...SERVICE_RUNTIME_KEYS, 'store', 'logKey', 'witnessKey'] as const

/**
 * Runtime objects inside the config, as `createRegistryService` took them before its third
 * argument. Still accepted (they are split out; the runtime argument wins); each is deprecated.
 */
export interface DeprecatedRegistryRuntimeInConfig {
  /** @deprecated Pass it in the runtime argument: `createRegistryService(config, transport, { auth })`. */
  auth?: RegistryRuntime['auth']
  /** @deprecated Pass it in the runtime argument. */
  store?: RegistryRuntime['store']
  /** @deprecated Pass it in the runtime argument. */
  logKey?: RegistryRuntime['logKey']
  /** @deprecated Pass it in the runtime argument. */
  witnessKey?: RegistryRuntime['witnessKey']
  /** @deprecated Pass it in the runtime argument. */
  clock?: RegistryRuntime['clock']
  /** @deprecated Pass it in the runtime argument. */
  random?: RegistryRuntime['random']
  /** @deprecated Pass it in the runtime argument. */
  logger?: RegistryRuntime['logger']
}

/**
 * What `createRegistryService` accepts as its first argument: the data config, and (deprecated)
 * the runtime objects it carried before the runtime argument existed.
 */
export type RegistryServiceConfig = RegistryConfigInput & DeprecatedRegistryRuntimeInConfig

/**
 * Validates the data config and fills in defaults.
 * @throws {@link ConfigError} naming the offending field
 * @example
 * ```ts
 * resolveConfig({}).queues.proposals // 512
 * ```
 */
export function resolveConfig(input: RegistryConfigInput = {}): RegistryConfig {
  return validateConfig(registryConfigSchema, input)
}
