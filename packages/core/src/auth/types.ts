/**
 * Capability token types shared by every service (SPEC.md section 5).
 *
 * @module
 */

/** Caveats carried in the `ron` claim. Services enforce the ones they understand. */
export interface Caveats {
  /** Maximum object size in bytes this token may write. */
  maxBytes?: number
  /** Only paths starting with this prefix. */
  pathPrefix?: string
  /** Only these HTTP methods. */
  methods?: string[]
  /**
   * Only names at or under this one (index name writes): `docs.alice` allows `docs.alice` and
   * `*.docs.alice`, nothing else (see {@link nameWithinPrefix}).
   */
  namePrefix?: string
  [name: string]: unknown
}

/** Verified claims of a capability token. */
export interface Claims {
  iss: string
  sub: string
  /** Service ids this token is for. */
  aud: string[]
  /** Space-separated scopes, split. */
  scope: string[]
  iat: number
  nbf?: number
  exp: number
  /** Revocation id. */
  jti: string
  /** Parent `jti` of an attenuated token. */
  prf?: string
  ron?: Caveats
}

/** What a service needs to check tokens. Implemented in `auth/verifier.ts`. */
export interface TokenVerifier {
  /**
   * Verifies a compact JWS and checks it grants `scope` for `audience`.
   * @throws {@link UnauthorizedError} (missing/invalid/expired/revoked, reason in `details.reason`)
   * @throws {@link ForbiddenError} (valid token lacking the scope or violating a caveat)
   */
  verify(token: string, required: { audience: string; scope?: string }): Promise<Claims>
}
