/**
 * What passport's route handlers share. @internal
 *
 * @module
 */

import type { CachingTokenVerifier, Claims, Clock, MetricsSink, RevocationFeedItem, ServiceHost, SseHub } from '@ron/core'
import type { Policy, ResolvedPassportConfig } from '../config.js'
import type { IssueKind, Issuer, SignPlan } from '../issuer.js'
import type { Keyring, KeyringSnapshot } from '../keyring.js'
import type { NodeRegistry } from '../nodes.js'
import type { RevocationLog } from '../revocations.js'
import type { IssuedToken, RevokeResult } from '../dto.js'

/** Passport's shared state and helpers. @internal */
export interface PassportContext {
  readonly host: ServiceHost<ResolvedPassportConfig>
  readonly cfg: ResolvedPassportConfig
  readonly clock: Clock
  readonly metrics: MetricsSink
  /** The policy snapshot in force (`undefined` = none: nothing is issued). */
  policy(): Policy | undefined
  readonly keyring: Keyring
  readonly log: RevocationLog
  readonly nodes: NodeRegistry
  readonly issuer: Issuer
  /** Verifies against passport's own keys and revocations (never stale). */
  readonly verifier: CachingTokenVerifier
  /** Runs a job on the issuance pool (full → 429 Busy, counted in queue_dropped_total{queue="issue"}). */
  submitIssue<T>(job: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T>
  /**
   * Mints a token from the token `parent` (issue, attenuate): adopted under its parent before it
   * is signed, handed out only once its parent link is on disk, never if the parent is being revoked.
   */
  mintChild(parent: string, plan: Omit<SignPlan, 'prf' | 'jti'>, kind: IssueKind, signal: AbortSignal): Promise<IssuedToken>
  /** Revokes a token and its subtree through the single revocation worker (full → 429 Busy). */
  revoke(jti: string, exp: number | undefined, signal: AbortSignal): Promise<RevokeResult>
  /** Rotates the issuer key (serialised). */
  rotate(): Promise<KeyringSnapshot>
  readonly hub: SseHub<RevocationFeedItem>
  /** Verifies a token for a route that carries it in the body. */
  verifyBodyToken(token: string, aud?: string): Promise<Claims>
}
