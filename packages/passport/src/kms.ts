/**
 * Keys at rest behind a KMS interface (seed svc-passport section 5): every call carries a
 * deadline, signing is never retried implicitly. {@link createMemoryKeystore} keeps keys in
 * memory (tests, amnesia); `createFileKeystore` keeps them in 0600 files. A host can plug its
 * own (an HSM, a cloud KMS) by implementing {@link Kms}.
 *
 * @module
 */

import { sign } from 'node:crypto'
import { NotFoundError, abortReason } from '@ron/core/base'
import { generateIssuerKey, type IssuerKey, type Jwk } from '@ron/core/auth'

/** A key as the KMS describes it (never the private part). */
export interface KmsKey {
  /** Key id: `<RFC 7638 thumbprint>#<epoch>` for generated keys. */
  kid: string
  /** The public key as a JWK (with `kid`, `alg`, `use`). */
  publicJwk: Jwk
}

/**
 * Where issuer keys live and sign. Every method takes an `AbortSignal` that aborts at the
 * passport's KMS deadline (default 3 s): an implementation should stop waiting when it fires.
 */
export interface Kms {
  /** Creates a fresh Ed25519 key for `epoch` and returns its public half. */
  generate(epoch: number, signal: AbortSignal): Promise<KmsKey>
  /** Stores an existing key (ron-node's issuer key becoming the first epoch). */
  import(key: IssuerKey, signal: AbortSignal): Promise<KmsKey>
  /**
   * Signs `data` (the JWS signing input) with key `kid`: a 64-byte Ed25519 signature.
   * @throws {@link NotFoundError} for an unknown kid
   */
  sign(kid: string, data: Uint8Array, signal: AbortSignal): Promise<Uint8Array>
  /** Every key held. */
  list(signal: AbortSignal): Promise<KmsKey[]>
  /** Forgets a retired key. Unknown kids are ignored. */
  destroy(kid: string, signal: AbortSignal): Promise<void>
  /** Releases resources. */
  close?(): Promise<void>
}

function check(signal: AbortSignal): void {
  if (signal.aborted) throw abortReason(signal)
}

/**
 * Keys in memory: nothing survives a restart. For tests and amnesia mode.
 *
 * @example
 * ```ts
 * const svc = await createPassportService({ keystore: createMemoryKeystore(), policy })
 * ```
 */
export function createMemoryKeystore(): Kms {
  const keys = new Map<string, IssuerKey>()
  const info = (k: IssuerKey): KmsKey => ({ kid: k.kid, publicJwk: { ...k.publicJwk } })
  return {
    generate(epoch, signal) {
      check(signal)
      const k = generateIssuerKey({ epoch })
      keys.set(k.kid, k)
      return Promise.resolve(info(k))
    },
    import(key, signal) {
      check(signal)
      keys.set(key.kid, key)
      return Promise.resolve(info(key))
    },
    sign(kid, data, signal) {
      check(signal)
      const k = keys.get(kid)
      if (k === undefined) return Promise.reject(new NotFoundError(`no key ${kid}`, { details: { kid } }))
      return Promise.resolve(sign(null, data, k.privateKey))
    },
    list(signal) {
      check(signal)
      return Promise.resolve([...keys.values()].map(info))
    },
    destroy(kid, signal) {
      check(signal)
      keys.delete(kid)
      return Promise.resolve()
    },
  }
}
