/**
 * Passport's key set fetched through a {@link Transport}: cached, and refetched on an unknown
 * `kid` at most once per cooldown. Networked auth lives here, above the transport layer, apart
 * from the token crypto in `auth/`.
 *
 * @module
 */

import type { KeyObject } from 'node:crypto'
import { abortReason, systemClock, type Clock } from '../clock.js'
import { NotReadyError, isRonError, type RonError } from '../errors.js'
import { errorFromResponse } from '../transport/response.js'
import type { Transport } from '../transport/types.js'
import type { Jwks } from '../auth/issuer-key.js'
import { indexJwks, type KeySource } from '../auth/key-source.js'

/**
 * When each key of a JWKS stops verifying: passport publishes `retiresAt` (Unix ms) on keys that
 * no longer sign (status `previous`), so a verifier drops them on time even between fetches.
 */
function retirements(keys: readonly unknown[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const jwk of keys) {
    const j = jwk as { kid?: unknown; retiresAt?: unknown } | null
    if (typeof j?.kid === 'string' && typeof j.retiresAt === 'number' && Number.isFinite(j.retiresAt)) out.set(j.kid, j.retiresAt)
  }
  return out
}

/** Options of {@link remoteKeySource}. */
export interface RemoteKeySourceOptions {
  /** How to reach passport. */
  transport: Transport
  /** Transport target name. @default 'passport' */
  target?: string
  /** Path of the JWKS. @default '/v1/passport/keys' */
  path?: string
  /** Minimum time between two fetches triggered by unknown kids (or retries after failure). @default 30000 */
  cooldownMs?: number
  /** Age after which the cached set is refreshed on use. @default 300000 */
  ttlMs?: number
  /** Per-fetch deadline. @default 5000 */
  timeoutMs?: number
  /** @default systemClock */
  clock?: Clock
}

/** A {@link KeySource} backed by passport's JWKS, with fetch statistics for tests and metrics. */
export interface RemoteKeySource extends KeySource {
  /** How many fetches were started (successful or not). */
  readonly fetches: number
}

/**
 * Passport's key set (SPEC.md section 5): fetched on first use, cached for `ttlMs`, and refetched
 * when a token names an unknown `kid`, at most once per `cooldownMs`. Concurrent misses share one
 * fetch. When a refresh fails, the previously fetched keys stay in use. A key published with
 * `retiresAt` (Unix ms; passport sets it on verify-only `previous` keys) is treated as unknown
 * from that instant on, without waiting for the next fetch.
 *
 * @throws (from `getKey`) {@link NotReadyError} when no key set could be fetched for an unknown
 * kid (the last fetch failed); the verifier propagates it as a 503, not a 401.
 * @example
 * ```ts
 * const keys = remoteKeySource({ transport, cooldownMs: 30_000 })
 * const verifier = createTokenVerifier({ keys })
 * ```
 */
export function remoteKeySource(opts: RemoteKeySourceOptions): RemoteKeySource {
  const { transport } = opts
  const target = opts.target ?? 'passport'
  const path = opts.path ?? '/v1/passport/keys'
  const cooldownMs = opts.cooldownMs ?? 30_000
  const ttlMs = opts.ttlMs ?? 300_000
  const timeoutMs = opts.timeoutMs ?? 5000
  const clock = opts.clock ?? systemClock

  let keys = new Map<string, KeyObject>()
  let retire = new Map<string, number>()
  let fetchedAt = -Infinity
  let lastAttempt = -Infinity
  let lastError: unknown
  let inflight: Promise<void> | undefined
  let fetches = 0

  async function fetchOnce(): Promise<void> {
    fetches++
    lastAttempt = clock.now()
    try {
      const res = await transport.request(target, { method: 'GET', path, headers: { accept: 'application/json' }, timeoutMs })
      if (res.status !== 200) throw await errorFromResponse(res)
      const doc = await res.json<Partial<Jwks>>()
      if (doc === null || typeof doc !== 'object' || !Array.isArray(doc.keys)) {
        throw new NotReadyError('issuer key set is not a JWKS', { details: { dependency: target } })
      }
      keys = indexJwks(doc.keys)
      retire = retirements(doc.keys)
      fetchedAt = clock.now()
      lastError = undefined
    } catch (e) {
      lastError = e
      throw e
    }
  }

  // Shared by concurrent callers; never rejects (callers inspect lastError).
  function refresh(): Promise<void> {
    inflight ??= fetchOnce()
      .catch(() => undefined)
      .finally(() => {
        inflight = undefined
      })
    return inflight
  }

  function unavailable(): RonError {
    const cause = lastError
    if (isRonError(cause, 'NotReady')) return cause
    return new NotReadyError('issuer key set unavailable', { details: { dependency: target }, cause })
  }

  async function waitFor(p: Promise<void>, signal?: AbortSignal): Promise<void> {
    if (!signal) return p
    if (signal.aborted) throw abortReason(signal)
    let onAbort: (() => void) | undefined
    try {
      await Promise.race([
        p,
        new Promise<never>((_, reject) => {
          onAbort = () => reject(abortReason(signal))
          signal.addEventListener('abort', onAbort, { once: true })
        }),
      ])
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort)
    }
  }

  return {
    get fetches() {
      return fetches
    },
    async getKey(kid, signal) {
      const now = clock.now()
      const retiresAt = retire.get(kid)
      if (retiresAt !== undefined && now >= retiresAt) return undefined
      const known = keys.get(kid)
      const stale = now - fetchedAt >= ttlMs
      const mayFetch = inflight !== undefined || now - lastAttempt >= cooldownMs
      if (known && !stale) return known
      if (!mayFetch) {
        if (known) return known
        if (lastError !== undefined) throw unavailable()
        return undefined
      }
      await waitFor(refresh(), signal)
      const after = keys.get(kid)
      if (after) return after
      if (lastError === undefined) return undefined // fresh set: kid unknown (or retired)
      if (known) return known // refresh failed: keep serving the cached key
      throw unavailable()
    },
  }
}
