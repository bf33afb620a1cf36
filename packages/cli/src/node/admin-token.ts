/**
 * The node's admin token: minted at start (by passport when the node hosts one, else with the
 * issuer key), kept in `<dataDir>/admin.token` (mode 0600), replaced when a passport key rotation
 * retires its key, and renewed while the node runs when fewer than 10 days remain. A replaced
 * token is retired (SPEC §5 "Retiring is not revoking"). In amnesia mode it is only minted.
 *
 * @module
 */

import { signToken, type Clock, type IssuerKey, type Logger, type RevocationCheck } from '@ron/core'
import type { PreparedDataDir } from '../data-dir.js'
import { ADMIN_AUDIENCES, ADMIN_SCOPES, ensureAdminToken, tokenIdOf } from '../keys.js'
import type { PassportHandles } from '../services.js'

/** Options of {@link startAdminToken}. */
export interface AdminTokenOptions {
  /** The data directory (absent in amnesia mode: the token is only minted). */
  layout: PreparedDataDir | undefined
  issuer: IssuerKey
  /** The node's own passport, when it hosts one. */
  passport: PassportHandles | undefined
  ttlSec: number
  /** How often the running node checks its token. */
  checkEveryMs: number
  clock: Clock
  logger: Logger
}

/** The running admin token. */
export interface AdminToken {
  /** The current token. */
  readonly token: string
  /** Stops the renewal timer and the rotation hook. Idempotent. */
  stop(): void
}

/**
 * Mints or loads the admin token (renewed or replaced as needed) and, with a data directory, keeps
 * it current while the node runs.
 * @throws when the token cannot be minted or written
 */
export async function startAdminToken(o: AdminTokenOptions): Promise<AdminToken> {
  const { layout, issuer, passport: p, ttlSec, clock, logger } = o
  const mint =
    p === undefined
      ? (ttl: number) => Promise.resolve(signToken(issuer, { sub: 'admin', aud: [...ADMIN_AUDIENCES], scope: [...ADMIN_SCOPES], ttlSec: ttl }, { clock }))
      : async (ttl: number) => (await p.mintAdminToken({ sub: 'admin', aud: [...ADMIN_AUDIENCES], scope: [...ADMIN_SCOPES], ttlSec: ttl })).token
  let token: string | undefined
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let offRotate: (() => void) | undefined = undefined
  const handle: AdminToken = {
    get token() {
      return token!
    },
    stop() {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      offRotate?.()
    },
  }
  if (layout === undefined) {
    token = await mint(ttlSec)
    return handle
  }
  const tokenFile = layout.adminToken
  // One replacement at a time: the renewal timer and a rotation never interleave.
  let ops: Promise<unknown> = Promise.resolve()
  const ensure = (): Promise<void> => {
    const run = ops.then(replace, replace)
    ops = run.catch(() => undefined)
    return run
  }
  async function replace(): Promise<void> {
    const t = await ensureAdminToken(tokenFile, issuer, {
      clock,
      ttlSec,
      mint,
      ...(p === undefined
        ? {}
        : { keys: p.keys, revocations: p.revocations as RevocationCheck, currentKid: () => (p.jwks().keys as { kid: string; status?: string }[]).find((k) => k.status === 'current')?.kid }),
    })
    if (t.fixedMode === true) logger.warn({ path: tokenFile }, 'admin token file was readable by others; changed its mode to 600')
    if (t.minted) {
      logger.info({ path: tokenFile }, 'wrote admin token')
      // SPEC §5 "Retiring is not revoking": the replaced admin token (renewal at start or under
      // 10 days left, key rotation) stops verifying at once; what it minted lives on. Retired
      // only now that its replacement is on disk.
      const old = tokenIdOf(t.replaced ?? token ?? '')
      if (p !== undefined && old !== undefined && old.jti !== tokenIdOf(t.token)?.jti) {
        await p.retire(old.jti, old.exp === undefined ? {} : { exp: old.exp }).catch((e: unknown) => logger.warn({ err: e }, 'could not retire the replaced admin token'))
      }
    }
    token = t.token
  }
  // A rotation replaces the admin token before it answers: minted with the new key, written
  // atomically, the old one retired.
  offRotate = p?.onRotate(() => ensure())
  try {
    await ensure()
  } catch (e) {
    handle.stop()
    throw e
  }
  // Renewed while running too: when fewer than 10 days remain, or its key was rotated away.
  const tick = (): void => {
    timer = setTimeout(() => {
      ensure()
        .catch((e: unknown) => logger.warn({ err: e }, 'could not renew the admin token'))
        .finally(() => {
          if (!stopped) tick()
        })
    }, o.checkEveryMs)
    timer.unref()
  }
  tick()
  return handle
}
