/**
 * Upload capabilities: how interop obtains one ({@link attenuateCapability}: by *attenuating* its
 * own `storage:write` service token through passport, never by issuing — SPEC §5 "Service-call
 * scopes"), and the cache that keeps them for reuse: one per API-key client and upload limit,
 * shared by that client's uploads for the first two thirds of its life (the renewal point of core's
 * token provider, SPEC §5), so an upload costs a passport round trip (a signature) and a cold
 * verification in storage only when its client's capability is due for renewal, not every time.
 *
 * The capability never changes meaning by being shared: the same client, audience, scope and
 * `maxBytes` caveat (a per-request limit in storage) as a fresh one; it still lives ≤ 60 s. Storage
 * refusing it (401/403: revoked, expired, key rotated) drops it at once, and a configuration
 * reload drops them all. Concurrent uploads of a client with no fresh capability share one
 * issuance.
 *
 * @module
 */

import { InternalError, NotReadyError, errorFromResponse, raceAbort, type Clock } from '@ron/core'
import type { InteropContext } from './routes/context.js'

/** A capability from passport. */
export interface Capability {
  token: string
  jti: string
  /**
   * Its life as passport signed it (`exp − iat`, ms), when known: measured on passport's clock
   * alone, so a clock skew between the nodes cannot stretch the reuse.
   */
  lifeMs?: number | undefined
}

/** `exp − iat` of a compact JWT in ms, or undefined when the payload does not say. */
export function tokenLifeMs(token: string): number | undefined {
  const first = token.indexOf('.')
  const second = token.indexOf('.', first + 1)
  if (first < 0 || second < 0) return undefined
  try {
    const p = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString('utf8')) as { iat?: unknown; exp?: unknown }
    if (typeof p.iat !== 'number' || typeof p.exp !== 'number' || !(p.exp > p.iat)) return undefined
    return (p.exp - p.iat) * 1000
  } catch {
    return undefined
  }
}

interface Entry {
  cap: Promise<Capability>
  /** Until when (clock ms) the entry is handed out; the issuance's start + 2/3 of its life. */
  renewAtMs: number
  /** The capability once issued. */
  value?: Capability
}

/** Options of {@link CapabilityCache}. */
export interface CapabilityCacheOptions {
  clock: Clock
  /** Most entries (clients × limits). @default 1024 */
  maxEntries?: number
}

/** See the module comment. */
export class CapabilityCache {
  readonly #clock: Clock
  readonly #max: number
  readonly #entries = new Map<string, Entry>()

  constructor(options: CapabilityCacheOptions) {
    this.#clock = options.clock
    this.#max = options.maxEntries ?? 1024
  }

  /** Entries held (fresh or pending). */
  get size(): number {
    return this.#entries.size
  }

  /**
   * The capability for `key` (client + limit), issuing one with `issue` when there is none or it
   * is past two thirds of its life (`ttlMs`, or less if the token's own `exp − iat` says so). `issue` runs
   * without the caller's signal (other uploads may wait on it; the upstream call has its own
   * deadline); `signal` only stops this caller from waiting.
   */
  get(key: string, ttlMs: number, issue: () => Promise<Capability>, signal?: AbortSignal): Promise<Capability> {
    const now = this.#clock.now()
    const hit = this.#entries.get(key)
    if (hit !== undefined && now < hit.renewAtMs) return raceAbort(hit.cap, signal)
    if (hit !== undefined) this.#entries.delete(key)
    const entry: Entry = { cap: issue(), renewAtMs: now + (ttlMs * 2) / 3 }
    entry.cap.then(
      (c) => {
        entry.value = c
        if (c.lifeMs !== undefined) entry.renewAtMs = Math.min(entry.renewAtMs, now + (c.lifeMs * 2) / 3)
      },
      () => {
        // A failed issuance is never handed out again.
        if (this.#entries.get(key) === entry) this.#entries.delete(key)
      },
    )
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
    this.#entries.set(key, entry)
    return raceAbort(entry.cap, signal)
  }

  /** Drops `key`'s capability if it is still `token` (storage refused it). */
  invalidate(key: string, token: string): void {
    if (this.#entries.get(key)?.value?.token === token) this.#entries.delete(key)
  }

  /** Drops every capability (configuration reload). */
  clear(): void {
    this.#entries.clear()
  }
}

/** The `exp` claim (JWT seconds) of a compact JWT, or undefined. */
function expOf(token: string): number | undefined {
  try {
    const p = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof p.exp === 'number' ? p.exp : undefined
  } catch {
    return undefined
  }
}

/** Clock skew between interop and passport that a requested capability life allows for, seconds. */
const SKEW_SEC = 30

/**
 * Obtains an upload capability for `client` by attenuating interop's own `storage:write` service
 * token (`POST /v1/passport/attenuate`, no bearer token: holding the parent is the right to narrow
 * it): one audience (storage), scope `storage:write`, `maxBytes` narrowed to the client's limit,
 * life ≤ `uploads.capabilityTtlSec` (≤ 60 s). So the capability can never carry more than interop
 * holds, and revoking interop's service token revokes every capability attenuated from it. Not
 * retried (attenuating mints). Runs without the requesting upload's signal: the capability is
 * shared by the client's uploads (see {@link CapabilityCache}); the upstream call's own deadline
 * bounds it.
 * @throws {@link NotReadyError} when passport refuses (503: interop's failure, not the client's)
 */
export async function attenuateCapability(s: InteropContext, client: string, maxBytes: number, corrId: string, signal?: AbortSignal): Promise<Capability> {
  const cfg = s.cfg()
  const parent = await s.tokens.token({ aud: cfg.storageAudience, scope: ['storage:write'] }, signal)
  // The child may not outlive its parent: ask for the capability's life only while the parent
  // outlives it (with room for clock skew); otherwise inherit the parent's (shorter) expiry.
  const ttlSec = cfg.uploads.capabilityTtlSec
  const parentExp = expOf(parent)
  const inherit = parentExp !== undefined && parentExp - s.clock.now() / 1000 <= ttlSec + SKEW_SEC
  const body = { token: parent, aud: [cfg.storageAudience], scope: ['storage:write'], caveats: { maxBytes }, ...(inherit ? {} : { ttlSec }) }
  const res = await s.upstreams.call(cfg.passport.target, {
    op: 'passport.attenuate',
    method: 'POST',
    path: '/v1/passport/attenuate',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    timeoutMs: cfg.passport.timeoutMs,
    idempotent: false,
    ...(signal === undefined ? {} : { signal }),
    corrId,
  })
  if (res.status >= 400) {
    const err = await errorFromResponse(res)
    throw new NotReadyError(`passport refused the upload capability: ${err.code}`, { details: { upstream: 'passport', code: err.code }, cause: err, retryAfterMs: 1000 })
  }
  const out = await res.json<{ token?: unknown; jti?: unknown }>()
  if (typeof out.token !== 'string') throw new InternalError('passport answered without a token')
  return { token: out.token, jti: typeof out.jti === 'string' ? out.jti : '', lifeMs: tokenLifeMs(out.token) }
}
