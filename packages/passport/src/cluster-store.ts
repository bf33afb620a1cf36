/**
 * What a passport shares with the other passports of a cluster (SPEC §6c): revocations with the
 * token tree's parent links, every node's key set, and node enrolments. ron-node keeps them in
 * etcd; passport only sees this interface. Without it (the default) passport keeps them in its
 * data directory as before.
 *
 * Each node keeps signing with its own issuer key and publishes its key set; every node verifies
 * every node's tokens and refuses a token revoked on any node as soon as its watch delivers the
 * revocation (within the second).
 *
 * @module
 */

import type { EnrolledNode } from './nodes.js'

/** A revocation (or, `cascade: false`, a retirement) as the cluster stores it. */
export interface ClusterRevocation {
  jti: string
  /** The token's `exp` (JWT seconds): how long the entry is kept. */
  exp: number
  revokedAt: number
  cascade: boolean
}

/** A parent link of the token tree: `jti` was minted from `prf`. */
export interface ClusterLink {
  jti: string
  prf: string
  exp: number
}

/** What the other nodes changed, as the cluster store's watch delivers it. */
export interface PassportClusterListener {
  revoked(items: readonly ClusterRevocation[]): void
  linked(links: readonly ClusterLink[]): void
  enrolled(node: EnrolledNode): void
  /** A node's published key set (`undefined`: withdrawn). */
  keys(node: string, keys: readonly unknown[] | undefined): void
}

/** Everything the cluster holds now (what a starting passport loads). */
export interface PassportClusterState {
  revocations: ClusterRevocation[]
  links: ClusterLink[]
  nodes: EnrolledNode[]
  keySets: Array<{ node: string; keys: unknown[] }>
}

/**
 * The shared state of a cluster's passports. Every call may reject with `Unavailable` (503)
 * when the shared medium is unreachable; nothing is then applied.
 */
export interface PassportClusterStore {
  /** This node's id (its key set is published under it, and its own set is not a peer's). */
  readonly nodeId: string
  /** Everything stored now. */
  load(): Promise<PassportClusterState>
  /**
   * Stores `items` durably. With `cascade`, then revokes what any node minted under each of them,
   * level by level: once an item is stored no node can link a new child under it, so the links
   * read after it are complete.
   * @returns the items stored for the subtree beyond `items` (children of other nodes' mints)
   */
  revoke(items: readonly ClusterRevocation[], cascade: boolean): Promise<ClusterRevocation[]>
  /**
   * Stores a parent link, unless the parent is revoked or retired in the cluster.
   * @returns false when refused
   */
  link(l: ClusterLink): Promise<boolean>
  /** Stores an enrolment. */
  enrol(node: EnrolledNode): Promise<void>
  /** Publishes this node's key set (public JWKs with their status). */
  publishKeys(keys: readonly unknown[]): Promise<void>
  /** Follows the other nodes' changes. @returns a disposer */
  watch(listener: PassportClusterListener): () => void
}
