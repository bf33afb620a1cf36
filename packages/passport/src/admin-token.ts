/**
 * The host's admin token (SPEC.md section 5): the one token above the policy's max ttl. ron-node
 * mints it through passport's admin path with a 30-day life, renews it at start and when fewer
 * than 10 days remain, and on rotation mints a new one and *retires* the old one ("Retiring is
 * not revoking": the old token stops verifying at once, tokens minted from it live on). These
 * helpers do the passport side; writing the token file (0600, atomically, before the old token is
 * retired) is the host's.
 *
 * @module
 */

import { systemClock, type Clock } from '@ron/core/base'
import type { IssuedToken } from './dto.js'
import type { KeyringSummary, PassportService } from './service.js'

/** Options of {@link ensureAdminToken} and {@link rotateWithAdminToken}. */
export interface AdminTokenOptions {
  /** The admin token in use, if any. */
  current?: string | undefined
  /** Audiences of the admin token (every service the node runs). */
  aud: string[]
  /** Scopes (the whole catalog, `ALL_SCOPES`). */
  scope: string[]
  /** @default 'admin' */
  sub?: string
  /** Life of a new admin token, seconds. @default 2592000 (30 days) */
  ttlSec?: number
  /** Renew when fewer than this many seconds remain. @default 864000 (10 days) */
  renewBelowSec?: number
  /** @default systemClock */
  clock?: Clock
  /**
   * Stores a newly minted token (the host's token file, atomically) before the old one is
   * retired: a failure leaves the old token in force and in place. @default none
   */
  persist?: (token: IssuedToken) => Promise<void>
}

/** An admin token and whether it was just minted. */
export interface AdminTokenResult extends IssuedToken {
  /** True when a new token was minted (and the previous one, if any, retired). */
  renewed: boolean
}

const DAY = 86_400

/**
 * Returns the current admin token when passport still accepts it and more than `renewBelowSec`
 * remain; otherwise mints a new one and retires the old one (if it was still valid): the old token
 * stops verifying at once, what was minted from it stays valid. A host that keeps the token in a
 * file should write the new one before the old one is retired (pass `persist`).
 *
 * @example
 * ```ts
 * const admin = await ensureAdminToken(passport, { current: await readTokenFile(), aud: SERVICES, scope: [...ALL_SCOPES] })
 * if (admin.renewed) await writeTokenFileAtomically(admin.token)
 * ```
 */
export async function ensureAdminToken(passport: PassportService, options: AdminTokenOptions): Promise<AdminTokenResult> {
  const clock = options.clock ?? systemClock
  const renewBelow = options.renewBelowSec ?? 10 * DAY
  let old: { jti: string; exp: number } | undefined
  if (options.current !== undefined && options.current !== '') {
    try {
      const c = await passport.verifier.verify(options.current, { audience: '', anyAudience: true })
      old = { jti: c.jti, exp: c.exp }
      if (c.exp - clock.now() / 1000 > renewBelow) {
        const kid = (JSON.parse(Buffer.from(options.current.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string }).kid
        return { token: options.current, jti: c.jti, kid, exp: c.exp, renewed: false }
      }
    } catch {
      // Expired, revoked, from a retired key: mint a fresh one.
    }
  }
  const fresh = await passport.mintAdminToken({ sub: options.sub ?? 'admin', aud: options.aud, scope: options.scope, ttlSec: options.ttlSec ?? 30 * DAY })
  await options.persist?.(fresh)
  if (old !== undefined) await passport.retire(old.jti, { exp: old.exp })
  return { ...fresh, renewed: true }
}

/**
 * Rotates the issuer key, mints a new admin token with the new key and retires the old one, so
 * the old key is no longer held by the admin token and retires after the policy's max ttl (tokens
 * the old admin token minted keep it verifying until they expire).
 */
export async function rotateWithAdminToken(passport: PassportService, options: AdminTokenOptions): Promise<{ keys: KeyringSummary; admin: AdminTokenResult }> {
  await passport.rotate()
  const admin = await ensureAdminToken(passport, { ...options, renewBelowSec: Infinity })
  // Read after the retirement: the old key's retirement no longer waits for the old admin token.
  return { keys: passport.keySummary(), admin }
}
