/**
 * `LogStore`: where the log lives. A small interface on purpose: HEAD's compare-and-set, append,
 * read, checkpoints and pruning. The segment and memory stores hold a log one registry writes; a
 * shared store (ron-node's etcd store, SPEC §6c) holds a log every registry of a cluster appends
 * to, and adds {@link SharedLog}: a linearizable HEAD, the appends of the other nodes, the
 * proposals table and the checkpoint signer lease.
 *
 * @module
 */

import type { EncodedEntry, Genesis, Head, LogEntry } from '../entry.js'
import type { SharedLog } from './shared.js'

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
  /**
   * Read-only opens only: what makes the log damaged, one line each naming its file (a writable
   * open throws instead). Absent or empty when the log is sound.
   */
  problems?: string[]
}

/** Hooks the store needs from the log's hashing. */
export interface OpenOptions {
  /**
   * The genesis to write when the store is empty (an existing store keeps its own). Without one,
   * opening an empty store fails with a `ConfigError` naming `signers`.
   */
  genesis: Genesis | undefined
  /** Merkle leaf hash of an entry's bytes, by the tree hash and leaf format of the log's genesis. */
  leafHash(bytes: Uint8Array, genesis: Genesis): Uint8Array
}

/** Storage of one log. Only the Committer calls the mutating methods. */
export interface LogStore {
  /** `'memory'`, `'segment'`, or a shared store's kind (`'etcd'`). */
  readonly kind: string
  /**
   * Present when several registries append to this log (a cluster on etcd): the Committer then
   * syncs HEAD before proposing, follows the other nodes' appends, shares proposals and approvals,
   * and only the lease holder signs checkpoints. Absent for the segment and memory stores.
   */
  readonly shared?: SharedLog
  /**
   * Recovers and returns the log's state. A durable store keeps evidence of what it acknowledged
   * (the segment store: its head record) and refuses to open a log that holds less: a segment cut,
   * emptied or deleted, a rewritten last record, fewer checkpoints than recorded, lost evidence.
   * It repairs only what was never acknowledged (a torn record past the last acknowledged one).
   * @throws {@link IntegrityFailedError} naming the damaged file and `ron-node registry fsck`
   */
  open(options: OpenOptions): Promise<RecoveredLog>
  /** The current HEAD as this store sees it (a shared store: as far as it has followed). */
  head(): Head
  /**
   * Appends `entry` (version HEAD + 1) and moves HEAD to it, only if HEAD equals `expected`; durable
   * (fsynced, with the store's evidence of HEAD) when it resolves `true`; resolves `false` and
   * writes nothing when HEAD moved. When it rejects, the entry is not appended and nothing it wrote
   * survives as part of the log (a store that cannot undo a partial write yet refuses further
   * writes with `NotReady` until it can).
   * @throws the system error of a failed write (ENOSPC, EIO, EROFS…: the service maps it to 503
   *   `NotReady`), or {@link NotReadyError} while an earlier failed write is not yet undone
   */
  compareAndAppend(expected: Head, entry: EncodedEntry, leafHash: Uint8Array): Promise<boolean>
  /**
   * The canonical bytes of entry `version`, read from the medium; `undefined` when pruned or not
   * yet written.
   * @throws {@link IntegrityFailedError} when the stored record fails its checksum
   */
  read(version: number): Promise<Uint8Array | undefined>
  /**
   * {@link LogStore.read} without waiting, for a record just written (the read-back of a commit,
   * which the page cache still holds): the bytes, or `undefined` when this store cannot read them
   * at once (no open read handle on the segment yet, pruned, not held) — the caller then uses
   * `read`. Optional: a store without it is read with `read` only.
   * @throws {@link IntegrityFailedError} as `read`
   */
  readNow?(version: number): Uint8Array | undefined
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
  /**
   * Checks the medium is writable (write + fsync of a probe), after retrying the undo of an
   * earlier failed write. @throws when it is not
   */
  probe(): Promise<void>
  /** Releases files. Idempotent. */
  close(): Promise<void>
  /** True once `close()` was called: the registry's `log` readiness dependency reads it (a store without it counts as open). */
  readonly closed?: boolean
}
