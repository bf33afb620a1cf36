/**
 * Signing a token: claims → compact JWS (EdDSA, `kid` of the snapshot's current key) → KMS sign
 * under its deadline. The kid in the header and the key that signs are read from ONE keyring
 * snapshot, so a rotation in between can never produce a mismatch; and a key rotated out while
 * the KMS was signing never yields the token: it is signed again with the new current key (SPEC.md
 * §5: a key that stops signing stops at once).
 *
 * @module
 */

import { NotReadyError, newTokenId, type Caveats, type Clock, type MetricsSink } from '@ron/core'
import type { IssuedToken } from './dto.js'
import type { Keyring } from './keyring.js'
import type { KmsGuard } from './kms-guard.js'
import type { RevocationLog } from './revocations.js'

/** What a token is issued for: the `kind` label of `tokens_issued_total`. */
export type IssueKind = 'issue' | 'attenuate' | 'service' | 'admin'

/** The claims to sign (everything but `iss`, `iat`, `jti`). */
export interface SignPlan {
  sub: string
  aud: string[]
  scope: string[]
  /** JWT seconds. */
  exp: number
  nbf?: number
  prf?: string
  caveats?: Caveats
  /** The token id, when the caller reserved one (a child adopted under its parent first). @default random */
  jti?: string
}

/** Options of {@link Issuer}. @internal */
export interface IssuerOptions {
  iss: string
  keyring: Keyring
  guard: KmsGuard
  log: RevocationLog
  clock: Clock
  metrics: MetricsSink
}

/** Re-signings after a rotation raced a signature, before an issuance gives up. */
const MAX_ROTATION_RETRIES = 3

const enc = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

/** Signs tokens. @internal */
export class Issuer {
  readonly #o: IssuerOptions
  constructor(o: IssuerOptions) {
    this.#o = o
  }

  /**
   * Signs `plan` with the current key. No retry on a KMS failure or timeout (it fails this
   * issuance); a rotation during the KMS call makes it sign again with the new key (at most
   * {@link MAX_ROTATION_RETRIES} times).
   */
  async sign(plan: SignPlan, kind: IssueKind, signal?: AbortSignal): Promise<IssuedToken> {
    const jti = plan.jti ?? newTokenId()
    for (let attempt = 0; ; attempt++) {
      const t = await this.#signOnce(plan, jti, kind, signal)
      if (t !== undefined) return t
      if (attempt >= MAX_ROTATION_RETRIES) {
        throw new NotReadyError('issuer keys rotated during every signing attempt', { details: { reason: 'rotating' }, retryAfterMs: 1000 })
      }
    }
  }

  /** One signing; `undefined` when the key was rotated out before the signature came back. */
  async #signOnce(plan: SignPlan, jti: string, kind: IssueKind, signal?: AbortSignal): Promise<IssuedToken | undefined> {
    const o = this.#o
    const key = o.keyring.snapshot.current
    const iat = Math.floor(o.clock.now() / 1000)
    const payload: Record<string, unknown> = {
      iss: o.iss,
      sub: plan.sub,
      aud: plan.aud,
      scope: plan.scope.join(' '),
      iat,
      ...(plan.nbf === undefined ? {} : { nbf: plan.nbf }),
      exp: plan.exp,
      jti,
      ...(plan.prf === undefined ? {} : { prf: plan.prf }),
      ...(plan.caveats === undefined ? {} : { ron: plan.caveats }),
    }
    const input = `${enc({ alg: 'EdDSA', typ: 'JWT', kid: key.kid })}.${enc(payload)}`
    const started = o.clock.now()
    const sig = await o.guard.call('sign', (s) => o.guard.kms.sign(key.kid, Buffer.from(input, 'ascii'), s), signal)
    o.metrics.observe('passport_issue_latency_seconds', undefined, (o.clock.now() - started) / 1000)
    // Rotated out while the KMS signed: this token is never handed out (nothing records it).
    if (o.keyring.snapshot.current.kid !== key.kid) return undefined
    // Admin tokens are tracked as long-lived tokens (revocable holds on their key) instead.
    if (kind !== 'admin') {
      await o.keyring.noteSigned(key.kid, plan.exp)
      if (o.keyring.snapshot.current.kid !== key.kid) return undefined
    }
    o.log.noteIssued(jti, plan.exp)
    o.metrics.inc('tokens_issued_total', { kind })
    return { token: `${input}.${Buffer.from(sig).toString('base64url')}`, jti, kid: key.kid, exp: plan.exp }
  }
}
