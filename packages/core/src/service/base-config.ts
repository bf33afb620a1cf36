/**
 * The base config every service's schema extends (SPEC.md 3.2, 4): the HTTP limits under
 * `http.*`, CORS, the drain deadline and the read window of a drain. A service spreads
 * {@link serviceBaseShape} into its own `z.strictObject({...})`, optionally with its own
 * defaults, and passes `extendsBase: true` to the host, which then applies every base key itself
 * (at start and on each reload). What a reload may not change is declared next to the schema:
 * `[...BASE_IMMUTABLE_KEYS, 'dataDir', …]`.
 *
 * @example
 * ```ts
 * export const helloConfigSchema = z.strictObject({
 *   ...serviceBaseShape({ http: { requestTimeoutMs: 10_000 } }),
 *   greeting: z.string().default('hello'),
 * })
 * export const IMMUTABLE_KEYS = [...BASE_IMMUTABLE_KEYS, 'greeting'] as const
 * ```
 *
 * @module
 */

import { z } from 'zod'
import { durationSchema, sizeSchema } from '../config/units.js'

const KiB = 1024
const MiB = 1024 * KiB

/** The resolved `http` section of a service config (SPEC.md 4 "HTTP limits are per service"). */
export interface HttpConfig {
  readTimeoutMs: number
  writeTimeoutMs: number
  idleTimeoutMs: number
  jsonBodyLimit: number
  decompressionRatio: number
  maxDecompressedBytes: number
  maxConcurrentPerIp: number
  maxRpsPerIp?: number | undefined
  maxInflight?: number | undefined
  maxRps?: number | undefined
  maxConnections: number
  requestTimeoutMs: number
  minBytesPerSec: number
  rateWindowMs: number
  maxBodiesPerPrincipal?: number | undefined
}

/** CORS as a config file writes it (SPEC.md 6b). */
export interface CorsConfig {
  readOrigins?: '*' | string[] | undefined
  writeOrigins?: string[] | undefined
}

/** The base keys of every service config, resolved (defaults filled in). */
export interface ServiceBaseConfig {
  http: HttpConfig
  cors?: CorsConfig | undefined
  drainDeadlineMs: number
  drainReadWindowMs: number
}

/** The numeric `http.*` keys a service may give its own default. */
export type HttpDefaults = Partial<Omit<HttpConfig, never>>

/** Per-service defaults of the base keys (anything not given keeps the base default). */
export interface ServiceBaseDefaults {
  http?: HttpDefaults
  drainDeadlineMs?: number
  drainReadWindowMs?: number
}

/** The base defaults (SPEC.md 3.2 and 4). */
export const SERVICE_BASE_DEFAULTS: Readonly<{ http: Readonly<HttpConfig>; drainDeadlineMs: number; drainReadWindowMs: number }> = Object.freeze({
  http: Object.freeze({
    readTimeoutMs: 5000,
    writeTimeoutMs: 5000,
    idleTimeoutMs: 60_000,
    jsonBodyLimit: MiB,
    decompressionRatio: 10,
    maxDecompressedBytes: 64 * MiB,
    maxConcurrentPerIp: 256,
    maxConnections: 10_000,
    requestTimeoutMs: 30_000,
    minBytesPerSec: KiB,
    rateWindowMs: 10_000,
  }),
  drainDeadlineMs: 3000,
  drainReadWindowMs: 250,
})

/**
 * Base keys a reload cannot change (they shape the HTTP handler, the per-IP admission or the
 * listener). Reloadable: the slow-client rules, `http.maxInflight`, `http.maxRps`, `cors`,
 * `drainDeadlineMs`, `drainReadWindowMs`.
 */
export const BASE_IMMUTABLE_KEYS = [
  'http.readTimeoutMs',
  'http.writeTimeoutMs',
  'http.idleTimeoutMs',
  'http.jsonBodyLimit',
  'http.decompressionRatio',
  'http.maxDecompressedBytes',
  'http.maxConcurrentPerIp',
  'http.maxRpsPerIp',
  'http.maxConnections',
] as const

const positiveInt = z.number().int().positive()
const positiveMs = durationSchema.refine((n) => n > 0, 'expected a positive duration')
const positiveBytes = sizeSchema.refine((n) => n > 0, 'expected a positive size')

function optionalOr<T extends z.ZodType>(schema: T, v: number | undefined): z.ZodDefault<T> | z.ZodOptional<T> {
  return v === undefined ? schema.optional() : schema.default(v as never)
}

function httpShape(d: HttpConfig) {
  return {
    /** Longest gap between request body chunks before 408 RequestTimeout; also the listener's header timeout. @default 5000 */
    readTimeoutMs: positiveMs.default(d.readTimeoutMs),
    /** Longest a streamed reply waits for the client to take data before the response is destroyed. @default 5000 */
    writeTimeoutMs: positiveMs.default(d.writeTimeoutMs),
    /** Keep-alive idle timeout of the listener the service is served on (`serve()`). @default 60000 */
    idleTimeoutMs: positiveMs.default(d.idleTimeoutMs),
    /** Decoded cap of request bodies on routes without their own cap (JSON routes). @default 1 MiB */
    jsonBodyLimit: positiveBytes.default(d.jsonBodyLimit),
    /** Decoded bytes may not exceed `ratio × encoded + 64 KiB`. @default 10 */
    decompressionRatio: z.number().positive().default(d.decompressionRatio),
    /** Absolute cap of any decoded (decompressed) JSON body. @default 64 MiB */
    maxDecompressedBytes: positiveBytes.default(d.maxDecompressedBytes),
    /** Concurrent requests per client IP, and open connections per IP on the listener (429 `per_ip` beyond). @default 256 */
    maxConcurrentPerIp: positiveInt.default(d.maxConcurrentPerIp),
    /** Requests per second per client IP (token bucket, burst = 2 s worth; 429 `per_ip_rate` beyond); absent = unlimited. */
    maxRpsPerIp: optionalOr(positiveInt, d.maxRpsPerIp),
    /** Requests in progress at once, all clients together (429 `max_inflight` beyond); absent = unlimited. */
    maxInflight: optionalOr(positiveInt, d.maxInflight),
    /** Requests per second, all clients together (429 `max_rps` beyond); absent = unlimited. */
    maxRps: optionalOr(positiveInt, d.maxRps),
    /** Open connections of the listener, all clients together (429 `max_connections` beyond). @default 10000 */
    maxConnections: positiveInt.default(d.maxConnections),
    /** Whole-request deadline of a body: this plus its size at `minBytesPerSec`; later → 408 `deadline`. @default 30000 */
    requestTimeoutMs: positiveMs.default(d.requestTimeoutMs),
    /** Minimum average body rate over `rateWindowMs` of reading; below it → 408 `min_rate`. @default 1 KiB/s */
    minBytesPerSec: positiveBytes.default(d.minBytesPerSec),
    /** Window of the minimum-rate rule (also the grace before it applies). @default 10000 */
    rateWindowMs: positiveMs.default(d.rateWindowMs),
    /** Lingering request bodies one principal may have at once (429 `per_principal` beyond). @default 16 */
    maxBodiesPerPrincipal: optionalOr(positiveInt, d.maxBodiesPerPrincipal),
  }
}

/**
 * The base keys as a zod shape, to spread into a service's `z.strictObject({...})`. Durations
 * accept ms or `"5s"`, sizes bytes or `"64KiB"`. `defaults` changes a default for this service
 * (a webhook receiver wants a short request deadline, an object store a slow-body allowance).
 *
 * @example
 * ```ts
 * const schema = z.strictObject({ ...serviceBaseShape({ drainReadWindowMs: 0 }), dataDir: z.string().optional() })
 * ```
 */
export function serviceBaseShape(defaults: ServiceBaseDefaults = {}) {
  const b = SERVICE_BASE_DEFAULTS
  const http: HttpConfig = { ...b.http, ...defaults.http }
  return {
    /** HTTP limits of this service (SPEC.md 3.2, 4), slow-client rules included. */
    http: z.strictObject(httpShape(http)).prefault({}),
    /**
     * CORS (core's host): reads from `readOrigins` (default `*`), writes and their preflights
     * from `writeOrigins` (default none).
     */
    cors: z
      .strictObject({
        readOrigins: z.union([z.literal('*'), z.array(z.string().min(1))]).optional(),
        writeOrigins: z.array(z.string().min(1)).optional(),
      })
      .optional(),
    /** How long `close()` lets in-flight work finish, once intake stopped, before aborting stragglers. @default 3000 */
    drainDeadlineMs: durationSchema.default(defaults.drainDeadlineMs ?? b.drainDeadlineMs),
    /**
     * The read window of a drain: how long writes are refused and write-unready while reads are
     * still served and ready, so a load balancer sees the write-only phase (SPEC.md 3.3). Set it
     * to at least your load balancer's readiness-probe period. On an injected `VirtualClock` it
     * runs on virtual time. @default 250
     */
    drainReadWindowMs: durationSchema.default(defaults.drainReadWindowMs ?? b.drainReadWindowMs),
  }
}

/** The base keys alone, as a schema (for hosts that validate only them). */
export const serviceBaseSchema = z.strictObject(serviceBaseShape())
