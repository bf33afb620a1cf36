/**
 * What the route handlers share: the service's parts, and small HTTP helpers (ETag, conditional
 * requests, cleanup-safe body streams).
 *
 * @module
 */

import type { Address, Broadcast, Claims, Clock, Logger, MetricsSink, RonRequest, RouteContext, Transport } from '@ron/core'
import type { WorkScheduler } from '../admission.js'
import type { StorageEvent } from '../events.js'
import type { StorageUsage } from '../service.js'
import type { TokenFor } from '../peer-auth.js'
import type { Announcer } from '../announcer.js'
import type { ResolvedStorageConfig } from '../config.js'
import type { ObjectGuard } from '../object-guard.js'
import type { PinSet } from '../pins.js'
import type { RepairPlan, RepairState } from '../repair-state.js'
import type { Replicator } from '../replication.js'
import type { BlobStore } from '../store/types.js'

/** The service's parts as the routes see them. */
export interface StorageContext {
  /** The current config snapshot (the host's, swapped whole by `reload()`; read it per request). */
  readonly o: ResolvedStorageConfig
  /** Objects, bytes and free space as last sampled. */
  usage(): StorageUsage
  store: BlobStore
  pins: PinSet
  guard: ObjectGuard
  repair: RepairState
  replicator: Replicator
  announcer: Announcer | undefined
  /** How the service reaches peers and the index (core's `noTransport` stand-in when none was given). */
  transport: Transport
  /** The host's token check (audience, scope, caveats), for routes that need a token only sometimes. */
  authenticate(req: RonRequest, scope?: string): Promise<Claims>
  metrics: MetricsSink
  clock: Clock
  logger: Logger
  events: Broadcast<StorageEvent>
  /** Checks a read's token when reads are not public (`storage:read`, or a peer's replica token). */
  authorizeRead(req: RonRequest): Promise<Claims>
  /** Checks a replica write's token (scope `storage:replicate`, own or a peer's issuer). */
  authorizeReplica(req: RonRequest): Promise<Claims>
  /** The bearer token of calls to peers (scope `storage:replicate`). */
  peerToken: TokenFor
  /** The `work` queue: reader and writer slots (`admission.ts`). */
  work: WorkScheduler
  /** The request's signal combined with the service's forced-shutdown signal. */
  signalFor(ctx: RouteContext): AbortSignal
  /**
   * The service's forced-shutdown signal alone: for a response body, whose client going away
   * already ends it (the HTTP layer closes the body's iterator), so it needs no per-request
   * signal (creating one costs an `AbortController`, a listener and `AbortSignal.any` per GET).
   */
  shutdown: AbortSignal
  /** Whether the disk currently accepts writes, and why not. */
  disk: { ok: boolean; reason?: string }
  /** Reports a put's commit time (end of body → durable) for slow-disk detection. */
  commitTime(ms: number): void
  /** Reports a disk error seen by a write (flips write readiness). */
  diskError(reason: string): void
  /** Computes a repair plan (enqueuing unless `dryRun`). */
  plan(dryRun: boolean, signal: AbortSignal): Promise<RepairPlan>
  lastPlan(): RepairPlan
  /** Ranking of all nodes for an address (placement is its first `rf` reachable entries). */
  placement(address: Address): string[]
  /** Wakes the repair planner now (urgent work appeared). */
  kick(): void
}

/** The strong ETag of an object. */
export function etagOf(address: Address): string {
  return `"${address}"`
}

/** Headers sent with every object response (200, 206, 304). */
export function objectHeaders(address: Address): Record<string, string> {
  return {
    etag: etagOf(address),
    'cache-control': 'public, max-age=31536000, immutable',
    'accept-ranges': 'bytes',
    vary: 'Accept-Encoding',
  }
}

/**
 * True when an `If-None-Match` header matches `etag` (weak comparison, RFC 9110 13.1.2): `*`,
 * or any listed tag equal to it with or without `W/`.
 */
export function ifNoneMatch(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false
  const value = Array.isArray(header) ? header.join(',') : header
  for (const raw of value.split(',')) {
    const t = raw.trim()
    if (t === '*') return true
    const tag = t.startsWith('W/') ? t.slice(2) : t
    if (tag === etag) return true
  }
  return false
}

/**
 * Wraps an iterable so that `cleanup` runs exactly once whether the consumer finishes, fails,
 * calls `return()` before the first `next()` (where a plain generator's `finally` would not run),
 * or never iterates at all and the owner calls the returned `dispose`.
 */
export function withCleanup(
  source: AsyncIterable<Uint8Array>,
  cleanup: () => Promise<void>,
): { body: AsyncIterable<Uint8Array>; dispose: () => Promise<void> } {
  let done: Promise<void> | undefined
  const dispose = (): Promise<void> => (done ??= cleanup().catch(() => undefined))
  const body: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]() {
      const it = source[Symbol.asyncIterator]()
      return {
        async next() {
          try {
            const r = await it.next()
            if (r.done === true) await dispose()
            return r
          } catch (e) {
            await dispose()
            throw e
          }
        },
        async return() {
          try {
            await it.return?.()
          } finally {
            await dispose()
          }
          return { done: true, value: undefined }
        },
      }
    },
  }
  return { body, dispose }
}
