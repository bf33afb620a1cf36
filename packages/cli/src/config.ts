/**
 * The node's configuration: its schema, and loading it from defaults < file < `RON_*` environment
 * < flags through the core config loader.
 *
 * @module
 */

import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { z } from 'zod'
import { ConfigError, SERVER_HEAP_GROWING_FACTOR, SERVER_YOUNG_GENERATION_GROWTH, durationSchema, isRonError, loadConfig, redactConfig, sizeSchema } from '@ron/core'
import { defaultDataDir } from './data-dir.js'
import { CliError, ExitCode } from './exit-codes.js'
import { LOG_LEVELS } from './logger.js'
import { AVAILABLE_SERVICES, DEFAULT_PORT_BASE, KNOWN_SERVICES } from './ports.js'

const positiveInt = z.coerce.number().int().positive()
const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((s) => s === 'true' || s === '1')])

/**
 * An integer from a number (files) or its decimal text (env and flags). An empty or blank string
 * is rejected (not read as 0, as `z.coerce.number()` would).
 */
function intSchema(min: number, max: number): z.ZodType<number, unknown> {
  return z.preprocess(
    (v) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v),
    z
      .number({ error: (iss) => (typeof iss.input === 'string' && iss.input.trim() === '' ? 'expected a number, got an empty value' : undefined) })
      .int()
      .min(min)
      .max(max),
  )
}

/** A comma- or space-separated list (env and flags) or an array (files) of services this build can host. */
const serviceList = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(/[\s,]+/).filter((s) => s.length > 0) : v),
  z
    .array(z.enum(KNOWN_SERVICES))
    .min(1)
    .superRefine((names, ctx) => {
      for (const name of names) {
        if (!AVAILABLE_SERVICES.includes(name)) {
          ctx.addIssue({ code: 'custom', message: `service ${name} is not available in this build (available: ${AVAILABLE_SERVICES.join(', ')})` })
        }
      }
    }),
)

/** A comma- or space-separated list (env and flags) or an array (files) of http(s) URLs. */
const urlList = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(/[\s,]+/).filter((s) => s.length > 0) : v),
  z.array(
    z.string().refine((u) => {
      try {
        const url = new URL(u)
        return url.protocol === 'http:' || url.protocol === 'https:'
      } catch {
        return false
      }
    }, 'expected an http(s) URL such as http://10.0.0.2:7700'),
  ),
)

/** One http(s) URL. */
const httpUrl = z.string().refine((u) => {
  try {
    const url = new URL(u)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}, 'expected an http(s) URL such as http://10.0.0.1:7703')

/** A service's own config section, validated by that service when it is created or reloaded. */
const section = z.record(z.string(), z.unknown())

/** Repair pacing (`[storage.repair]`). */
const repairConfigSchema = z
  .object({
    /** How often the repair planner runs. @default "30s" */
    interval: durationSchema.optional(),
    /** Repair traffic budget per second. @default "50MiB" */
    bytesPerSec: sizeSchema.optional(),
    /** Burst of the repair budget. @default "4MiB" */
    burst: sizeSchema.optional(),
  })
  .strict()

const positiveMs = durationSchema.refine((n) => n > 0, 'expected a positive duration')
const positiveBytes = sizeSchema.refine((n) => n > 0, 'expected a positive size')

/**
 * The node-level HTTP limits (`[http]`): core's base `http.*` keys (see "Base keys of every
 * service"), given to every hosted service; only the keys set here are passed, so a service keeps
 * its own default for the others, and its `[<service>.http]` section wins key by key.
 */
export const nodeHttpConfigSchema = z
  .object({
    /** Header read timeout of every listener and longest gap between body chunks. @default "5s" */
    readTimeoutMs: positiveMs.optional(),
    /** Longest a streamed reply waits for the client. @default "5s" */
    writeTimeoutMs: positiveMs.optional(),
    /** Keep-alive idle timeout of every listener. @default "60s" */
    idleTimeoutMs: positiveMs.optional(),
    /** Decoded cap of JSON request bodies (413 beyond). @default "1MiB" */
    jsonBodyLimit: positiveBytes.optional(),
    /** Decoded bytes may not exceed `ratio × encoded + 64 KiB`. @default 10 */
    decompressionRatio: z.coerce.number().positive().optional(),
    /** Absolute cap of any decoded JSON body. @default "64MiB" */
    maxDecompressedBytes: positiveBytes.optional(),
    /** Concurrent requests and open connections per client IP (429 `per_ip`). @default 256 */
    maxConcurrentPerIp: positiveInt.optional(),
    /** Requests per second per client IP (429 `per_ip_rate`). @default unlimited */
    maxRpsPerIp: positiveInt.optional(),
    /** Requests in progress at once per service (429 `max_inflight`). @default unlimited */
    maxInflight: positiveInt.optional(),
    /** Requests per second per service (429 `max_rps`). @default unlimited */
    maxRps: positiveInt.optional(),
    /** Open connections per listener (429 `max_connections`). @default 10000 */
    maxConnections: positiveInt.optional(),
    /** Whole-request deadline of a body (plus its size at `minBytesPerSec`). @default "30s" */
    requestTimeoutMs: positiveMs.optional(),
    /** Minimum average body rate (408 `min_rate` below). @default "1KiB" */
    minBytesPerSec: positiveBytes.optional(),
    /** Window of the minimum-rate rule. @default "10s" */
    rateWindowMs: positiveMs.optional(),
    /** Lingering request bodies per principal (429 `per_principal`). @default 16 */
    maxBodiesPerPrincipal: positiveInt.optional(),
  })
  .strict()

/** CORS of every hosted service (`[cors]`); a service's `[<service>.cors]` adds to it. */
export const nodeCorsConfigSchema = z
  .object({
    /** Origins allowed to read (GET/HEAD): `"*"` or a list. @default "*" */
    readOrigins: z.union([z.literal('*'), z.array(z.string().min(1))]).optional(),
    /** Origins allowed to write, besides the node's admin origin (the dashboard). @default [] */
    writeOrigins: urlList.optional(),
  })
  .strict()

/** Storage settings in the node config (`[storage]` in TOML). */
export const storageConfigSchema = z
  .object({
    /** Largest object accepted by PUT. @default "16GiB" */
    maxObjectBytes: sizeSchema.optional(),
    /** Integrity chunk size of new objects. @default "64KiB" */
    chunkSize: sizeSchema.optional(),
    /** GET/HEAD without a token. @default true */
    publicReads: bool.optional(),
    /** Capacity of the work queue. @default 512 */
    workQueue: positiveInt.optional(),
    /** GET/HEAD workers. @default 16 */
    getConcurrency: positiveInt.optional(),
    /** Concurrent uploads being written (sized for the disk). @default 32 */
    writers: positiveInt.optional(),
    /** Copies kept of every object across this node and its peers. @default 2 with peers, 1 alone */
    rf: positiveInt.optional(),
    /** Durable copies before a PUT is acknowledged. @default 1 */
    writeQuorum: positiveInt.optional(),
    /** Repair pacing. */
    repair: repairConfigSchema.default({}),
    /** HTTP limits (core's base `http.*` keys): at node level (`[http]`) for every hosted service; in a service's section (`[storage.http]`, `[passport.http]`, …) for it alone, key by key over the node's. @default each service's */
    http: nodeHttpConfigSchema.optional(),
    /** CORS (`[cors]`): reads from `readOrigins` (default `*`), writes from the admin origin plus `writeOrigins`; a service's own `cors` adds to the node's. @default reads from anywhere */
    cors: nodeCorsConfigSchema.optional(),
    /** Storage's own drain deadline. @default the node's `drainDeadline` */
    drainDeadlineMs: durationSchema.optional(),
    /** Storage's own drain read window. @default the node's `drainReadWindow` */
    drainReadWindowMs: durationSchema.optional(),
  })
  .strict()

/**
 * The `ron-node start` configuration. Every key can come from the config file (same name), from
 * `RON_<UPPER_SNAKE>` (e.g. `RON_PORT_BASE`, `RON_STORAGE__MAX_OBJECT_BYTES` for nested keys) or
 * from a flag (`--port-base`).
 */
export const nodeConfigSchema = z
  .object({
    /** Data directory. @default the platform's data dir (see `defaultDataDir`) */
    dataDir: z.string().min(1).optional(),
    /** Interface the listeners bind. @default "127.0.0.1" */
    host: z.string().min(1).default('127.0.0.1'),
    /** First port: admin = base, storage = base+1, ...; 0 = free ports. @default 7700 */
    portBase: intSchema(0, 65530).default(DEFAULT_PORT_BASE),
    /** Services to host. @default every service this build has */
    services: serviceList.default([...AVAILABLE_SERVICES]),
    /**
     * The host name (or `scheme://host`) other nodes and clients reach this node at, reported by
     * `/status` and announced to indexes; needed when binding `0.0.0.0` or behind a proxy.
     * @default the bound host
     */
    advertise: z.string().min(1).optional(),
    /** Other nodes' admin URLs (their service URLs are read from their `/status`). @default [] */
    peers: urlList.default([]),
    /**
     * Another node's passport URL (`passport.url` in a file, `RON_PASSPORT_URL`): this node runs no
     * passport, verifies with that one's keys and revocations and gets its service tokens from it by
     * client assertion (the node key must be enrolled: `ron-node join`). @default none
     */
    passportUrl: httpUrl.optional(),
    /** Another node's registry URL (`registry.url` in a file, `RON_REGISTRY_URL`): this node runs no registry. @default none */
    registryUrl: httpUrl.optional(),
    /**
     * etcd client URLs (`--etcd`, `RON_ETCD`), comma-separated: the same as
     * `coordination.etcd.endpoints`, which it overrides. @default none
     */
    etcd: urlList.optional(),
    /**
     * Coordination of a cluster on etcd (SPEC §6c): the registry's log, proposals and checkpoint
     * signer, passport's revocations, key sets and enrolments, and name bindings are kept in etcd
     * under `prefix`, so that any node can commit, revoke and bind names. Whoever can write the
     * prefix administers the cluster. @default none (each node keeps its own state)
     */
    coordination: z
      .object({
        etcd: z
          .object({
            /** etcd client URLs. */
            endpoints: urlList.optional(),
            /** Key prefix of this cluster (the same on every node). @default "/ron/" */
            prefix: z.string().min(1).max(200).regex(/^[A-Za-z0-9/_.-]+$/, 'a prefix of letters, digits, /, _, . and -').optional(),
            /** TLS to etcd: the CA of the members' certificates, and this node's client certificate and key (PEM files). */
            tls: z.object({ ca: z.string().min(1), cert: z.string().min(1).optional(), key: z.string().min(1).optional() }).strict().optional(),
            /** etcd username/password authentication (the password is redacted by `config print`). */
            auth: z.object({ username: z.string().min(1), password: z.string().min(1) }).strict().optional(),
            /** TTL of the registry's checkpoint signer lease: how long checkpoints may lag when its holder dies. @default "5s" */
            leaseTtl: durationSchema.optional(),
            /** Deadline of one etcd call. @default "2s" */
            timeout: durationSchema.optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    /** RAM only: memory stores, ephemeral keys, the admin token printed, nothing written to disk. @default false */
    amnesia: bool.default(false),
    /**
     * Serve every listener (admin and services) over HTTPS with this PEM certificate and key
     * (`[tls]` in TOML, `RON_TLS__CERT`/`RON_TLS__KEY`, `--tls-cert`/`--tls-key`); both or neither.
     * @default none (plain HTTP)
     */
    tls: z.object({ cert: z.string().min(1), key: z.string().min(1) }).strict().optional(),
    /**
     * V8's old-generation growing factor for the node's process (`RON_HEAP_GROWTH`): a full GC runs
     * once the heap reaches `live × heapGrowth`; `"auto"` leaves it to V8. See `setHeapGrowingFactor`
     * in `@ron/core` for why a node that moves bytes wants a fixed one. @default 4
     */
    heapGrowth: z
      .union([
        z.literal('auto'),
        z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v), z.number().min(1.1).max(8)),
      ])
      .default(SERVER_HEAP_GROWING_FACTOR),
    /**
     * V8's young-generation growth factor for the node's process (`RON_YOUNG_GEN_GROWTH`): an
     * integer in [1, 8]; 1 keeps the semi-spaces at V8's initial 1 MiB, so the request bodies that
     * die young are freed every MiB of allocation instead of piling up in semi-spaces grown to
     * 16 MiB; `"auto"` gives V8 its own factor (2) back. See `setYoungGenerationGrowth` in
     * `@ron/core`. @default 1
     */
    youngGenGrowth: z
      .union([
        z.literal('auto'),
        z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v), z.number().int().min(1).max(8)),
      ])
      .default(SERVER_YOUNG_GENERATION_GROWTH),
    /** pino level. @default "info" */
    logLevel: z.enum(LOG_LEVELS).default('info'),
    /** How long shutdown lets in-flight requests finish: every hosted service's `drainDeadlineMs` unless its section sets one. @default "3s" */
    drainDeadline: durationSchema.default(3000),
    /** The read window of every hosted service's drain (writes unready, reads still served) unless its section sets one. @default "250ms" */
    drainReadWindow: durationSchema.optional(),
    /** HTTP limits (core's base `http.*` keys): at node level (`[http]`) for every hosted service; in a service's section (`[storage.http]`, `[passport.http]`, …) for it alone, key by key over the node's. @default each service's */
    http: nodeHttpConfigSchema.optional(),
    /** CORS (`[cors]`): reads from `readOrigins` (default `*`), writes from the admin origin plus `writeOrigins`; a service's own `cors` adds to the node's. @default reads from anywhere */
    cors: nodeCorsConfigSchema.optional(),
    /** Lifetime of a newly minted admin token. @default "30d" */
    adminTokenTtl: durationSchema.default(30 * 86_400_000),
    /** Storage settings. */
    storage: storageConfigSchema.default({ repair: {} }),
    /** Passport's own config (policy, rotation, …), passed through and validated by passport. */
    passport: section.optional(),
    /** Registry's own config (signers, checkpointInterval, retention, …), validated by registry. */
    registry: section.optional(),
    /** Index's own config (cache, peers, deadlines, …), validated by index. */
    index: section.optional(),
    /** Interop's own config (webhooks, apiKeys, audit, brownout, …), validated by interop. */
    interop: section.optional(),
  })
  .strict()

/**
 * What `POST /admin/reload` accepts: the parts of the node config that can change live, written as
 * in a config file (`{"storage": {"maxObjectBytes": "1GiB"}}`).
 */
export const reloadableConfigSchema = z
  // One line: docs/configuration.test.ts reads the key docs of nodeConfigSchema above, and a key written undocumented here would make them ambiguous.
  // prettier-ignore
  .object({ http: nodeHttpConfigSchema.optional(), cors: nodeCorsConfigSchema.optional(), drainDeadline: durationSchema.optional(), drainReadWindow: durationSchema.optional(), storage: storageConfigSchema.optional(), passport: section.optional(), registry: section.optional(), index: section.optional(), interop: section.optional() })
  .strict()

/** The validated node configuration (durations in ms, sizes in bytes). */
export type NodeConfig = z.output<typeof nodeConfigSchema>

/** The raw node configuration as written in a file. */
export type NodeConfigInput = z.input<typeof nodeConfigSchema>

/** Options of {@link loadNodeConfig}. */
export interface LoadNodeConfigOptions {
  /** A JSON or TOML (`.toml`) config file. @default none */
  file?: string | undefined
  /** @default process.env */
  env?: Record<string, string | undefined>
  /** Values from flags (highest precedence); `undefined` entries are ignored. */
  flags?: NodeConfigInput
}

/** The config file `ron-node join` writes in the data directory; used when no `--config` is given. */
export const DATA_DIR_CONFIG_FILE = 'config.json'

/** `<data dir>/config.json` when it exists (the data dir from the flags, `RON_DATA_DIR` or the platform default). */
function dataDirConfigFile(options: LoadNodeConfigOptions): string | undefined {
  const env = options.env ?? process.env
  const flags = (options.flags ?? {}) as { dataDir?: unknown }
  const dir = typeof flags.dataDir === 'string' && flags.dataDir !== '' ? flags.dataDir : defaultDataDir({ env })
  const path = join(dir, DATA_DIR_CONFIG_FILE)
  return existsSync(path) ? path : undefined
}

/**
 * The other node's passport and registry this node uses (`passportUrl` / `RON_PASSPORT_URL`, or
 * `passport.url` in a file; the same for registry), and the service sections without those keys.
 */
export function remoteServices(config: NodeConfig): { passportUrl?: string; registryUrl?: string; passport?: Record<string, unknown>; registry?: Record<string, unknown> } {
  const out: { passportUrl?: string; registryUrl?: string; passport?: Record<string, unknown>; registry?: Record<string, unknown> } = {}
  for (const k of ['passport', 'registry'] as const) {
    const { url, ...rest } = config[k] ?? {}
    const flat = k === 'passport' ? config.passportUrl : config.registryUrl
    const chosen = flat ?? (typeof url === 'string' ? url : undefined)
    if (url !== undefined && typeof url !== 'string') throw new CliError(`invalid config: ${k}.url: expected an http(s) URL`, ExitCode.Usage)
    if (chosen !== undefined) {
      if (!httpUrl.safeParse(chosen).success) throw new CliError(`invalid config: ${k}.url: expected an http(s) URL, got ${JSON.stringify(chosen)}`, ExitCode.Usage)
      out[k === 'passport' ? 'passportUrl' : 'registryUrl'] = chosen.replace(/\/+$/, '')
    }
    if (config[k] !== undefined) out[k] = rest
  }
  return out
}

/**
 * Loads the effective node configuration: schema defaults < `file` (without one:
 * `<data dir>/config.json`, which `ron-node join` writes, when it exists) < `RON_*` environment <
 * `flags`.
 * @throws {@link CliError} (exit code 2) with a one-line message naming the offending key, e.g.
 *   `invalid config: portBase: expected number, got "x"`.
 */
export function loadNodeConfig(options: LoadNodeConfigOptions = {}): NodeConfig {
  const file = options.file ?? dataDirConfigFile(options)
  try {
    return loadConfig(nodeConfigSchema, {
      ...(file === undefined ? {} : { file }),
      env: options.env ?? process.env,
      envPrefix: 'RON_',
      overrides: options.flags ?? {},
    })
  } catch (e) {
    if (e instanceof ConfigError || isRonError(e, 'Malformed')) {
      throw new CliError(`invalid config: ${e.message}`, ExitCode.Usage, { cause: e })
    }
    throw e
  }
}

/** The configuration as `config print` shows it: secrets replaced by `[redacted]`. */
export function printableConfig(config: NodeConfig): NodeConfig {
  return redactConfig(config)
}

/** The etcd settings of the node config (`coordination.etcd`, `--etcd`/`RON_ETCD` for the endpoints), if any. */
export function etcdSettings(config: NodeConfig): import('./coordination/etcd.js').EtcdSettings | undefined {
  const e = config.coordination?.etcd
  const endpoints = config.etcd ?? e?.endpoints
  if (endpoints === undefined || endpoints.length === 0) {
    if (e !== undefined) throw new CliError('invalid config: coordination.etcd.endpoints: at least one etcd client URL is needed (or --etcd)', ExitCode.Usage)
    return undefined
  }
  return {
    endpoints,
    ...(e?.prefix === undefined ? {} : { prefix: e.prefix }),
    ...(e?.tls === undefined ? {} : { tls: { ca: e.tls.ca, ...(e.tls.cert === undefined ? {} : { cert: e.tls.cert }), ...(e.tls.key === undefined ? {} : { key: e.tls.key }) } }),
    ...(e?.auth === undefined ? {} : { auth: e.auth }),
    ...(e?.leaseTtl === undefined ? {} : { leaseTtlSec: Math.max(2, Math.ceil(e.leaseTtl / 1000)) }),
    ...(e?.timeout === undefined ? {} : { timeoutMs: e.timeout }),
  }
}
