/**
 * Configuration of the interop service: ONE strict zod schema with defaults; the types derive
 * from it (`z.input` for what callers write, `z.output` for what the service uses). Durations
 * accept `"5s"`, sizes `"64KiB"`. Validated through core's {@link validateConfig}: an invalid value
 * is a `ConfigError` (400 `Malformed`) naming the field.
 *
 * @module
 */

import { createHash } from 'node:crypto'
import { z } from 'zod'
import { BASE_IMMUTABLE_KEYS, durationSchema, serviceBaseShape, sizeSchema, validateConfig } from '@ron/core'
import { standardSecretKey } from './webhooks/verify.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

const positiveInt = z.number().int().positive()
const ratio = z.number().gt(0).lte(1)

const providerSchema = z.strictObject({
  /** Active secrets, newest first; several during a rotation. */
  secrets: z.array(z.string().min(1)).min(1),
})

const apiKeySchema = z.strictObject({
  /** Client name (audit events, token `sub` = `client:<name>`). */
  client: z.string().min(1).max(128),
  /** `sha256:` + hex SHA-256 of the key (see `hashApiKey`); the key itself is never configured. */
  keyHash: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lower-case hex digits>'),
  /** Largest upload of this client. @default uploads.maxBytes */
  maxBytes: sizeSchema.optional(),
})

/**
 * An upstream service: its transport target and the deadline of each call to it. Described with
 * `.describe()`, not TSDoc, because the three upstreams share these key names with other sections
 * (`uploads.timeoutMs`) and differ in their defaults.
 */
const upstreamSchema = (target: string, timeoutMs: number, calls: string) =>
  z
    .strictObject({
      target: z.string().min(1).default(target).describe(`Transport target of ${target}: its name under ron-node (or a URL with an HTTP transport).`),
      timeoutMs: durationSchema.default(timeoutMs).describe(`Deadline of each call to ${target} (${calls}). @default ${timeoutMs}`),
    })
    .prefault({})

const DOMAIN = /^(?=.{1,200}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/

/** The gateway part of the interop configuration. */
const gatewaySchema = z
  .strictObject({
    /**
     * Host name under which each name gets its own origin, `<label>.<domain>` (SPEC §6a); path
     * URLs on this host redirect there. Browsers resolve `*.localhost` to loopback; for a real
     * host use a wildcard DNS name. @default 'localhost'
     */
    domain: z.string().regex(DOMAIN, 'expected a lower-case host name such as localhost or gw.example.com').default('localhost'),
    /** Serve `<label>.<domain>` origins and redirect path URLs to them. `false`: path gateway only. @default true */
    subdomains: z.boolean().default(true),
    /**
     * `Content-Security-Policy` of content served on the path gateway (`/n/…`, `/o/…/…`), where
     * every site shares one origin: a sandbox gives each page an opaque origin of its own. Empty:
     * none. @default 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads'
     */
    pathCsp: z.string().max(1024).regex(/^[^\r\n]*$/, 'one line').default('sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads'),
    /** `max-age` of answers for names (they move when republished); `/o/` answers are immutable. @default 10 */
    nameMaxAgeSec: z.number().int().nonnegative().max(86_400).default(10),
    /** Deadline of a whole read of an object from another node (head and body, verified). @default 30000 */
    readTimeoutMs: durationSchema.default(30_000),
    /**
     * Objects from another node up to this size are verified whole in memory; larger ones are
     * spooled to `spoolDir` first (in amnesia mode, where nothing touches the disk, refused with
     * 413). @default 4 MiB
     */
    memoryBytes: sizeSchema.default(4 * MiB),
    /** Largest object read from another node; larger → 413 `OverLimit`. @default 1 GiB */
    maxObjectBytes: sizeSchema.default(GiB),
    /** Reads from other nodes at once; more answer 429 `Busy`. @default 8 */
    maxRemoteReads: positiveInt.max(1024).default(8),
    /** Directory of spooled reads (files unlinked as soon as they are open). @default `dataDir`, else the OS temp directory */
    spoolDir: z.string().min(1).optional(),
    /** Bytes of verified objects from other nodes kept in memory (each at most `memoryBytes`); 0 keeps none. @default 32 MiB */
    cacheBytes: sizeSchema.default(32 * MiB),
  })
  .prefault({})

/**
 * The seed's replay window cap (svc-interop: "replay window ≤ 5 min"): `webhooks.toleranceSec`
 * above it is refused (`ConfigError`, `details.path: 'webhooks.toleranceSec'`).
 */
export const MAX_REPLAY_WINDOW_SEC = 300

/** Longest rotation overlap of the admin routes (7 days). */
export const MAX_OVERLAP_MS = 7 * 24 * 3600 * 1000
const DAY_MS = 24 * 3600 * 1000

/**
 * Interop's own defaults of the base `http.*` keys (core's `serviceBaseShape`): webhook bodies are
 * small, so the whole-request deadline is short and the minimum body rate higher than the base's;
 * uploads get the time their size needs at `minBytesPerSec` on top. One principal (an API-key
 * client, else a provider's address) may have 32 lingering bodies.
 */
export const INTEROP_HTTP_DEFAULTS = { readTimeoutMs: 5000, requestTimeoutMs: 10_000, minBytesPerSec: 8 * KiB, rateWindowMs: 10_000, maxBodiesPerPrincipal: 32 } as const

/** The zod schema of the interop configuration (strict: unknown keys are refused). */
export const interopConfigSchema = z.strictObject({
  ...serviceBaseShape({ http: INTEROP_HTTP_DEFAULTS }),
  /** Service id: token audience, transport name, metric `service` label. @default 'interop' */
  id: z.string().min(1).default('interop'),
  /** Reported by `/version`. @default this package's version (its package.json) */
  version: z.string().min(1).optional(),
  /** The storage service: transport target and per-call deadline. @default {target:'storage', timeoutMs: 2000} */
  storage: upstreamSchema('storage', 2000, 'webhook receipts, gateway reads; uploads have `uploads.timeoutMs`'),
  /** The passport service (capabilities for uploads). @default {target:'passport', timeoutMs: 2000} */
  passport: upstreamSchema('passport', 2000, 'capabilities for uploads'),
  /** The index service (reads find providers there). @default {target:'index', timeoutMs: 1200} */
  index: upstreamSchema('index', 1200, "the gateway's name and provider lookups"),
  /** The service id storage verifies tokens for (`aud` of capabilities). @default 'storage' */
  storageAudience: z.string().min(1).default('storage'),
  /** The service id passport verifies interop's service token for. @default 'passport' */
  passportAudience: z.string().min(1).default('passport'),
  webhooks: z
    .strictObject({
      /** Providers with their active secrets; a provider not listed answers 404. @default {} */
      providers: z
        .strictObject({ github: providerSchema.optional(), slack: providerSchema.optional(), stripe: providerSchema.optional(), standard: providerSchema.optional() })
        .default({}),
      /** Replay window, both directions; at most 300 (the seed's 5 min, `MAX_REPLAY_WINDOW_SEC`): more is refused. @default 300 */
      toleranceSec: positiveInt.max(MAX_REPLAY_WINDOW_SEC, `the replay window is capped at ${MAX_REPLAY_WINDOW_SEC} s (5 min)`).default(300),
      /** Longest a webhook waits for its receipt to be stored before 504 `Timeout`. @default 2000 */
      ackDeadlineMs: durationSchema.default(2000),
      /** Largest webhook body. @default 1 MiB */
      maxBodyBytes: sizeSchema.default(MiB),
      /** Dedupe memory: must cover the replay window both ways. @default {ttlMs: 600000, maxEntries: 100000} */
      dedupe: z.strictObject({ ttlMs: durationSchema.default(600_000), maxEntries: positiveInt.default(100_000) }).prefault({}),
    })
    .prefault({}),
  /** External API keys for `POST /put`, stored hashed. @default [] */
  apiKeys: z.array(apiKeySchema).default([]),
  uploads: z
    .strictObject({
      /** Largest upload. @default 1 GiB */
      maxBytes: sizeSchema.default(GiB),
      /** Life of the capability obtained from passport (≤ 60 s). @default 60 */
      capabilityTtlSec: positiveInt.max(60).default(60),
      /** Chunk size of the stream to storage. @default 64 KiB */
      chunkBytes: sizeSchema.default(64 * KiB),
      /**
       * Deadline of the upload call to storage: the longest silence while streaming, and the time
       * from the last byte to storage's answer (its commit and fsync). @default 30000
       */
      timeoutMs: durationSchema.default(30_000),
      /**
       * Uploads one API-key client may have in flight; more → 429 `Busy` (SPEC §4 slow clients).
       * Half of the default `maxConcurrent`: no single client takes every upload slot. @default 4
       */
      maxConcurrentPerClient: positiveInt.default(4),
      /**
       * Uploads of all clients together holding `work` slots (queued or streaming); more → 429
       * `Busy` (`details.reason: "uploads"`). Below `workers`, so webhook receipts always find a
       * worker however many uploads are in flight. @default half of `workers` (at least 1)
       */
      maxConcurrent: positiveInt.optional(),
    })
    .prefault({}),
  /** Capacity of the `work` queue. @default 512 */
  workQueue: positiveInt.default(512),
  /**
   * Workers draining `work`: each stores one receipt or streams one upload at a time, so this
   * bounds interop's concurrent writes to storage. Sized for storage's fsync-bound writes, not the
   * CPU count: storage accepts 16 concurrent writes per principal by default (`writers` 32, half per
   * principal), and interop's receipts all come from one principal; with 8, half of that went unused
   * and receipts/s fell with it. @default 16
   */
  workers: positiveInt.max(256).default(16),
  audit: z
    .strictObject({
      /** Where audit events go. `file` is refused in amnesia mode. @default 'memory' */
      sink: z.enum(['memory', 'file', 'stdout']).default('memory'),
      /** JSONL file of the `file` sink. */
      file: z.string().min(1).optional(),
      /** fsync at most this often (and on close). @default 1000 */
      fsyncIntervalMs: durationSchema.default(1000),
      /** Capacity of the `audit` queue (drop-oldest). @default 512 */
      queue: positiveInt.default(512),
      /** Events the memory ring keeps. @default 1024 */
      memoryCapacity: positiveInt.default(1024),
    })
    .prefault({}),
  /** Amnesia mode: nothing is written to local disk (the file audit sink and `dataDir` are refused). @default false */
  amnesia: z.boolean().default(false),
  /**
   * Directory where the webhook dedupe window is kept durably (`dedupe.jsonl`), so a restart still
   * refuses the deliveries it acknowledged within the replay window. Absent: memory only.
   */
  dataDir: z.string().min(1).optional(),
  brownout: z
    .strictObject({
      enabled: z.boolean().default(true),
      errorRatio: ratio.default(0.01),
      errorWindowMs: durationSchema.default(300_000),
      minRequests: positiveInt.default(100),
      upstreamP95Ms: durationSchema.default(500),
      latencyWindowMs: durationSchema.default(60_000),
      minSamples: positiveInt.default(20),
      queueRatio: ratio.default(0.8),
      clearFactor: ratio.default(0.5),
      holdMs: durationSchema.default(10_000),
      retryAfterMs: durationSchema.default(5000),
      /** How often the sentinel task samples. @default 1000 */
      sampleIntervalMs: durationSchema.default(1000),
    })
    .prefault({}),
  /** Rate limit of webhooks and uploads together; `false` turns it off. @default {rps: 500, burst: 250} */
  rateLimit: z.union([z.literal(false), z.strictObject({ rps: positiveInt.default(500), burst: positiveInt.default(250) })]).default({ rps: 500, burst: 250 }),
  /** Retry schedule of idempotent upstream calls. */
  retry: z
    .strictObject({
      tries: positiveInt.max(10).default(3),
      baseMinMs: durationSchema.default(50),
      baseMaxMs: durationSchema.default(100),
      factor: z.number().min(1).max(16).default(4),
      capMs: durationSchema.default(2000),
    })
    .prefault({}),
  /**
   * The admin routes (`interop:admin`): webhook secrets and API keys set and rotated without a
   * restart. A rotation keeps the replaced secret or key accepted for `rotationOverlapMs` (the
   * provider or client switches over meanwhile), then refuses it.
   */
  admin: z
    .strictObject({
      /** How long a replaced secret or key stays accepted after a rotation (a request may ask for less or more, up to 7 days). @default 86400000 (24 h) */
      rotationOverlapMs: durationSchema.refine((n) => n <= MAX_OVERLAP_MS, 'at most 7 days').default(DAY_MS),
    })
    .prefault({}),
  /** The gateway (SPEC §6a "Gateway"): names and manifests served to browsers, each name on its own origin. */
  gateway: gatewaySchema,
}).superRefine((cfg, ctx) => {
  if (cfg.audit.sink === 'file' && cfg.amnesia) ctx.addIssue({ code: 'custom', path: ['audit', 'sink'], message: 'the file sink is forbidden in amnesia mode' })
  if (cfg.dataDir !== undefined && cfg.amnesia) ctx.addIssue({ code: 'custom', path: ['dataDir'], message: 'a data directory is forbidden in amnesia mode' })
  if (cfg.uploads.maxConcurrent !== undefined && cfg.uploads.maxConcurrent >= cfg.workers) {
    ctx.addIssue({ code: 'custom', path: ['uploads', 'maxConcurrent'], message: 'must be below workers (webhook receipts need a worker)' })
  }
  if (cfg.audit.sink === 'file' && cfg.audit.file === undefined) ctx.addIssue({ code: 'custom', path: ['audit', 'file'], message: 'required (a path) when audit.sink is "file"' })
  for (const [i, s] of (cfg.webhooks.providers.standard?.secrets ?? []).entries()) {
    if (standardSecretKey(s) === undefined) ctx.addIssue({ code: 'custom', path: ['webhooks', 'providers', 'standard', 'secrets', i], message: 'expected whsec_ followed by base64' })
  }
  if (cfg.webhooks.dedupe.ttlMs < 2 * cfg.webhooks.toleranceSec * 1000) {
    ctx.addIssue({ code: 'custom', path: ['webhooks', 'dedupe', 'ttlMs'], message: 'must cover the replay window both ways (2 × toleranceSec)' })
  }
  if (cfg.retry.baseMaxMs < cfg.retry.baseMinMs) ctx.addIssue({ code: 'custom', path: ['retry', 'baseMaxMs'], message: 'must be ≥ retry.baseMinMs' })
})

/**
 * Config paths a reload may not change (SPEC §3.3b): the base's listener- and handler-shaping
 * `http.*` keys, then interop's own — what sizes queues, opens files or names routes. Everything
 * else (secrets, API keys, limits, brownout, CORS, the drain settings) reloads.
 */
export const INTEROP_IMMUTABLE_KEYS = [
  ...BASE_IMMUTABLE_KEYS,
  'id',
  'version',
  'workQueue',
  'workers',
  'audit',
  'amnesia',
  'dataDir',
  'webhooks.maxBodyBytes',
  'webhooks.dedupe',
  'uploads.maxBytes',
  'retry',
  'gateway.domain',
  'gateway.subdomains',
] as const

/** What callers write (every field optional). */
export type InteropConfigInput = z.input<typeof interopConfigSchema>
/** The validated configuration with defaults filled in. */
export type InteropConfig = z.output<typeof interopConfigSchema>

/**
 * Validates and completes an interop configuration.
 * @throws {@link ConfigError} naming the offending field.
 * @example
 * ```ts
 * const cfg = parseInteropConfig({ webhooks: { providers: { github: { secrets: ['s3cret'] } } } })
 * cfg.workQueue // 512
 * ```
 */
export function parseInteropConfig(input: unknown = {}): InteropConfig {
  return validateConfig(interopConfigSchema, input)
}

/**
 * The hash under which an API key is configured: `sha256:` + hex SHA-256. API keys are long random
 * strings, so a plain hash is enough to keep the config free of usable keys.
 * @example
 * ```ts
 * hashApiKey('ronk_4f…') // 'sha256:9b…'
 * ```
 */
export function hashApiKey(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`
}
