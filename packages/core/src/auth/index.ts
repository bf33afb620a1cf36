/**
 * `@ron/core/auth`: capability tokens (SPEC.md section 5) as pure crypto and data — signing,
 * verification, static key sources, revocation sets, caveats, scopes, node identity, and a
 * minimal signer for the CLI's admin token and tests. Nothing here reaches the network: the
 * networked parts (passport's JWKS, the revocation feed) are in `@ron/core/auth-remote`.
 *
 * @module @ron/core/auth
 */

export type { Caveats, Claims, TokenVerifier } from './types.js'
export { generateIssuerKey, exportIssuerKey, importIssuerKey, publicKeyFromJwk, jwkThumbprint } from './issuer-key.js'
export type { IssuerKey, Jwk, Jwks, GenerateIssuerKeyOptions } from './issuer-key.js'
export { newTokenId, signToken } from './sign.js'
export type { TokenClaimsInput, SignTokenOptions } from './sign.js'
export { staticKeySource } from './key-source.js'
export type { KeySource } from './key-source.js'
export { RevocationSet } from './revocation.js'
export type { RevocationCheck, RevocationSetOptions } from './revocation.js'
export { createTokenVerifier, ed25519Verify, KNOWN_CAVEATS } from './verifier.js'
export { generateEd25519KeyPair, isStrongEd25519Key } from './ed25519-key.js'
export type { TokenVerifierOptions, TokenRequirement, UnauthorizedReason, ForbiddenReason, CachingTokenVerifier, VerifierCacheOptions } from './verifier.js'
export { checkCaveats, nameWithinPrefix, isNormalizedPath } from './caveats.js'
export type { CaveatRequest } from './caveats.js'
export { bearerToken } from './bearer.js'
export { SCOPES, ALL_SCOPES, isScope, SERVICE_CALL_SCOPES, isServiceCallScope, scopeService } from './scopes.js'
export type { Scope } from './scopes.js'
export { createTokenProvider, localMinter, signClientAssertion, resolveToken } from './token-provider.js'
export type {
  TokenMinter,
  MintRequest,
  LocalMinterOptions,
  TokenProvider,
  TokenProviderOptions,
  ClientAssertionOptions,
  TokenSource,
} from './token-provider.js'
export {
  NODE_ID_PATTERN,
  isNodeId,
  newNodeId,
  nodeIdentityFromKey,
  nodePublicKey,
  verifyNodeSignature,
  normalizeEndpoint,
  staticNodeDirectory,
} from './node-identity.js'
export type { NodeIdentity, KnownNode, NodeDirectory } from './node-identity.js'
