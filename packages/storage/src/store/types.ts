/**
 * The storage backend contract: a content-addressed blob store that streams bytes in while hashing
 * them, keeps per-object integrity data beside each object, and streams them back verified chunk by
 * chunk.
 *
 * ## Integrity data and threat model
 *
 * At put time, in the same pass that hashes the bytes into the address, every backend records a
 * **chunk table**: the BLAKE3-256 of each `chunkSize` chunk of the object, preceded by a header that
 * binds the table to the object (address, size, chunk size) and followed by a BLAKE3 checksum of
 * header and table together (see `integrity.ts`; the fs backend keeps it as a trailer in the
 * object's own file). Every read verifies each chunk it touches against
 * the table *before* yielding a single byte of that chunk, so at most one wrong chunk is ever read
 * and none is ever served.
 *
 * What this protects against: bit rot, torn or truncated writes, a table written for another
 * object or another chunk size, and a corrupt table
 * (a missing or corrupt table fails closed with `IntegrityFailedError`: unverified bytes are
 * never served). What it does not protect against: someone who can write our disk and deliberately
 * forges a consistent object + table pair. Defeating that needs the chunk hashes to be bound to the
 * address itself (a BLAKE3/bao outboard tree, a planned upgrade of the table format); meanwhile the
 * address is still verified end to end whenever an object crosses nodes (repair fetches hash the
 * whole object and compare it with the address before committing).
 *
 * @module
 */

import type { Address } from '@ron/core'

/** Options of {@link BlobStore.put}. */
export interface PutOptions {
  /**
   * The address the content must hash to. On mismatch the put fails with
   * `IntegrityFailedError` (details `{ expected, actual }`) and nothing is kept.
   */
  expect?: Address
  /**
   * Upper bound on the object size in bytes. Exceeding it fails the put with `OverLimitError`
   * (details `{ limit }`) as soon as the limit is crossed, and nothing (no partial file) is kept.
   * @default unbounded
   */
  maxBytes?: number
  /** Aborting fails the put with `CanceledError` (or the signal's RonError reason); nothing is kept. */
  signal?: AbortSignal
  /**
   * Report `created: true` even when a usable copy already existed (repair replacing a corrupt
   * copy). Every put stores its freshly verified copy over whatever was there either way, so
   * re-uploading the right bytes heals a rotted copy.
   * @default false
   */
  replace?: boolean
  /**
   * Called once the whole content has been hashed (so its address is known, and `expect` and
   * `maxBytes` have been checked) and written, before it becomes visible. The same single pass
   * over the bytes yields the address and the chunk table, so a caller that needs the address
   * before the commit (to check it, or to order itself against a delete of that address) need
   * not hash the body a second time. Throwing (or rejecting) fails the put; nothing is kept.
   * Every backend must call it (the compliance suite checks): the storage routes order a put
   * against a delete of the same address through it.
   * @default none
   */
  beforeCommit?: (address: Address, size: number) => void | Promise<void>
  /**
   * The source hands its pieces over: it never changes the bytes of a piece once it has yielded
   * it (a socket's request body, whose read buffers are fresh for every read). A backend may then
   * hash and write the pieces as they are, without copying them first (the fs backend writes them
   * with `writev`). Without it, a source may reuse its buffer for the next piece, and the store
   * keeps the bytes as they were when yielded.
   * @default false
   */
  ownedPieces?: boolean
}

/** Outcome of a successful {@link BlobStore.put}. */
export interface PutResult {
  /** The content address (`b3:` + hex BLAKE3-256 of the whole content). */
  address: Address
  /** Size in bytes. */
  size: number
  /** False when a usable copy (valid table, right size) already existed; true otherwise. */
  created: boolean
}

/** A byte range with an **inclusive** end, like HTTP `Range`/`Content-Range`. */
export interface ByteRange {
  /** First byte offset, `0 <= start`. */
  start: number
  /** Last byte offset (inclusive), `start <= end < size`. */
  end: number
}

/** Size and chunking facts about a stored object. */
export interface BlobStat {
  /** Size in bytes. */
  size: number
}

/** Result of {@link BlobStore.verify}: a full scrub of one object. */
export interface VerifyResult {
  /** True when the object exists, its integrity data is intact and every chunk verifies. */
  ok: boolean
  /** Size in bytes according to the integrity data (or the data file when the table is unusable; 0 when missing). */
  size: number
  /** Indexes of the chunks that failed verification (missing bytes count as failures). */
  badChunks: number[]
  /** Why `ok` is false when it is not a chunk failure: `'missing'`, `'table_missing'`, `'table_corrupt'`. */
  reason?: string
}

/** Result of {@link BlobStore.probe}: can this store take writes right now? */
export interface ProbeResult {
  /** False when writes would fail (disk full, read-only, I/O errors). */
  writable: boolean
  /** Free bytes available to this process, when the backend can tell. */
  freeBytes?: number
  /** Machine-readable reason when not writable: `'disk_full'`, `'io_error'`, `'read_only'`, `'closed'`. */
  reason?: string
}

/**
 * An opened object. Holds whatever the backend needs to read a consistent snapshot (the fs backend
 * keeps the file handle open, so a concurrent delete does not break an in-flight read).
 * Always `close()` it (idempotent); the store's own `close()` also closes readers left open.
 */
export interface BlobReader {
  /** The object's address. */
  readonly address: Address
  /** Size in bytes. */
  readonly size: number
  /** Chunk size of this object's integrity data. */
  readonly chunkSize: number
  /**
   * Verified bytes of `[range.start, range.end]` (default: the whole object), read in blocks of
   * whole chunks (about 1 MiB). Every chunk covering the range is read whole and checked against
   * the integrity data BEFORE any byte of it is yielded; yielded arrays are fresh (safe to keep).
   * At most two blocks are buffered. May be called more than once, also concurrently.
   *
   * @throws `IntegrityFailedError` mid-stream (details `{ address, chunk }`) when a chunk
   *   does not verify (or is missing from a truncated file); the verified chunks before it were
   *   yielded, nothing of it.
   * @throws `RangeNotSatisfiableError` when the range lies outside the object.
   * @throws `CanceledError` when `signal` aborts.
   * @throws `ClosedError` when the reader (or its store) was closed.
   */
  read(range?: ByteRange, signal?: AbortSignal): AsyncIterable<Uint8Array>
  /** Releases the reader (the fs backend closes its file handle). Idempotent. */
  close(): Promise<void>
}

/**
 * A content-addressed blob store backend. Implementations: {@link createMemoryStore} and
 * {@link createFsStore}; a host can provide its own (run the shared compliance suite against it).
 *
 * Every method throws `ClosedError` after `close()`.
 */
export interface BlobStore {
  /** Backend kind: `'fs'`, `'memory'`, or a custom name. */
  readonly kind: string
  /**
   * Chunk size used for integrity data of new objects (existing objects keep theirs).
   * @default 65536
   */
  readonly chunkSize: number
  /**
   * True once `close()` was called: the service's `store` readiness dependency reads it (a
   * backend given to a service may be closed by its owner). Optional for custom backends.
   * @default undefined (treated as open)
   */
  readonly closed?: boolean
  /**
   * Streams `source` in, hashing as it goes; durable before resolving (fs: temp file, fsync,
   * rename, directory fsync). Idempotent: the verified copy is renamed over any existing one
   * (healing a corrupt copy), and `created` is false when a usable copy was already there.
   * Concurrent puts of the same content both succeed; exactly one reports `created: true`.
   *
   * @throws `IntegrityFailedError` when `opts.expect` does not match; nothing is kept.
   * @throws `OverLimitError` when the content exceeds `opts.maxBytes`; no partial file is kept.
   * @throws `CanceledError` when `opts.signal` aborts; nothing is kept.
   * @throws `NotReadyError` with details `{ reason: 'disk_full' | 'io_error' }` when the disk
   *   refuses the write (ENOSPC, EDQUOT, EIO, EROFS), so the service can flip write readiness.
   */
  put(source: AsyncIterable<Uint8Array>, opts?: PutOptions): Promise<PutResult>
  /**
   * Opens an object for verified reads, or `undefined` when it does not exist.
   * @throws `IntegrityFailedError` (details `{ address, reason }`) when the object exists
   *   but its integrity data is missing or corrupt: it fails closed, never serving unverified bytes.
   */
  open(address: Address): Promise<BlobReader | undefined>
  /** Size of an object, or `undefined` when absent. Cheap: does not verify. */
  stat(address: Address): Promise<BlobStat | undefined>
  /** Removes an object and its integrity data. Resolves true when it existed. */
  delete(address: Address): Promise<boolean>
  /** Every stored address (order unspecified). Stops with `CanceledError` when `signal` aborts. */
  list(signal?: AbortSignal): AsyncIterable<Address>
  /** Full scrub of one object: which chunks fail verification (missing data or table → `ok: false`). */
  verify(address: Address, signal?: AbortSignal): Promise<VerifyResult>
  /** Space/health probe for write readiness (fs: `statfs` free space and the last write error). */
  probe(): Promise<ProbeResult>
  /** Aborts in-flight puts, closes open readers, releases resources. Idempotent. */
  close(): Promise<void>
}

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Chunk size for integrity data, in bytes (16 B to 16 MiB).
   * @default 65536
   */
  chunkSize?: number
}

/** Options of {@link createFsStore}. */
export interface FsStoreOptions {
  /**
   * Root directory; `FORMAT`, `objects/` and `tmp/` are created inside it. Must be one
   * filesystem. A directory written by an older format is migrated on open (see `fs-format.ts`).
   */
  dir: string
  /**
   * Chunk size for integrity data of new objects, in bytes (16 B to 16 MiB).
   * @default 65536
   */
  chunkSize?: number
  /**
   * fsync files and directories before a put resolves. Turn off only for tests and benchmarks
   * of something else: without it an acknowledged put can be lost by a power failure.
   * @default true
   */
  fsync?: boolean
  /**
   * `probe()` reports `writable: false, reason: 'disk_full'` when fewer bytes than this are free.
   * @default 16777216 (16 MiB)
   */
  minFreeBytes?: number
  /**
   * Bytes of memory for the cache of hot small objects (up to 64 KiB each) and their tables; `0`
   * turns it off. A cached object costs one `stat` to serve instead of open + fstat + read + close,
   * and is dropped as soon as its file changes.
   * @default 8388608 (8 MiB)
   */
  cacheBytes?: number
  /**
   * Open file handles of recently read large objects kept for the next read (a hot object's Range
   * GET then skips `open`/`fstat`/`close`); every byte is still read from the file and verified.
   * A handle is reused only while its path names the same file. `0` turns it off.
   * @default 64
   */
  openHandles?: number
  /**
   * Read and hash blocks of large streamed reads (256 KiB and more) on worker threads, so several
   * streams are not serialised on the main thread's hashing; needs the native BLAKE3 binding
   * (without it, reads hash on the main thread). Verification is the same either way. Off on
   * machines with fewer than 4 cores: there the threads compete with the main thread and the
   * network stack for the same cores, and measured no faster while costing more CPU per byte.
   * @default true with 4 or more cores (`os.availableParallelism()`), false otherwise
   */
  hashWorkers?: boolean
  /**
   * Bytes of recently verified blocks of large objects kept in memory while two or more readers of
   * the object are open, so clients streaming the same hot object at about the same time read and
   * hash each block once (a block is only shared once every chunk in it verified; a rewritten file
   * is read afresh; the blocks are dropped when the object's last reader closes). `0` turns it off.
   * @default 33554432 (32 MiB)
   */
  blockCacheBytes?: number
}
