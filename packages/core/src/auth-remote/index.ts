/**
 * `@ron/core/auth-remote`: the networked side of capabilities (SPEC.md section 5) — passport's
 * key set fetched over a transport and the revocation feed followed over SSE. It sits
 * above the transport layer; the token crypto it feeds is in `@ron/core/auth`.
 *
 * @example
 * ```ts
 * import { createTokenVerifier } from '@ron/core/auth'
 * import { remoteKeySource } from '@ron/core/auth-remote'
 *
 * const verifier = createTokenVerifier({ keys: remoteKeySource({ transport }) })
 * ```
 *
 * @module @ron/core/auth-remote
 */

export { remoteKeySource } from './remote-key-source.js'
export type { RemoteKeySource, RemoteKeySourceOptions } from './remote-key-source.js'
export { createRevocationFeed } from './revocation-feed.js'
export type { RevocationFeed, RevocationFeedOptions, RevocationFeedItem, RevocationFeedPage } from './revocation-feed.js'
