/**
 * Signing a token: claims → compact JWS (EdDSA, `kid` of the snapshot's current key) → KMS sign
 * under its deadline. The kid in the header and the key that signs are read from ONE keyring
 * snapshot, so a rotation in between can never produce a mismatch.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import type { Caveats, Clock, MetricsSink } from '@ron/core'
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

const enc = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

/** Signs tokens. @internal */
export class Issuer {
  readonly #o: IssuerOptions
  constructor(o: IssuerOptions) {
    this.#o = o
  }

  /** Signs `plan` with the current key. No retry: a KMS failure or timeout fails this issuance. */
  async sign(plan: SignPlan, kind: IssueKind, signal?: AbortSignal): Promise<IssuedToken> {
    const o = this.#o
    const key = o.keyring.snapshot.current
    const iat = Math.floor(o.clock.now() / 1000)
    const jti = randomBytes(16).toString('base64url')
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
    o.log.noteIssued(jti, plan.exp)
    // Admin tokens are tracked as long-lived tokens (revocable holds on their key) instead.
    if (kind !== 'admin') await o.keyring.noteSigned(key.kid, plan.exp)
    o.metrics.inc('tokens_issued_total', { kind })
    return { token: `${input}.${Buffer.from(sig).toString('base64url')}`, jti, kid: key.kid, exp: plan.exp }
  }
}
