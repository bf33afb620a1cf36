/**
 * Capability tokens (SPEC.md section 5): verification for every service, key sources,
 * revocation, caveats, and a minimal signer for the CLI's admin token and tests.
 *
 * @module
 */

export type { Caveats, Claims, TokenVerifier } from './types.js'
export { generateIssuerKey, exportIssuerKey, importIssuerKey, publicKeyFromJwk, jwkThumbprint } from './issuer-key.js'
export type { IssuerKey, Jwk, Jwks, GenerateIssuerKeyOptions } from './issuer-key.js'
export { signToken } from './sign.js'
export type { TokenClaimsInput, SignTokenOptions } from './sign.js'
export { staticKeySource, remoteKeySource } from './key-source.js'
export type { KeySource, RemoteKeySource, RemoteKeySourceOptions } from './key-source.js'
export { RevocationSet } from './revocation.js'
export type { RevocationCheck, RevocationSetOptions } from './revocation.js'
export { createTokenVerifier } from './verifier.js'
export type { TokenVerifierOptions, TokenRequirement, UnauthorizedReason, ForbiddenReason } from './verifier.js'
export { checkCaveats } from './caveats.js'
export type { CaveatRequest } from './caveats.js'
export { bearerToken } from './bearer.js'
