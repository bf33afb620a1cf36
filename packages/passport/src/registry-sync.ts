/**
 * Registry Sync (seed svc-passport §2, task 6): passport's issuance policy and signer sets read
 * from the registry's HEAD descriptor set (SPEC.md 6a "Registry updates": `GET /registry/head`,
 * then the entry `GET /registry/<version>`) through the transport. Every request runs under
 * `registry.timeoutMs` on the injected clock (`io_timeouts_total{op="registry"}` past it); a
 * failed sync is retried with exponential backoff and jitter (`backoff_retries_total{op="registry"}`)
 * and the last good state stays in force — the `registry` readiness path says the registry is
 * unreachable, and since which version passport runs. A descriptor set that does not parse is
 * refused whole (the last good state stays).
 *
 * What is read: the `policy` descriptor named `registry.policyName` (its `rules` parse as a
 * passport policy and replace the config's while synced) and the `issuer-keys` descriptors of this
 * passport's own issuer (the key sets of the other passports signing as it: their tokens verify
 * here). Descriptors of other issuers are ignored: the registry never widens whom passport trusts
 * beyond its own `iss`.
 *
 * @module
 */

import { TimeoutError, UnavailableError, isRonError, type Clock, type Logger, type MetricsSink, type Random, type Transport } from '@ron/core'
import { policySchema, type Policy, type ResolvedPassportConfig } from './config.js'

/** The resolved `registry` section of the config. */
export type RegistrySyncConfig = NonNullable<ResolvedPassportConfig['registry']>

/** What the last good sync read. @internal */
export interface RegistryState {
  /** Registry version (HEAD) it was read from. */
  readonly version: number
  /** The policy descriptor's rules, parsed; `undefined` when HEAD holds none of that name. */
  readonly policy: Policy | undefined
  /** Public JWKs of the `issuer-keys` descriptors of this issuer. */
  readonly keys: readonly unknown[]
}

/** Options of {@link RegistrySync}. @internal */
export interface RegistrySyncOptions {
  net: Transport
  /** The current `registry` section (reloadable). */
  config: () => RegistrySyncConfig | undefined
  /** This passport's `iss`: only its own `issuer-keys` descriptors are read. */
  issuer: string
  clock: Clock
  random: Random
  metrics: MetricsSink
  logger: Logger
  /** Called with each new good state (a new HEAD version). */
  onState(state: RegistryState): void
  /** Called with the sync's health: `ok`, or the reason the last attempt failed. */
  onHealth(ok: boolean, reason?: string): void
}

interface Head {
  version: number
}
interface Entry {
  version: number
  payload?: unknown
  payloadB3?: string
}

/** Reads passport's policy and signer sets from the registry. @internal */
export class RegistrySync {
  readonly #o: RegistrySyncOptions
  #state: RegistryState | undefined
  #failures = 0

  constructor(o: RegistrySyncOptions) {
    this.#o = o
  }

  /** The last good state, if a sync ever succeeded. */
  get state(): RegistryState | undefined {
    return this.#state
  }

  /** Consecutive failed syncs. */
  get failures(): number {
    return this.#failures
  }

  /**
   * One sync: HEAD, then (when it moved) the entry. Resolves once the state is current.
   * @throws {@link TimeoutError} past `timeoutMs`, the transport's error, {@link UnavailableError} for a non-200 answer or a payload that does not parse
   */
  async syncOnce(signal: AbortSignal): Promise<void> {
    const head = await this.#get<Head>('/registry/head', signal)
    if (typeof head.version !== 'number') throw bad('HEAD has no version')
    if (this.#state?.version === head.version) return
    const entry = head.version === 0 ? undefined : await this.#get<Entry>(`/registry/${head.version}`, signal)
    let payload = entry?.payload
    if (entry !== undefined && payload === undefined && typeof entry.payloadB3 === 'string') payload = await this.#get(`/registry/payload/${entry.payloadB3}`, signal)
    this.#state = { version: head.version, ...this.#read(payload) }
    this.#o.onState(this.#state)
  }

  /**
   * The task: syncs every `intervalMs` (±10 % jitter); after a failure, again after a backoff
   * (doubling from `backoffBaseMs` to `backoffMaxMs`, half of it jittered). Ends when `signal` aborts.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { clock } = this.#o
    while (!signal.aborted) {
      const cfg = this.#o.config()
      if (cfg === undefined) return
      let wait: number
      try {
        await this.syncOnce(signal)
        if (this.#failures > 0) this.#o.logger.info({ version: this.#state?.version }, 'registry reachable again')
        this.#failures = 0
        this.#o.onHealth(true)
        wait = cfg.intervalMs * (0.9 + 0.2 * this.#o.random.next())
      } catch (e) {
        if (signal.aborted) return
        this.#failures++
        const reason = isRonError(e, 'Timeout') ? 'registry_timeout' : isRonError(e) && e.details['reason'] === 'registry_invalid' ? 'registry_invalid' : 'registry_unreachable'
        this.#o.onHealth(false, reason)
        this.#o.metrics.inc('backoff_retries_total', { op: 'registry' })
        const cap = Math.min(cfg.backoffMaxMs, cfg.backoffBaseMs * 2 ** Math.min(this.#failures - 1, 30))
        wait = cap / 2 + (cap / 2) * this.#o.random.next()
        this.#o.logger.warn({ err: e, failures: this.#failures, version: this.#state?.version, retryInMs: Math.round(wait) }, 'registry sync failed: keeping the last good policy and signer sets')
      }
      try {
        await clock.sleep(wait, signal)
      } catch {
        return
      }
    }
  }

  /** Parses the descriptor set: refused whole (throws) when it is not one. */
  #read(payload: unknown): Omit<RegistryState, 'version'> {
    if (payload === undefined) return { policy: undefined, keys: [] }
    const items = typeof payload === 'object' && payload !== null ? (payload as { items?: unknown }).items : undefined
    if (!Array.isArray(items)) throw bad('the HEAD payload is not a descriptor set')
    const cfg = this.#o.config()
    let policy: Policy | undefined
    const keys: unknown[] = []
    for (const item of items as Array<Record<string, unknown>>) {
      if (item?.['kind'] === 'policy' && item['name'] === cfg?.policyName) {
        const parsed = policySchema.safeParse(item['rules'])
        if (!parsed.success) throw bad(`policy descriptor '${String(item['name'])}' is not a passport policy: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
        policy = Object.freeze(parsed.data)
      } else if (item?.['kind'] === 'issuer-keys' && item['issuer'] === this.#o.issuer && Array.isArray(item['keys'])) {
        keys.push(...(item['keys'] as unknown[]))
      }
    }
    return { policy, keys }
  }

  /** GET `path` from the registry under the deadline, as JSON. */
  async #get<T>(path: string, signal: AbortSignal): Promise<T> {
    const { clock, net } = this.#o
    const timeoutMs = this.#o.config()?.timeoutMs ?? 3000
    const target = this.#o.config()?.target ?? 'registry'
    const ac = new AbortController()
    const onAbort = (): void => ac.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    let timedOut = false
    const timer = clock.setTimeout(() => {
      timedOut = true
      ac.abort(new TimeoutError(`registry ${path} timed out after ${timeoutMs} ms`, { details: { op: 'registry' } }))
    }, timeoutMs)
    timer.unref?.()
    try {
      const res = await net.request(target, { method: 'GET', path, signal: ac.signal, timeoutMs })
      if (res.status !== 200) {
        await res.dump()
        throw new UnavailableError(`registry answered ${res.status} to GET ${path}`, { details: { reason: 'registry_unreachable', status: res.status } })
      }
      return await res.json<T>()
    } catch (e) {
      if (timedOut || (isRonError(e, 'Timeout') && !signal.aborted)) {
        this.#o.metrics.inc('io_timeouts_total', { op: 'registry' })
        throw new TimeoutError(`registry ${path} timed out after ${timeoutMs} ms`, { details: { op: 'registry' }, cause: e })
      }
      throw e
    } finally {
      clock.clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
    }
  }
}

function bad(message: string): UnavailableError {
  return new UnavailableError(`registry sync: ${message}`, { details: { reason: 'registry_invalid' } })
}
