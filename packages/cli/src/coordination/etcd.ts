/**
 * The node's connection to etcd (SPEC §6c): the one place ron-node talks to etcd. It owns the
 * `etcd3` client (endpoints, TLS, username/password), the key prefix, per-call deadlines, the
 * mapping of every etcd failure to 503 `Unavailable` (`details.reason: "etcd_unavailable"`,
 * `Retry-After`), a health probe (a linearizable read every second: it needs a quorum, so it says
 * whether writes can succeed), and the `etcd_*` metrics. The stores built on it (registry log,
 * passport state, names) live beside this file; core and the services only see their interfaces.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
// Types only at module level: etcd3 (gRPC, protobufjs, ~250 files) and cockatiel are loaded by
// connect(), so a node without coordination.etcd never pays for them at start.
import type { Etcd3, IOptions, Namespace } from 'etcd3'
import type { IBackoff } from 'cockatiel'
import { UnavailableError, createServiceMetrics, isRonError, systemClock, type Clock, type Logger, type ServiceMetrics } from '@ron/core'

/** `coordination.etcd` as the node config gives it. */
export interface EtcdSettings {
  /** Client URLs of the etcd members (`http://10.0.0.1:2379`). */
  endpoints: string[]
  /** Key prefix of this cluster (every node of one cluster uses the same). @default '/ron/' */
  prefix?: string
  /** TLS to etcd: the CA that signed the members' certificates and, for client-certificate auth, this node's certificate and key (PEM files). */
  tls?: { ca: string; cert?: string; key?: string }
  /** etcd username/password authentication. */
  auth?: { username: string; password: string }
  /** TTL of the registry's checkpoint signer lease, seconds. @default 5 */
  leaseTtlSec?: number
  /** Deadline of one etcd call, ms. @default 2000 */
  timeoutMs?: number
}

/** What `/status` and `doctor` show of the connection. */
export interface EtcdStatus {
  endpoints: string[]
  prefix: string
  /** True when the last probe read through a quorum. */
  reachable: boolean
  /** When the probe last succeeded (Unix ms), if ever. */
  lastOkAt?: number
  /** Why the last probe failed. */
  error?: string
  /** The registry checkpoint signer lease, as this node sees it. */
  signer?: { holder: string | undefined; self: boolean }
}

/** Retry-After of an etcd failure. */
const RETRY_AFTER_MS = 1000

/** The node's etcd connection. */
export class EtcdCoordinator {
  readonly client: Etcd3
  /** The client scoped to the cluster's prefix: every store's keys are relative to it. */
  readonly kv: Namespace
  readonly prefix: string
  readonly endpoints: string[]
  readonly leaseTtlSec: number
  readonly timeoutMs: number
  readonly metrics: ServiceMetrics
  readonly logger: Logger
  readonly clock: Clock
  #reachable = true
  #lastOkAt: number | undefined
  #error: string | undefined
  #timer: NodeJS.Timeout | undefined
  #closed = false
  readonly #listeners = new Set<(reachable: boolean) => void>()
  /** Set by the registry log store: the signer lease as this node sees it. */
  signerStatus: (() => { holder: string | undefined; self: boolean }) | undefined

  private constructor(client: Etcd3, s: Required<Pick<EtcdSettings, 'prefix' | 'leaseTtlSec' | 'timeoutMs'>> & { endpoints: string[] }, logger: Logger, clock: Clock) {
    this.client = client
    this.prefix = s.prefix
    this.kv = client.namespace(s.prefix)
    this.endpoints = s.endpoints
    this.leaseTtlSec = s.leaseTtlSec
    this.timeoutMs = s.timeoutMs
    this.logger = logger
    this.clock = clock
    this.metrics = createServiceMetrics({ service: 'etcd' })
    const m = this.metrics
    m.gauge('etcd_up', 'etcd answers a linearizable read (a quorum is reachable): 1, else 0.').set(1)
    const req = m.counter('etcd_requests_total', 'etcd calls by operation and result (ok, error).', ['op', 'result'])
    for (const op of OPS) for (const result of ['ok', 'error']) req.labels({ op, result }).inc(0)
    m.histogram('etcd_request_seconds', 'Duration of etcd calls by operation.', ['op'], [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5])
    const w = m.counter('etcd_watch_events_total', 'Changes received from etcd watches, by area.', ['area'])
    for (const area of ['registry', 'passport', 'names']) w.labels({ area }).inc(0)
    m.counter('etcd_watch_resyncs_total', 'Full reloads of an area after its watch lost its place (compaction), by area.', ['area'])
    m.gauge('etcd_signer_lease_held', 'This node holds the registry checkpoint signer lease: 1, else 0.').set(0)
    m.counter('etcd_signer_lease_acquired_total', 'Times this node acquired the registry checkpoint signer lease.').inc(0)
  }

  /**
   * Connects (lazily: the first call dials) and starts the health probe.
   * @throws when a TLS file cannot be read
   */
  static async connect(settings: EtcdSettings, options: { logger: Logger; clock?: Clock }): Promise<EtcdCoordinator> {
    const [{ Etcd3, isRecoverableError }, { ConsecutiveBreaker, ExponentialBackoff, handleWhen, circuitBreaker, retry }] = await Promise.all([import('etcd3'), import('cockatiel')])
    const timeoutMs = settings.timeoutMs ?? 2000
    const prefix = normalizePrefix(settings.prefix ?? '/ron/')
    const tls = settings.tls
    const opts: IOptions = {
      hosts: settings.endpoints,
      dialTimeout: timeoutMs,
      // Every unary call has a deadline: a member without quorum never makes a request hang.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeoutMs }),
      faultHandling: {
        // A member that keeps failing is skipped for a second; a call is retried on the next
        // member, with a short backoff that rides out a leader election. Every retried write is a
        // transaction whose compare makes a second application impossible, or a put of the same value.
        host: () => circuitBreaker(handleWhen(isRecoverableError), { halfOpenAfter: 1000, breaker: new ConsecutiveBreaker(3) }),
        global: retry(handleWhen(isRecoverableError), { maxAttempts: 3, backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 500 }) }),
        // etcd3 asks the factory for its first step (`next()`), as with its own default.
        watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 1000 }) as unknown as IBackoff<unknown>,
      },
      grpcOptions: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
      ...(tls === undefined
        ? {}
        : {
            credentials: {
              rootCertificate: await readFile(tls.ca),
              ...(tls.cert === undefined ? {} : { certChain: await readFile(tls.cert) }),
              ...(tls.key === undefined ? {} : { privateKey: await readFile(tls.key) }),
            },
          }),
      ...(settings.auth === undefined ? {} : { auth: { username: settings.auth.username, password: settings.auth.password } }),
    }
    const c = new EtcdCoordinator(new Etcd3(opts), { endpoints: settings.endpoints, prefix, leaseTtlSec: settings.leaseTtlSec ?? 5, timeoutMs }, options.logger, options.clock ?? systemClock)
    c.#probeLoop()
    return c
  }

  /** True when the last probe read through a quorum. */
  get reachable(): boolean {
    return this.#reachable
  }

  /** The connection as `/status` shows it. */
  status(): EtcdStatus {
    return {
      endpoints: this.endpoints,
      prefix: this.prefix,
      reachable: this.#reachable,
      ...(this.#lastOkAt === undefined ? {} : { lastOkAt: this.#lastOkAt }),
      ...(this.#error === undefined ? {} : { error: this.#error }),
      ...(this.signerStatus === undefined ? {} : { signer: this.signerStatus() }),
    }
  }

  /** Calls `fn` when reachability changes. @returns a disposer */
  onReachability(fn: (reachable: boolean) => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  /**
   * Runs one etcd call, timed and counted under `op`; any failure becomes 503 `Unavailable`
   * (`etcd_unavailable`) with `Retry-After` (a RON error thrown inside `fn` passes unchanged).
   */
  async call<T>(op: Op, fn: () => Promise<T>): Promise<T> {
    const started = performance.now()
    try {
      const v = await fn()
      this.#count(op, 'ok', started)
      return v
    } catch (e) {
      this.#count(op, 'error', started)
      if (isRonError(e)) throw e
      this.#markDown(e)
      throw unavailable(e)
    }
  }

  #count(op: Op, result: 'ok' | 'error', started: number): void {
    this.metrics.sink.inc('etcd_requests_total', { op, result })
    this.metrics.sink.observe('etcd_request_seconds', { op }, (performance.now() - started) / 1000)
  }

  #markDown(e: unknown): void {
    this.#error = e instanceof Error ? e.message : String(e)
    this.#set(false)
  }

  #set(reachable: boolean): void {
    if (reachable) {
      this.#lastOkAt = this.clock.now()
      this.#error = undefined
    }
    if (reachable === this.#reachable) return
    this.#reachable = reachable
    this.metrics.sink.set('etcd_up', undefined, reachable ? 1 : 0)
    if (reachable) this.logger.info({ endpoints: this.endpoints }, 'etcd reachable again: writes that need it resume')
    else this.logger.error({ endpoints: this.endpoints, err: this.#error }, 'etcd unreachable (no quorum): writes that need it answer 503 Unavailable; reads of what is known go on')
    for (const fn of this.#listeners) fn(reachable)
  }

  /** Probes once: a linearizable read (it goes through the leader, so it needs a quorum). */
  async probe(): Promise<boolean> {
    try {
      await this.call('probe', () => this.kv.get('probe').exec())
      this.#set(true)
      return true
    } catch {
      return false
    }
  }

  #probeLoop(): void {
    if (this.#closed) return
    void this.probe().finally(() => {
      if (this.#closed) return
      this.#timer = setTimeout(() => this.#probeLoop(), 1000)
      this.#timer.unref()
    })
  }

  /** Stops the probe and closes the client (its watches and leases). Idempotent. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#listeners.clear()
    this.client.close()
  }
}

/** Operations counted in `etcd_requests_total{op}`. */
export const OPS = ['probe', 'load', 'append', 'sync', 'propose', 'approve', 'lease', 'checkpoint', 'prune', 'revoke', 'link', 'keys', 'enrol', 'names'] as const
/** One of {@link OPS}. */
export type Op = (typeof OPS)[number]

/** A prefix that starts and ends with `/`. */
export function normalizePrefix(p: string): string {
  let s = p.startsWith('/') ? p : `/${p}`
  if (!s.endsWith('/')) s += '/'
  return s
}

/** 503 Unavailable for an etcd failure. */
export function unavailable(e: unknown): UnavailableError {
  return new UnavailableError(`etcd is unreachable: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`, {
    details: { reason: 'etcd_unavailable' },
    retryAfterMs: RETRY_AFTER_MS,
  })
}

/** A key relative to the namespace (range answers inside a transaction keep the full key). */
export function relKey(c: EtcdCoordinator, key: Buffer | string): string {
  const s = typeof key === 'string' ? key : key.toString('utf8')
  return s.startsWith(c.prefix) ? s.slice(c.prefix.length) : s
}

/** Zero-padded decimal (keys sort in numeric order). */
export function pad(n: number): string {
  return String(n).padStart(16, '0')
}
