/**
 * Reads an object for the gateway and `GET /o/:addr` (SPEC §6a, issue 23 "reads from any node"):
 * this node's storage first; when it does not hold the object, a provider found through index —
 * one hop, only an endpoint of a known node (see {@link fetchableEndpoint}) — whose bytes are read
 * whole and verified against the address (in memory, or spooled to a file when large) before any
 * of them is served, within `gateway.readTimeoutMs`. Objects verified that way are kept in a
 * bounded cache. Storage's own `GET /o` stays local (repair probes rely on it): only interop
 * reaches other nodes.
 *
 * @module
 */

import {
  BusyError,
  NotFoundError,
  OverLimitError,
  TimeoutError,
  UnavailableError,
  isRonError,
  normalizeEndpoint,
  type Address,
  type NodeDirectory,
  type TransportResponse,
} from '@ron/core'
import type { InteropContext } from '../routes/context.js'
import { upstreamFailure } from '../upstream.js'
import type { VerifiedCache } from './cache.js'
import { memoryObject, readVerified, type VerifiedObject } from './spool.js'

/** Providers tried per read at most. */
const MAX_PROVIDERS = 3

/** A transport target name (`storage`, `storage-b`): an endpoint followed without a node directory. */
const TARGET_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/i

/**
 * The target to fetch a provider's copy from, or `undefined` when `endpoint` is not one a read may
 * follow: the storage URL a known node advertises (with a directory), a transport target name
 * (without one).
 */
export function fetchableEndpoint(endpoint: string, nodes: NodeDirectory | undefined): string | undefined {
  if (nodes === undefined) return TARGET_NAME.test(endpoint) ? endpoint : undefined
  const url = normalizeEndpoint(endpoint)
  if (url === undefined) return undefined
  const storage = nodes.byEndpoint(url)?.services['storage']
  return storage !== undefined && normalizeEndpoint(storage) === url ? url : undefined
}

/** Where a read was answered from. */
export type ObjectSource =
  /** This node's storage answered (200, 206 or 416), streaming: the caller verifies a whole body as it passes. */
  | { kind: 'local'; res: TransportResponse }
  /** From the cache or another node, verified whole. */
  | { kind: 'verified'; obj: VerifiedObject; from: 'cache' | 'remote' }

/** Per-read options. */
export interface ReadOptions {
  method: 'GET' | 'HEAD'
  /** The client's `Range`, passed to this node's storage (a verified object is cut by the caller). */
  range?: string | undefined
  signal: AbortSignal
  corrId: string
}

/** Counters the reader moves. */
export interface ReaderMetrics {
  /** `gateway_remote_reads_total{result}`: `ok`, `integrity`, `failed`. */
  remote(result: 'ok' | 'integrity' | 'failed'): void
  /** `gateway_spooled_total`. */
  spooled(): void
  /** `gateway_cache_hits_total`. */
  cacheHit(): void
}

/** See the module comment. */
export class ObjectReader {
  #remoteInFlight = 0

  constructor(
    private readonly s: InteropContext,
    private readonly nodes: NodeDirectory | undefined,
    private readonly cache: VerifiedCache,
    private readonly metrics: ReaderMetrics,
  ) {}

  /**
   * Opens `address`: the cache, this node's storage, then other nodes.
   * @throws {@link NotFoundError} when nobody has it; {@link BusyError} when too many reads from
   *   other nodes are under way; {@link TimeoutError} past the read deadline; a 503 naming the
   *   upstream when storage or every provider failed.
   */
  async open(address: Address, o: ReadOptions): Promise<ObjectSource> {
    const hit = this.cache.get(address)
    if (hit !== undefined) {
      this.metrics.cacheHit()
      return { kind: 'verified', obj: memoryObject(hit), from: 'cache' }
    }
    const cfg = this.s.cfg()
    let failure: unknown
    try {
      const res = await this.s.upstreams.call(cfg.storage.target, {
        op: 'storage.get',
        method: o.method,
        path: `/o/${address}`,
        ...(o.range === undefined ? {} : { headers: { range: o.range } }),
        timeoutMs: cfg.storage.timeoutMs,
        idempotent: true,
        signal: o.signal,
        corrId: o.corrId,
      })
      if (res.status === 200 || res.status === 206 || res.status === 416) return { kind: 'local', res }
      await res.dump()
    } catch (e) {
      if (o.signal.aborted) throw e
      // This node's storage is failing: another node may still serve the read.
      failure = e
    }
    const remote = await this.#remote(address, o)
    if (remote !== undefined) return { kind: 'verified', obj: remote, from: 'remote' }
    if (failure !== undefined && isRonError(failure)) throw upstreamFailure(failure, 'storage')
    throw new NotFoundError('no node has this object', { details: { address } })
  }

  /** A verified copy from another node, or `undefined` when no known provider has a good one. */
  async #remote(address: Address, o: ReadOptions): Promise<VerifiedObject | undefined> {
    const targets = await this.#providers(address, o)
    if (targets.length === 0) return undefined
    const g = this.s.cfg().gateway
    if (this.#remoteInFlight >= g.maxRemoteReads) {
      throw new BusyError('too many reads from other nodes at once', { details: { reason: 'remote_reads', limit: g.maxRemoteReads }, retryAfterMs: 1000 })
    }
    this.#remoteInFlight++
    let corrupt = 0
    // One deadline for the whole read, head and body, whichever provider serves it.
    const deadline = new AbortController()
    const timer = this.s.clock.setTimeout(() => deadline.abort(new TimeoutError('reading from another node took too long', { details: { address, timeoutMs: g.readTimeoutMs } })), g.readTimeoutMs)
    timer.unref?.()
    const onAbort = (): void => deadline.abort(o.signal.reason)
    o.signal.addEventListener('abort', onAbort, { once: true })
    try {
      for (const target of targets) {
        const obj = await this.#fetchVerified(target, address, deadline.signal, o.corrId)
        if (obj === 'corrupt') corrupt++
        else if (obj !== undefined) {
          if (obj.bytes !== undefined && obj.size <= g.memoryBytes) this.cache.set(address, obj.bytes)
          return obj
        }
      }
      if (corrupt > 0) {
        // Copies exist but none is right: an error, never a wrong byte (repair may restore one).
        throw new UnavailableError('no node holds a copy that matches the address', { details: { address, reason: 'integrity', providers: corrupt }, retryAfterMs: 5000 })
      }
      return undefined
    } catch (e) {
      if (deadline.signal.aborted && !o.signal.aborted) {
        this.s.metrics.inc('io_timeouts_total', { op: 'gateway.remote' })
        throw deadline.signal.reason as TimeoutError
      }
      throw e
    } finally {
      o.signal.removeEventListener('abort', onAbort)
      this.s.clock.clearTimeout(timer)
      this.#remoteInFlight--
    }
  }

  /** One provider's copy, verified; `undefined` when it has none, `'corrupt'` when its bytes do not match (counted). */
  async #fetchVerified(target: string, address: Address, signal: AbortSignal, corrId: string): Promise<VerifiedObject | 'corrupt' | undefined> {
    const g = this.s.cfg().gateway
    let res: TransportResponse
    try {
      res = await this.s.upstreams.call(target, { op: 'storage.get', method: 'GET', path: `/o/${address}`, timeoutMs: g.readTimeoutMs, idempotent: false, signal, corrId })
    } catch (e) {
      if (signal.aborted) throw e
      this.metrics.remote('failed')
      this.s.logger.debug({ err: e, address, target }, 'provider failed')
      return undefined
    }
    if (res.status !== 200) {
      await res.dump()
      this.metrics.remote('failed')
      return undefined
    }
    // Amnesia: nothing touches the disk, so nothing is spooled; larger objects are refused.
    const cfg = this.s.cfg()
    const maxBytes = cfg.amnesia ? Math.min(g.memoryBytes, g.maxObjectBytes) : g.maxObjectBytes
    const declared = Number(res.headers['content-length'])
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.dump()
      this.metrics.remote('failed')
      throw tooLarge(address, maxBytes, cfg.amnesia)
    }
    try {
      const obj = await readVerified(res.body, address, { memoryBytes: g.memoryBytes, maxBytes, spoolDir: g.spoolDir ?? cfg.dataDir, onSpool: () => this.metrics.spooled() })
      this.metrics.remote('ok')
      return obj
    } catch (e) {
      if (signal.aborted) throw e
      if (isRonError(e, 'OverLimit')) {
        this.metrics.remote('failed')
        throw tooLarge(address, maxBytes, cfg.amnesia)
      }
      if (isRonError(e, 'IntegrityFailed')) {
        this.metrics.remote('integrity')
        this.s.logger.warn({ address, target }, 'a provider sent bytes that do not match the address: not served')
        return 'corrupt'
      } else {
        this.metrics.remote('failed')
        this.s.logger.debug({ err: e, address, target }, 'provider read failed')
      }
      return undefined
    }
  }

  /** Provider targets of `address` other than this node's storage, from index; empty when index does not know it or fails. */
  async #providers(address: Address, o: ReadOptions): Promise<string[]> {
    const cfg = this.s.cfg()
    const local = cfg.storage.target
    const selfStorage = this.nodes?.get(this.nodes.selfId)?.services['storage']
    const self = selfStorage === undefined ? undefined : normalizeEndpoint(selfStorage)
    try {
      const res = await this.s.upstreams.call(cfg.index.target, { op: 'index.resolve', method: 'GET', path: `/resolve/${address}`, timeoutMs: cfg.index.timeoutMs, idempotent: true, signal: o.signal, corrId: o.corrId })
      if (res.status >= 400) {
        await res.dump()
        return []
      }
      const out = await res.json<{ providers?: Array<{ endpoint?: unknown }> }>()
      const targets: string[] = []
      for (const p of out.providers ?? []) {
        const target = typeof p.endpoint === 'string' ? fetchableEndpoint(p.endpoint, this.nodes) : undefined
        if (target === undefined) {
          this.s.logger.debug({ address, endpoint: typeof p.endpoint === 'string' ? p.endpoint.slice(0, 200) : typeof p.endpoint }, 'provider endpoint is no known node: not fetched')
          continue
        }
        if (target === local || target === self || targets.includes(target)) continue
        targets.push(target)
        if (targets.length >= MAX_PROVIDERS) break
      }
      return targets
    } catch (e) {
      if (o.signal.aborted) throw e
      this.s.logger.debug({ err: e, address }, 'index resolve failed: no other node to read from')
      return []
    }
  }
}

function tooLarge(address: Address, limit: number, amnesia: boolean): OverLimitError {
  return new OverLimitError(`the object is larger than this gateway reads from another node (${limit} bytes${amnesia ? ': amnesia mode spools nothing to disk' : ''})`, {
    details: { address, limit, reason: amnesia ? 'amnesia' : 'gateway_max_object' },
  })
}
