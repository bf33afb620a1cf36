/**
 * `RegistryLog`: the in-memory view of one log over its {@link LogStore} — HEAD, the Merkle tree,
 * the signer set in force at every version and the supersede marks. Only the Committer calls
 * {@link RegistryLog.append}; readers use the rest (every method that reads returns values that
 * are never mutated afterwards).
 *
 * @module
 */

import { ChainMismatchError, IntegrityFailedError, OverLimitError, canonicalBytes, toDiskFault } from '@ron/core'
import type { Address } from '@ron/core'
import { encodeEntry, encodeEntrySpliced, entryHash, genesisHash, type EncodedEntry, type Genesis, type Head, type LogEntry } from './entry.js'
import { payloadB3, signerSetOf, type DescriptorSet, type SignerSet } from './descriptors.js'
import { leafBytes, leafFormatOf, leafIsWholeEntry, type LeafFormat } from './leaf.js'
import { LeafIndex } from './leaf-index.js'
import { MerkleTree, treeHasher, type TreeHasher } from './merkle.js'
import { MAX_BUNDLE_LEAF } from './tiles.js'
import type { Approval } from './signers.js'
import type { LogStore, RecoveredLog, StoredCheckpoint } from './store/types.js'

/** A supersede mark on a version. */
export interface SupersededBy {
  version: number
  reason: string
}

/** What reading a version finds. */
export type ReadResult = { entry: LogEntry; bytes: Uint8Array; hash: Address } | { pruned: true; checkpoint: StoredCheckpoint | undefined } | undefined

/** What reading a leaf finds: its exact bytes, or that it was pruned (or does not exist). */
export type LeafResult = { bytes: Uint8Array } | { pruned: true; checkpoint: StoredCheckpoint | undefined } | undefined

/** HEAD's hash while the entry at HEAD was pruned before this node read it (the next entry's `prev` tells). */
const UNKNOWN_HASH = 'b3:' as Address

/** Signer-set history item: the set in force for bases ≥ `version`. */
interface SetChange {
  version: number
  set: SignerSet
}

/** The registry log: state derived from the store at open, kept current by appends. */
export class RegistryLog {
  readonly store: LogStore
  readonly genesis: Genesis
  readonly genesisHash: Address
  readonly hasher: TreeHasher
  /** How entries become leaves (fixed at genesis). */
  readonly leafFormat: LeafFormat
  readonly tree: MerkleTree
  /** Leaf index by leaf hash (every leaf, pruned ones included). */
  readonly leaves: LeafIndex
  readonly recoveries: Readonly<Record<string, number>>
  /** Frozen, and replaced (never changed) when HEAD moves: {@link RegistryLog.currentHead} hands it out. */
  #head: Readonly<Head>
  readonly #sets: SetChange[]
  readonly #superseded = new Map<number, SupersededBy>()
  /** Versions of held entries whose payload is not in their leaf, by `payloadB3`. */
  readonly #payloads = new Map<string, number>()
  readonly #cache = new Map<number, EncodedEntry>()
  readonly #cacheSize: number
  #rootMemo: { size: number; hex: string } | undefined

  private constructor(store: LogStore, r: RecoveredLog, cacheSize: number) {
    this.store = store
    this.genesis = r.genesis
    this.genesisHash = genesisHash(r.genesis)
    this.hasher = treeHasher(r.genesis.treeHash)
    this.leafFormat = leafFormatOf(r.genesis)
    this.tree = new MerkleTree(this.hasher)
    const tree = this.tree
    this.leaves = new LeafIndex((i) => tree.leafHash(i))
    for (const h of r.leafHashes) {
      this.leaves.add(tree.size, h)
      tree.append(h)
    }
    this.#head = Object.freeze({ version: r.head.version, hash: r.head.hash })
    this.recoveries = r.recoveries
    this.#cacheSize = cacheSize
    // Signer sets: genesis, then what the latest checkpoint remembers, then changes in held entries.
    const changes = new Map<number, SignerSet>([[0, r.genesis.signers]])
    const lastCp = r.checkpoints.at(-1)
    for (const c of lastCp?.signerSets ?? []) changes.set(c.version, { threshold: c.threshold, signers: c.signers })
    for (const e of r.notable) this.#noteEntry(e, changes)
    this.#sets = [...changes.entries()].sort((a, b) => a[0] - b[0]).map(([version, set]) => ({ version, set }))
  }

  /**
   * Opens the log in `store` (creating it with `genesis` when empty).
   * @throws {@link IntegrityFailedError} when the store is corrupt or HEAD disagrees with the tree
   */
  static async open(store: LogStore, genesis: Genesis | undefined, options: { cacheSize?: number } = {}): Promise<RegistryLog> {
    // An existing log keeps the tree hash of its own genesis.
    const r = await store.open({ genesis, leafHash: (b, g) => treeHasher(g.treeHash).leaf(leafBytes(leafFormatOf(g), b)) })
    if (r.leafHashes.length !== r.head.version) {
      throw new IntegrityFailedError(`log has ${r.leafHashes.length} leaf hashes for HEAD ${r.head.version}`)
    }
    return new RegistryLog(store, r, options.cacheSize ?? 1024)
  }

  #noteEntry(e: LogEntry, changes?: Map<number, SignerSet>, bytes?: number): void {
    if (!leafIsWholeEntry(this.leafFormat, bytes ?? canonicalBytes(e).length)) this.#payloads.set(e.payloadB3, e.version)
    const s = signerSetOf(e.payload)
    if (s !== undefined) {
      const set = { threshold: s.threshold, signers: s.signers }
      if (changes !== undefined) changes.set(e.version, set)
      else this.#sets.push({ version: e.version, set })
    }
    const sup = e.payload.meta?.supersedes
    if (sup !== undefined) this.#superseded.set(sup.version, { version: e.version, reason: sup.reason })
  }

  /** The log's origin line. */
  get origin(): string {
    return this.genesis.origin
  }

  /** Current HEAD (a copy the caller may keep or change). */
  head(): Head {
    return { ...this.#head }
  }

  /**
   * Current HEAD without a copy: a frozen object that is replaced, never changed, when HEAD moves
   * (a commit, a take-in from a shared store). A hot read path can keep it and tell whether HEAD
   * moved since by identity (`log.currentHead() === kept`), with nothing allocated per read.
   */
  currentHead(): Readonly<Head> {
    return this.#head
  }

  /** Lowest version whose entry is held. */
  oldest(): number {
    return this.store.oldest()
  }

  /** The signer set in force for proposals on base `version` (set by the last change at ≤ `version`). */
  signerSetAt(version: number): SignerSet {
    let set = this.#sets[0]!.set
    for (const c of this.#sets) {
      if (c.version <= version) set = c.set
      else break
    }
    return set
  }

  /** Every signer-set change (version 0 is the genesis set). */
  signerSetHistory(): Array<{ version: number; threshold: number; signers: SignerSet['signers'] }> {
    return this.#sets.map((c) => ({ version: c.version, threshold: c.set.threshold, signers: c.set.signers }))
  }

  /** The supersede mark of `version`, if any. */
  supersededBy(version: number): SupersededBy | undefined {
    return this.#superseded.get(version)
  }

  /** The first checkpoint covering `version`. */
  coveringCheckpoint(version: number): StoredCheckpoint | undefined {
    return this.store.checkpoints().find((c) => c.treeSize >= version)
  }

  /**
   * Reads entry `version` (recent ones from a small cache).
   * @returns the entry, `{pruned}` when retention removed it, `undefined` when it does not exist
   * @throws {@link IntegrityFailedError} when the stored bytes fail their checksum or leaf hash
   * @throws {@link NotReadyError} when the disk fails the read (`details.reason` `io_error`)
   */
  async read(version: number): Promise<ReadResult> {
    if (!Number.isSafeInteger(version) || version < 1 || version > this.#head.version) return undefined
    if (version < this.store.oldest()) return { pruned: true, checkpoint: this.coveringCheckpoint(version) }
    const cached = this.#cache.get(version)
    if (cached !== undefined) return { entry: cached.entry, bytes: cached.bytes, hash: cached.hash }
    let bytes: Uint8Array | undefined
    try {
      bytes = await this.store.read(version)
    } catch (e) {
      throw toDiskFault(e, 'registry log')
    }
    if (bytes === undefined) return { pruned: true, checkpoint: this.coveringCheckpoint(version) }
    if (Buffer.compare(this.leafHash(bytes), this.tree.leafHash(version - 1)) !== 0) {
      throw new IntegrityFailedError(`stored entry ${version} does not match its leaf hash`, { details: { version } })
    }
    const entry = JSON.parse(Buffer.from(bytes).toString('utf8')) as LogEntry
    return { entry, bytes, hash: entryHash(bytes) }
  }

  /** Entry `version` when it is among the recent ones held in memory (no read). */
  cached(version: number): EncodedEntry | undefined {
    return this.#cache.get(version)
  }

  /** The Merkle leaf hash of an entry's canonical bytes (by the log's hash and leaf format). */
  leafHash(entryBytes: Uint8Array): Uint8Array {
    return this.hasher.leaf(leafBytes(this.leafFormat, entryBytes))
  }

  /**
   * The exact leaf bytes of `version` (what its entry bundle carries and the tree hashes).
   * @throws {@link IntegrityFailedError} as {@link RegistryLog.read}
   */
  async leaf(version: number): Promise<LeafResult> {
    const r = await this.read(version)
    if (r === undefined || 'pruned' in r) return r
    return { bytes: leafBytes(this.leafFormat, r.bytes) }
  }

  /** The version holding the payload `payloadB3` when its leaf carries it by address only. */
  payloadVersion(payloadB3: string): number | undefined {
    return this.#payloads.get(payloadB3)
  }

  /**
   * Builds the next entry and appends it by compare-and-set on HEAD. Committer only. `known` is
   * the payload's `payloadB3` and canonical JSON when the caller has them (saves canonicalising
   * the payload again: the JSON goes into the entry's bytes as it is).
   * @returns the encoded entry, or `undefined` when HEAD is no longer `expected`
   * @throws {@link ChainMismatchError} when `expected` is not a HEAD this log ever had
   */
  async append(expected: Head, payload: DescriptorSet, approvals: Approval[], committedAt: number, known?: { b3: Address; json?: string | undefined }): Promise<EncodedEntry | undefined> {
    if (expected.version !== this.#head.version || expected.hash !== this.#head.hash) return undefined
    const entry: LogEntry = {
      version: expected.version + 1,
      payload,
      // The proposal computed it already (the payload object is never mutated after validation).
      payloadB3: known?.b3 ?? payloadB3(payload),
      prev: expected.hash,
      approvals,
      committedAt,
    }
    const enc = known?.json === undefined ? encodeEntry(entry) : encodeEntrySpliced(entry, known.json)
    const leafData = leafBytes(this.leafFormat, enc.bytes)
    if (this.leafFormat === 'bundle' && leafData.length > MAX_BUNDLE_LEAF) {
      throw new OverLimitError(`entry ${entry.version} is too large for a leaf even without its payload (${leafData.length} bytes)`, { details: { limit: MAX_BUNDLE_LEAF } })
    }
    const leaf = this.hasher.leaf(leafData)
    const ok = await this.store.compareAndAppend(expected, enc, leaf)
    if (!ok) return undefined
    // A shared store may already have followed other nodes' appends on top of this one.
    const storeHead = this.store.head()
    if (this.store.shared === undefined ? storeHead.version !== entry.version || storeHead.hash !== enc.hash : storeHead.version < entry.version) {
      throw new ChainMismatchError('store HEAD moved under the committer')
    }
    this.#applyAppended(enc, leaf)
    return enc
  }

  #applyAppended(enc: EncodedEntry, leaf: Uint8Array): void {
    this.leaves.add(this.tree.size, leaf)
    this.tree.append(leaf)
    this.#head = Object.freeze({ version: enc.entry.version, hash: enc.hash })
    this.#noteEntry(enc.entry, undefined, enc.bytes.length)
    this.#cache.set(enc.entry.version, enc)
    if (this.#cache.size > this.#cacheSize) this.#cache.delete(this.#cache.keys().next().value!)
  }

  /**
   * Takes in what other nodes appended to a shared store (SPEC §6c), up to the store's HEAD:
   * each entry must extend this log's HEAD (version and `prev`) and match the stored leaf hash.
   * Committer only (the single writer of this view). A log whose store is not shared has nothing
   * to take in.
   * @returns the entries taken in, oldest first (an entry pruned before this node read it is
   *   taken in by its leaf hash and not returned)
   * @throws {@link IntegrityFailedError} when an entry does not extend HEAD or its leaf hash
   *   differs from the stored one (nothing after it is taken in)
   */
  async catchUp(): Promise<EncodedEntry[]> {
    const shared = this.store.shared
    if (shared === undefined) return []
    const target = this.store.head().version
    const out: EncodedEntry[] = []
    while (this.#head.version < target) {
      const version = this.#head.version + 1
      let bytes: Uint8Array | undefined
      try {
        bytes = await this.store.read(version)
      } catch (e) {
        throw toDiskFault(e, 'registry log')
      }
      const stored = shared.leafHash(version)
      if (bytes === undefined) {
        // Pruned by the cluster before this node read it: its leaf hash is all the tree needs.
        if (stored === undefined) throw new IntegrityFailedError(`entry ${version} is neither held nor has a leaf hash`, { details: { version } })
        this.leaves.add(this.tree.size, stored)
        this.tree.append(stored)
        // Its hash is the next entry's `prev` (or the store's HEAD when it is the last).
        this.#head = Object.freeze({ version, hash: this.store.head().version === version ? this.store.head().hash : UNKNOWN_HASH })
        continue
      }
      const entry = JSON.parse(Buffer.from(bytes).toString('utf8')) as LogEntry
      const leaf = this.leafHash(bytes)
      if (entry.version !== version || (this.#head.hash !== UNKNOWN_HASH && entry.prev !== this.#head.hash) || (stored !== undefined && Buffer.compare(stored, leaf) !== 0)) {
        throw new IntegrityFailedError(`entry ${version} of the shared log does not extend HEAD ${this.#head.version}`, { details: { version } })
      }
      const enc: EncodedEntry = { entry, bytes, hash: entryHash(bytes) }
      this.#applyAppended(enc, leaf)
      out.push(enc)
    }
    return out
  }

  /** The root hash (`b3:`-style hex is not used for roots: lowercase hex) of the tree of `size` leaves. */
  rootHex(size: number = this.tree.size): string {
    const memo = this.#rootMemo
    if (memo !== undefined && memo.size === size) return memo.hex
    const hex = Buffer.from(this.tree.root(size)).toString('hex')
    // The tree is append-only: the root of a given size never changes. Only the latest is kept.
    if (size === this.tree.size) this.#rootMemo = { size, hex }
    return hex
  }
}
