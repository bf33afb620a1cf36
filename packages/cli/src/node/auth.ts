/**
 * The node's auth wiring: which keys every service verifies tokens with, and where the node's own
 * service tokens (`sub: node:<id>`) come from. Until passport is up (or without one) the node's
 * issuer key signs and verifies; with another node's passport (`passport.url`) its key set and
 * revocation feed are read over HTTP and service tokens come by client assertion signed with the
 * node key; once the node's own passport is created, its keys, revocations and minter take over.
 * (The admin token and its renewal: `admin-token.ts`.)
 *
 * @module
 */

import {
  createRevocationFeed,
  createTokenProvider,
  createTokenVerifier,
  localMinter,
  remoteKeySource,
  staticKeySource,
  type Clock,
  type IssuerKey,
  type Jwk,
  type Logger,
  type RevocationCheck,
  type RevocationFeed,
  type RonService,
  type TokenProvider,
  type TokenVerifier,
  type Transport,
} from '@ron/core'
import type { PassportHandles } from '../services.js'

/** Options of {@link startNodeAuth}. */
export interface NodeAuthOptions {
  nodeId: string
  /** Signs and verifies tokens until (or without) a passport. */
  issuer: IssuerKey
  /** Signs the client assertions a remote passport mints service tokens for. */
  nodeKey: IssuerKey
  /** Another node's passport URL (`passport.url`), when this node uses one. */
  remotePassport?: string | undefined
  /** The transport a remote passport is reached over. */
  http: Transport
  clock: Clock
  logger: Logger
}

/** The node's current verifier and service tokens; both change once the node's passport is up. */
export interface NodeAuth {
  /** What every service verifies tokens with. */
  readonly verifier: TokenVerifier
  /** The node's service tokens (`sub: node:<id>`). */
  readonly tokens: TokenProvider
  /** The node's own passport, once {@link NodeAuth.usePassport} was called. */
  readonly passport: PassportHandles | undefined
  /** The public keys the node publishes (`/keys`): its passport's key set, else its issuer key. */
  publicKeys(): Jwk[]
  /**
   * Switches to the node's own passport: from here on tokens verify with its keys and
   * revocations, and service tokens come from it. The previous token provider is closed.
   */
  usePassport(service: RonService): Promise<void>
  /** Closes the token provider and the revocation feed. */
  close(): Promise<void>
}

/**
 * Wires the node's auth before any service exists. With a remote passport, its revocation feed is
 * read once (a failure is logged: writes answer 503 `revocation_stale` until it answers) and then
 * polled (5 s staleness bound).
 */
export async function startNodeAuth(o: NodeAuthOptions): Promise<NodeAuth> {
  const { clock, nodeId } = o
  let passport: PassportHandles | undefined
  let feed: RevocationFeed | undefined
  let verifier: TokenVerifier = createTokenVerifier({ keys: staticKeySource([o.issuer]), clock })
  let minter = localMinter(o.issuer, { iss: `ron-node:${nodeId}`, sub: `node:${nodeId}`, clock })
  const remote = o.remotePassport
  if (remote !== undefined) {
    // Another node's passport: its key set and revocation feed (5 s staleness bound; while stale,
    // writes answer 503 revocation_stale) over HTTP, and service tokens by client assertion.
    const { remotePassportMinter } = await import('@ron/passport')
    feed = createRevocationFeed({ transport: o.http, target: remote, staleAfterMs: 5000, pollIntervalMs: 1000, clock })
    await feed.sync().catch((e: unknown) => o.logger.warn({ url: remote, err: e }, 'cannot read the revocation feed of the passport yet; writes wait until it answers'))
    feed.start()
    verifier = createTokenVerifier({ keys: remoteKeySource({ transport: o.http, target: remote, cooldownMs: 1000, clock }), revocations: feed, clock })
    minter = remotePassportMinter(o.http, { nodeId, nodeKey: o.nodeKey, target: remote, clock })
  }
  let tokens = createTokenProvider({ minter, clock })
  return {
    get verifier() {
      return verifier
    },
    get tokens() {
      return tokens
    },
    get passport() {
      return passport
    },
    publicKeys: () => (passport?.jwks().keys ?? [o.issuer.publicJwk]) as Jwk[],
    async usePassport(service) {
      const { passportMinter } = await import('@ron/passport')
      passport = service as unknown as PassportHandles
      verifier = createTokenVerifier({ keys: passport.keys, revocations: passport.revocations as RevocationCheck, clock })
      tokens.close()
      tokens = createTokenProvider({ minter: passportMinter(service as never, { sub: `node:${nodeId}` }), clock })
    },
    async close() {
      tokens.close()
      await feed?.close()
    },
  }
}
