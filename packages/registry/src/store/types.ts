/**
 * `LogStore`: where the log lives. A small interface on purpose: HEAD's compare-and-set, append,
 * read, checkpoints and pruning, so a later store can keep HEAD (and a committer lease) in etcd
 * for a highly available committer while entries stay in segment files.
 *
 * @module
 */

import type { EncodedEntry, Genesis, Head, LogEntry } from '../entry.js'

/** A signed checkpoint as stored. */
export interface StoredCheckpoint {
  treeSize: number
  /** Root hash, lowercase hex. */
  root: string
  /** The C2SP signed note. */
  note: string
  createdAt: number
  /** Every signer-set change up to `treeSize` (so pruning never loses which set was in force). */
  signerSets?: Array<{ version: number; threshold: number; signers: Array<{ id: string; publicKey: string }> }>
}

/** One segment of entries (whole segments are the unit of pruning). */
export interface SegmentInfo {
  first: number
  last: number
  bytes: number
  firstCommittedAt: number
  lastCommittedAt: number
}

/** What {@link LogStore.open} found (after recovery). */
export interface RecoveredLog {
  genesis: Genesis
  head: Head
  /** Leaf hashes of versions 1..head, including pruned ones. */
  leafHashes: Uint8Array[]
  /** Lowest version whose entry is still held (head + 1 when none is). */
  oldest: number
  checkpoints: StoredCheckpoint[]
  /** Held entries that change the signer set or supersede a version (parsed), oldest first. */
  notable: LogEntry[]
  /** What recovery had to repair, by kind (e.g. `torn_tail`), for `registry_recoveries_total{kind}`. */
  recoveries: Record<string, number>
}

/** Hooks the store needs from the log's hashing. */
export interface OpenOptions {
  /**
   * The genesis to write when the store is empty (an existing store keeps its own). Without one,
   * opening an empty store fails with a `ConfigError` naming `signers`.
   */
  genesis: Genesis | undefined
  /** Merkle leaf hash of an entry's bytes, with the tree hash of the log's genesis. */
  leafHash(bytes: Uint8Array, treeHash: Genesis['treeHash']): Uint8Array
}

/** Storage of one log. Only the Committer calls the mutating methods. */
export interface LogStore {
  /** `'memory'` or `'segment'`. */
  readonly kind: string
  /** Recovers (verifying the tail, truncating a torn last record) and returns the log's state. */
  open(options: OpenOptions): Promise<RecoveredLog>
  /** The current HEAD. */
  head(): Head
  /**
   * Appends `entry` (version HEAD + 1) and moves HEAD to it, only if HEAD equals `expected`; durable
   * (fsynced) when it resolves `true`; resolves `false` and writes nothing when HEAD moved.
   */
  compareAndAppend(expected: Head, entry: EncodedEntry, leafHash: Uint8Array): Promise<boolean>
  /**
   * The canonical bytes of entry `version`, read from the medium; `undefined` when pruned or not
   * yet written.
   * @throws {@link IntegrityFailedError} when the stored record fails its checksum
   */
  read(version: number): Promise<Uint8Array | undefined>
  /** Lowest version still held. */
  oldest(): number
  /** Stores a checkpoint durably (leaf hashes it covers are made durable first). */
  appendCheckpoint(cp: StoredCheckpoint): Promise<void>
  /** All checkpoints, oldest first. */
  checkpoints(): readonly StoredCheckpoint[]
  /** Segments, oldest first (the last one is the active one). */
  segments(): readonly SegmentInfo[]
  /** Total bytes held (segments, leaf hashes, checkpoints). */
  sizeBytes(): number
  /**
   * Removes whole segments whose last version is ≤ `through`, never the active segment.
   * @returns the segments removed
   */
  prune(through: number): Promise<SegmentInfo[]>
  /** Checks the medium is writable (write + fsync of a probe). @throws when it is not */
  probe(): Promise<void>
  /** Releases files. Idempotent. */
  close(): Promise<void>
}
