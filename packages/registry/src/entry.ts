/**
 * Log entries and the genesis record. Entry `v` (v ≥ 1) links the hash of entry `v − 1` (or of
 * the genesis record for v = 1) in `prev`, and is leaf `v − 1` of the log's Merkle tree; its
 * bytes are the RFC 8785 canonical JSON of the entry.
 *
 * @module
 */

import { blake3, canonicalBytes, canonicalJson, toAddress, type Address } from '@ron/core'
import type { DescriptorSet, SignerSet } from './descriptors.js'
import { plainApprovalsJson, plainIntJson, plainStringJson } from './plain-json.js'
import type { TreeHashName } from './merkle.js'
import type { Approval } from './signers.js'

/** One committed entry of the log. */
export interface LogEntry {
  version: number
  payload: DescriptorSet
  payloadB3: Address
  /** Hash (`b3:`) of the previous entry, or of the genesis record for version 1. */
  prev: Address
  approvals: Approval[]
  committedAt: number
}

/** What a log is: fixed at creation, hashed into the chain as the `prev` of version 1. */
export interface Genesis {
  /** The log's origin line (checkpoints, approval messages). */
  origin: string
  /** Merkle tree hash. */
  treeHash: TreeHashName
  /** The signer set in force from version 0 until a `signer-set` descriptor replaces it. */
  signers: SignerSet
  /** The log key's C2SP verifier key (`name+hash+base64`). */
  logKey: string
  createdAt: number
  /**
   * How an entry becomes a leaf of the tree (see `leaf.ts`): `'bundle'` for logs created since
   * the registry serves C2SP tiles (the canonical entry when it fits an entry bundle, without its
   * payload otherwise); absent for older logs, whose leaves are always the whole canonical entry.
   */
  leafFormat?: 'bundle'
}

/** HEAD: the last version and its entry hash (version 0: the genesis hash). */
export interface Head {
  version: number
  hash: Address
}

/** An entry together with its canonical bytes and hashes (what stores keep). */
export interface EncodedEntry {
  entry: LogEntry
  bytes: Uint8Array
  hash: Address
}

/** Hash of the genesis record. */
export function genesisHash(g: Genesis): Address {
  return toAddress(blake3(canonicalBytes(g)))
}

/** Canonical bytes (RFC 8785) and hash of an entry. */
export function encodeEntry(entry: LogEntry): EncodedEntry {
  const bytes = canonicalBytes(entry)
  return { entry, bytes, hash: toAddress(blake3(bytes)) }
}

/**
 * {@link encodeEntry} for the committer, which holds the canonical JSON of `entry.payload` from
 * the proposal: it is spliced in, in the place RFC 8785's member order gives it, rather than
 * canonicalised again (the same bytes either way; a property test pins it). Internal: a caller
 * whose `payloadJson` were not the payload's canonical JSON would get an entry whose bytes lie.
 */
export function encodeEntrySpliced(entry: LogEntry, payloadJson: string): EncodedEntry {
  // Members in RFC 8785 order (UTF-16 code units): approvals, committedAt, payload, payloadB3, prev, version;
  // the common members written directly (plain-json.ts), anything else by canonicalJson.
  const bytes = Buffer.from(
    `{"approvals":${plainApprovalsJson(entry.approvals) ?? canonicalJson(entry.approvals)},"committedAt":${plainIntJson(entry.committedAt) ?? canonicalJson(entry.committedAt)},"payload":${payloadJson},"payloadB3":${plainStringJson(entry.payloadB3) ?? canonicalJson(entry.payloadB3)},"prev":${plainStringJson(entry.prev) ?? canonicalJson(entry.prev)},"version":${plainIntJson(entry.version) ?? canonicalJson(entry.version)}}`,
    'utf8',
  )
  return { entry, bytes, hash: toAddress(blake3(bytes)) }
}

/** Hash of canonical entry bytes. */
export function entryHash(bytes: Uint8Array): Address {
  return toAddress(blake3(bytes))
}
