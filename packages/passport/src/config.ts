/**
 * Passport's config: ONE zod schema spreading core's base keys (`http.*`, `cors`,
 * `drainDeadlineMs`, `drainReadWindowMs`: the service contract, docs/service-contract.md) with
 * passport's own, validated through core's `validateConfig` (unknown keys refused, the message
 * names the key). It is data only; the injected objects (KMS, cluster store, clock, random,
 * logger) are the factory's third argument, {@link PassportRuntime}. The issuance `policy`, the
 * registry sync and the reloadable base keys change live (SPEC.md 3.3b); what cannot is
 * {@link PASSPORT_IMMUTABLE_KEYS}.
 *
 * @module
 */

import { availableParallelism } from 'node:os'
import { z } from 'zod'
import { BASE_IMMUTABLE_KEYS, KNOWN_CAVEATS, SERVICE_RUNTIME_KEYS, durationSchema, serviceBaseShape, sizeSchema, validateConfig } from '@ron/core'
import type { ServiceRuntime } from '@ron/core'
import type { PassportClusterStore } from './cluster-store.js'
import type { Kms } from './kms.js'

const positiveInt = z.number().int().positive()
const nonNegInt = z.number().int().nonnegative()
const positiveMs = durationSchema.refine((n) => n > 0, 'expected a positive duration')

/**
 * What one caller (a token `sub`, or `*` for any caller) may have issued. It only narrows: a
 * caller never issues more than its own token grants (scopes, audiences, exp, caveats), whatever
 * its entry says — the `sub` it is looked up by is chosen by whoever issued the caller's token.
 */
export const callerPolicySchema = z
  .object({
    /** Scopes it may put in tokens; `*` = any scope of the catalog. */
    scopes: z.array(z.string().min(1)).min(1),
    /** Audiences (service ids) it may put in tokens; `*` = any. */
    audiences: z.array(z.string().min(1)).min(1),
    /** A lower max ttl for this caller. @default the policy's maxTtlSec */
    maxTtlSec: positiveInt.optional(),
  })
  .strict()

/** The issuance policy: an immutable snapshot, swapped whole on reload. */
export const policySchema = z
  .object({
    /** Longest ttl any issued token may have (the admin token is minted outside the policy). @default 3600 */
    maxTtlSec: positiveInt.default(3600),
    /** Ttl of a token whose request names none. @default 900 */
    defaultTtlSec: positiveInt.default(900),
    /**
     * Per caller `sub` (or `*`): the most it may issue, intersected with what its own token grants.
     * A caller without an entry (and no `*`) issues nothing. @default {} (nobody may issue)
     */
    callers: z.record(z.string().min(1), callerPolicySchema).default({}),
    /** Caveats issued tokens may carry. @default the core caveat catalog */
    caveats: z.array(z.enum(KNOWN_CAVEATS as [string, ...string[]])).default([...KNOWN_CAVEATS]),
  })
  .strict()
  .refine((p) => p.defaultTtlSec <= p.maxTtlSec, { message: 'defaultTtlSec must not exceed maxTtlSec', path: ['defaultTtlSec'] })

/**
 * Registry sync (seed svc-passport §2 "Registry Sync"): the issuance policy and the signer sets
 * (the `issuer-keys` descriptors of this issuer: the key sets of the other passports that sign
 * as it) read from the registry's HEAD descriptor set through the transport, on a jittered
 * period, each fetch under a deadline, failures retried with backoff. The last good state is kept
 * while the registry is down (readiness says so on the `registry` path).
 */
export const registrySyncSchema = z.strictObject({
  /** Transport target of the registry. @default 'registry' */
  target: z.string().min(1).default('registry'),
  /** Name of the `policy` descriptor holding passport's issuance policy (its `rules` are a policy); it replaces `policy` of the config while synced. @default 'passport' */
  policyName: z.string().min(1).default('passport'),
  /** Period between syncs (jittered ±10 %). @default 30000 */
  intervalMs: positiveMs.default(30_000),
  /** Deadline of one registry request (`io_timeouts_total{op="registry"}` past it). @default 3000 */
  timeoutMs: positiveMs.default(3000).describe('Deadline of one registry request (io_timeouts_total{op="registry"} past it).'),
  /** First retry delay after a failed sync, doubled per failure (full jitter). @default 500 */
  backoffBaseMs: positiveMs.default(500),
  /** Longest retry delay. @default 30000 */
  backoffMaxMs: positiveMs.default(30_000),
})

/** The passport config schema (strict; every field optional with a documented default). */
export const passportConfigSchema = z
  .object({
    ...serviceBaseShape(),
    /** Service id: transport name, the `aud` passport's own routes require, metric `service` label. @default 'passport' */
    id: z.string().min(1).default('passport'),
    /** `iss` of every token. @default 'passport' */
    issuer: z.string().min(1).default('passport'),
    /** Reported by /version. @default this package's version (its package.json) */
    version: z.string().optional(),
    /**
     * Directory for the key ring, the revocation log, enrolled nodes and (with the default file
     * keystore) the keys, all 0600. Absent → everything in memory (amnesia). @default undefined
     */
    dataDir: z.string().min(1).optional(),
    /**
     * An issuer key file in `importIssuerKey` format (ron-node's `keys/issuer.json`): on first start
     * it becomes epoch 1's current key, so tokens it signed before stay valid. @default undefined
     */
    issuerKeyFile: z.string().min(1).optional(),
    /** The issuance policy. Absent → passport issues nothing (`issue` path unready). @default undefined */
    policy: policySchema.optional(),
    kms: z
      .object({
        /** Deadline of every KMS call. @default 3000 */
        timeoutMs: positiveInt.default(3000).describe('Deadline of every KMS call.'),
        /**
         * Breaker on the sign path: opens when at least `minCalls` signs in `windowMs` failed at
         * `errorRatio` or more; issuance then fails fast (503 `BreakerOpen`) until a probe after
         * `cooldownMs` succeeds. `false` turns it off. @default `{ windowMs: 60000, minCalls: 10, errorRatio: 0.5, cooldownMs: 10000 }`
         */
        breaker: z
          .union([
            z.literal(false),
            z
              .object({
                windowMs: positiveInt.default(60_000),
                minCalls: positiveInt.default(10),
                errorRatio: z.number().gt(0).lte(1).default(0.5),
                cooldownMs: positiveInt.default(10_000),
              })
              .strict(),
          ])
          .default({ windowMs: 60_000, minCalls: 10, errorRatio: 0.5, cooldownMs: 10_000 }),
      })
      .strict()
      .default({ timeoutMs: 3000, breaker: { windowMs: 60_000, minCalls: 10, errorRatio: 0.5, cooldownMs: 10_000 } }),
    rotation: z
      .object({
        /** Minimum time a key that stopped signing keeps verifying. @default 600000 (10 min) */
        graceMs: nonNegInt.default(600_000),
        /** Scheduled rotation period; absent → rotate only on request. @default undefined */
        everyMs: positiveInt.optional(),
        /** Clock tolerance added to every retirement time, in seconds. @default 30 */
        clockToleranceSec: nonNegInt.default(30),
      })
      .strict()
      .default({ graceMs: 600_000, clockToleranceSec: 30 }),
    /** Lifetime of service tokens traded for a node's client assertion. @default 600 */
    serviceTokenTtlSec: positiveInt.default(600),
    /**
     * The `maxBytes` caveat of every service token carrying `storage:write` (SPEC.md §5,
     * "Service-call scopes"): the largest object a node's service token (and any upload capability
     * attenuated from it) can write. @default 1073741824 (1 GiB, interop's upload limit)
     */
    serviceWriteMaxBytes: sizeSchema.default(1024 ** 3),
    /** While a disk fault holds, how often the data directory is probed for writes again. @default 1000 */
    diskProbeMs: positiveInt.default(1000),
    /** Capacity of the `issue` queue (issue, attenuate, token exchange). @default 512 */
    issueQueue: positiveInt.default(512),
    /** Issuance workers. @default min(available cores, 8) */
    issueWorkers: positiveInt.default(() => Math.min(availableParallelism(), 8)),
    /** Capacity of the `revoke` queue in front of the single revocation worker. @default 256 */
    revokeQueue: positiveInt.default(256),
    /** Capacity of the `policy` broadcast per subscriber (drop-oldest). @default 1024 */
    policyBroadcast: positiveInt.default(1024),
    /** Issue-queue depth (fraction of capacity) at which the `issue` path turns unready. @default 0.8 */
    shedIssueAt: z.number().gt(0).lte(1).default(0.8),
    /** Largest `tokens` list of `POST /v1/passport/verify/batch`. @default 100 */
    maxBatch: positiveInt.default(100),
    /** Items per page of the revocation feed. @default 1000 */
    feedPageSize: positiveInt.default(1000),
    /** Registry sync of the policy and signer sets; absent → off (the config's `policy` only). @default undefined */
    registry: registrySyncSchema.optional(),
  })
  .strict()

/** Passport's config as a caller or a config file writes it (every field optional). */
export type PassportConfig = z.input<typeof passportConfigSchema>
/** The config with defaults filled in. */
export type ResolvedPassportConfig = z.output<typeof passportConfigSchema>
/** An issuance policy as written in config. */
export type PolicyInput = z.input<typeof policySchema>
/** An issuance policy with defaults filled in. */
export type Policy = z.output<typeof policySchema>

/**
 * Validates `config` and fills in defaults.
 * @throws `ConfigError` (a {@link MalformedError}) naming the offending key.
 */
export function resolvePassportConfig(config: PassportConfig = {}): ResolvedPassportConfig {
  return validateConfig(passportConfigSchema, config)
}

/** Keys of the config that cannot change with `reload()` (dotted paths; the base's first). */
export const PASSPORT_IMMUTABLE_KEYS = [...BASE_IMMUTABLE_KEYS, 'id', 'issuer', 'version', 'dataDir', 'issuerKeyFile', 'issueQueue', 'issueWorkers', 'revokeQueue', 'policyBroadcast'] as const

/** The injected objects of a passport (the factory's third argument): core's, plus its KMS and cluster store. */
export interface PassportRuntime extends ServiceRuntime {
  /** Key storage. @default a file keystore in `<dataDir>/keys`, or a memory keystore without dataDir */
  keystore?: Kms
  /**
   * The state shared with the other passports of a cluster (ron-node's etcd, SPEC §6c):
   * revocations and parent links, key sets, enrolments. @default none: the data directory
   */
  cluster?: PassportClusterStore
}

/** Keys of {@link PassportRuntime}: split out of a config that still carries them. */
export const PASSPORT_RUNTIME_KEYS = [...SERVICE_RUNTIME_KEYS, 'keystore', 'cluster'] as const

/** The runtime objects a config could carry before the runtime argument existed. */
export interface DeprecatedPassportRuntimeInConfig {
  /** @deprecated Pass it in the runtime argument. */
  keystore?: PassportRuntime['keystore']
  /** @deprecated Pass it in the runtime argument. */
  cluster?: PassportRuntime['cluster']
  /** @deprecated Pass it in the runtime argument. */
  clock?: PassportRuntime['clock']
  /** @deprecated Pass it in the runtime argument. */
  random?: PassportRuntime['random']
  /** @deprecated Pass it in the runtime argument. */
  logger?: PassportRuntime['logger']
}

/**
 * What `createPassportService` accepts as its first argument: the config, and (deprecated) the
 * runtime objects it carried before the runtime argument existed.
 */
export type PassportServiceOptions = PassportConfig & DeprecatedPassportRuntimeInConfig
