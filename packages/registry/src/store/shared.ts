/**
 * What a log shared by the registries of a cluster adds to its {@link LogStore} (SPEC §6c: the
 * log, the pending proposals and their approvals, HEAD and the checkpoint signer on etcd, which
 * ron-node implements; the registry itself never depends on etcd). Every node's registry appends
 * by compare-and-set on the shared HEAD, so no fork is possible whatever the timing; each node
 * follows the appends of the others, and one node at a time, the lease holder, signs the
 * checkpoints every node serves.
 *
 * @module
 */

import type { Address } from '@ron/core'
import type { DescriptorSet } from '../descriptors.js'
import type { Head } from '../entry.js'
import type { Approval } from '../signers.js'

/** A proposal as the cluster stores it (approvals beside it). */
export interface SharedProposal {
  id: string
  payload: DescriptorSet
  payloadB3: Address
  baseVersion: number
  baseHash: Address
  createdAt: number
  expiresAt: number
  /** Approvals recorded so far (by any node), in no particular order. */
  approvals: Approval[]
}

/**
 * The proposals table every registry of the cluster reads and writes. Each call may reject with
 * `Unavailable` (503) when the shared medium is unreachable.
 */
export interface ProposalStore {
  /**
   * Stores `p` (without approvals) unless a live proposal of the same payload on the same base
   * exists: then that one is returned, so a payload proposed on two nodes is one proposal.
   */
  create(p: SharedProposal): Promise<SharedProposal>
  /** The proposal `id` with every approval recorded, or `undefined` when unknown or removed. */
  get(id: string): Promise<SharedProposal | undefined>
  /**
   * Records `a` for proposal `id`, once per signer.
   * @returns `'added'`, `'duplicate'` when that signer already approved, `'unknown'` when the
   *   proposal is gone
   */
  addApproval(id: string, a: Approval): Promise<'added' | 'duplicate' | 'unknown'>
}

/** The cluster's latest published checkpoint. */
export interface PublishedCheckpoint {
  treeSize: number
  /** The C2SP signed note. */
  note: string
}

/**
 * The checkpoint signer lease: one node at a time holds it and publishes the checkpoint of each
 * new tree; the others serve what it published. When the holder dies its lease expires (its TTL)
 * and another node takes over, so checkpoints lag commits by at most the lease TTL.
 */
export interface CheckpointLease {
  /** True while this node holds the lease. */
  holding(): boolean
  /**
   * Publishes a checkpoint signed by this node (the holder): stored unless the lease was lost
   * meanwhile or a larger tree is already published.
   * @returns true when stored
   */
  publish(cp: PublishedCheckpoint): Promise<boolean>
  /** The latest checkpoint published by any holder, as last seen. */
  latest(): PublishedCheckpoint | undefined
  /** Calls `fn` when the lease is gained or lost, or a checkpoint is published. @returns a disposer */
  onChange(fn: () => void): () => void
}

/** The shared part of a {@link LogStore}. */
export interface SharedLog {
  /**
   * HEAD as the shared medium holds it now (a linearizable read); the store's own view
   * (`head()`, `read()`) holds every entry up to it when this resolves.
   * @throws `UnavailableError` when the medium is unreachable
   */
  sync(): Promise<Head>
  /**
   * Calls `fn` whenever the store's view moved past what this node appended itself (another
   * node appended). @returns a disposer
   */
  onAppend(fn: () => void): () => void
  /** The leaf hash of `version` as stored (for an entry pruned before this node read it). */
  leafHash(version: number): Uint8Array | undefined
  /** The cluster's proposals. */
  readonly proposals: ProposalStore
  /** The checkpoint signer lease. */
  readonly signer: CheckpointLease
}
