/**
 * A throwaway token issuer for tests: services can be tested before (and without) passport.
 *
 * @module
 */

import { systemClock, type Clock } from '../clock.js'
import { generateIssuerKey, type IssuerKey, type Jwks } from '../auth/issuer-key.js'
import { staticKeySource, type KeySource } from '../auth/key-source.js'
import { signToken, type TokenClaimsInput } from '../auth/sign.js'
import { createTokenVerifier, type TokenVerifierOptions } from '../auth/verifier.js'
import type { TokenVerifier } from '../auth/types.js'

/** Options of {@link createTestIssuer}. */
export interface TestIssuerOptions {
  /** Clock for `iat`/`exp` of minted tokens and for the convenience verifier. @default systemClock */
  clock?: Clock
  /** Key id. @default `<thumbprint>#1` */
  kid?: string
}

/** Claims for {@link TestIssuer.mint}: only `scope` is required. */
export type MintClaims = Partial<Omit<TokenClaimsInput, 'scope' | 'aud'>> & { scope: string | string[]; aud?: string | string[] }

/** A key plus helpers to mint and verify tokens in tests. */
export interface TestIssuer {
  readonly key: IssuerKey
  /** A static key source holding {@link TestIssuer.key}. */
  readonly keys: KeySource
  /** The JWKS document passport would serve for this key. */
  readonly jwks: Jwks
  /**
   * Mints a token. Defaults: `sub: 'test'`, `aud` every RON service
   * (`storage`, `registry`, `passport`, `index`, `interop`), `ttlSec` 3600.
   */
  mint(claims: MintClaims): string
  /** A verifier over {@link TestIssuer.keys} on the issuer's clock. */
  verifier(opts?: Partial<TokenVerifierOptions>): TokenVerifier
}

/** Every service id, the default audience of minted tokens. */
export const TEST_ISSUER_AUDIENCE: readonly string[] = ['storage', 'registry', 'passport', 'index', 'interop']

/**
 * Creates a test issuer with a fresh Ed25519 key.
 *
 * @example
 * ```ts
 * const issuer = createTestIssuer({ clock })
 * const token = issuer.mint({ scope: 'storage:write', aud: 'storage' })
 * const svc = await createStorageService({ auth: { keys: issuer.keys } }, transport)
 * ```
 */
export function createTestIssuer(opts: TestIssuerOptions = {}): TestIssuer {
  const clock = opts.clock ?? systemClock
  const key = generateIssuerKey(opts.kid === undefined ? {} : { kid: opts.kid })
  const keys = staticKeySource([key])
  return {
    key,
    keys,
    jwks: { keys: [{ ...key.publicJwk }] },
    mint(claims) {
      const input: TokenClaimsInput = {
        sub: 'test',
        ...claims,
        aud: claims.aud ?? [...TEST_ISSUER_AUDIENCE],
        ...(claims.exp === undefined && claims.ttlSec === undefined ? { ttlSec: 3600 } : {}),
      }
      return signToken(key, input, { clock })
    },
    verifier(vopts = {}) {
      return createTokenVerifier({ clock, ...vopts, keys: vopts.keys ?? keys })
    },
  }
}
