/**
 * Where a verifier gets issuer public keys: the {@link KeySource} interface and a static set.
 * The networked source (passport's JWKS over a transport) is `remoteKeySource` in
 * `auth-remote/`, above the transport layer: token crypto imports no transport.
 *
 * @module
 */

import type { KeyObject } from 'node:crypto'
import { publicKeyFromJwk, type IssuerKey, type Jwk, type Jwks } from './issuer-key.js'

/** Resolves a token's `kid` to an Ed25519 public key. */
export interface KeySource {
  /**
   * The public key named `kid`, or `undefined` when no such key is known.
   * @throws {@link NotReadyError} (remote sources) when the key set cannot be fetched.
   */
  getKey(kid: string, signal?: AbortSignal): Promise<KeyObject | undefined>
}

/**
 * The Ed25519 keys of a JWKS by `kid`; entries without a `kid` or not Ed25519 are skipped.
 * @internal shared with `auth-remote/remote-key-source.ts`
 */
export function indexJwks(keys: readonly unknown[]): Map<string, KeyObject> {
  const out = new Map<string, KeyObject>()
  for (const jwk of keys) {
    const kid = (jwk as Partial<Jwk> | null)?.kid
    if (typeof kid !== 'string' || kid.length === 0) continue
    const k = publicKeyFromJwk(jwk)
    if (k) out.set(kid, k)
  }
  return out
}


/**
 * A fixed key set: a JWKS document or a list of {@link IssuerKey}s. JWKs without a `kid` or that
 * are not Ed25519 are ignored.
 *
 * @example
 * ```ts
 * const keys = staticKeySource([generateIssuerKey()])
 * ```
 */
export function staticKeySource(source: Jwks | { keys: readonly unknown[] } | readonly IssuerKey[]): KeySource {
  const map = Array.isArray(source)
    ? new Map((source as readonly IssuerKey[]).map((k) => [k.kid, k.publicKey] as const))
    : indexJwks((source as { keys: readonly unknown[] }).keys)
  return { getKey: (kid) => Promise.resolve(map.get(kid)) }
}
