/**
 * The name store: the names homed on this node (SPEC §6a "Signed name records"). Each bound name
 * keeps its manifest and the fields of its record (signed when served); a deleted name keeps its
 * tombstone record (so its `seq` goes on counting) until the janitor purges it. Writes are
 * compare-and-set on the binding.
 *
 * @module
 */

import type { Address } from '@ron/core'
import type { Manifest } from '../contracts.js'
import type { SignedNameRecord, StoredNameRecord } from '../name-record.js'

/**
 * What a name is bound to. A file manifest is kept with the binding: it is immutable
 * (content-addressed). A directory manifest (up to 2 MiB) is not: only its address and `kind`.
 */
export interface NameRecord {
  manifestAddress: Address
  /** `'dir'` for a directory manifest; absent (a file manifest) in bindings of a file and in bindings written before directories. */
  kind?: 'dir'
  /** The file manifest; absent when `kind` is `'dir'`. */
  manifest?: Manifest
  /** The file manifest's exact text (it hashes to `manifestAddress`): sent to peer indexes so they can check it. */
  manifestText?: string
  /** When the binding was written, Unix ms. */
  updatedAt: number
  /**
   * The record of the binding: its fields, signed when served (with `sig` in bindings kept before
   * that, and in a store the cluster shares). Absent only in bindings written before records were
   * signed; the service completes those at start.
   */
  record?: StoredNameRecord
}

/**
 * The expected current binding of a compare-and-set: `undefined` = unconditional, `null` = the
 * name must not exist, an address = the name must be bound to it.
 */
export type Expected = Address | null | undefined

/** Result of a successful write or delete: what the name was bound to before. */
export interface WriteResult {
  previous: Address | null
}

/** What a write sees of a name inside its transaction. */
export interface NameState {
  binding: NameRecord | undefined
  tombstone: StoredNameRecord | undefined
}

/** Durable (LMDB) or memory name storage, or a store a whole cluster shares (ron-node's etcd, SPEC §6c). */
export interface NameStore {
  /** True when bindings survive a restart. */
  readonly durable: boolean
  /**
   * True when every node of a cluster reads and writes this one store with compare-and-set
   * (etcd): names then have no home node, any node writes any name, and the store keeps the
   * record of the node that wrote each binding. @default false
   */
  readonly shared?: boolean
  /**
   * A shared store only: calls `fn` with each name another node wrote (the service drops what it
   * cached of it). @returns a disposer
   */
  onChange?(fn: (name: string) => void): () => void
  /** The binding of `name`, if any. */
  get(name: string): NameRecord | undefined
  /** The tombstone of `name` (it was deleted here and not bound since), if any. */
  tombstone(name: string): StoredNameRecord | undefined
  /**
   * The binding and tombstone of `name`, read ahead of a {@link NameStore.put} of it: the store
   * may keep what it decoded so that the write, finding the same stored bytes when it is decided,
   * decodes nothing again (it still reads them, so a write between is seen). Stores without it
   * are read with `get` and `tombstone`.
   */
  stateForWrite?(name: string): NameState
  /**
   * Binds `name` to `make(state)` if the current binding matches `expected`, atomically (the
   * tombstone, if any, goes). `make` runs once the write is decided, after every earlier write of
   * the name has committed or failed, so it sees the state it replaces.
   * @throws {@link ConflictError} (`details: {name, expected, actual}`) when the binding does not match.
   * @throws {@link NotReadyError} (`details.reason` `disk_full`, `io_error`, `read_only`) when the disk refuses the write.
   */
  put(name: string, expected: Expected, make: (state: NameState) => NameRecord): Promise<WriteResult>
  /**
   * Replaces the binding of `name` with the tombstone `make(binding)` if it matches `expected`.
   * @throws {@link NotFoundError} when the name is not bound and nothing was expected.
   * @throws {@link ConflictError} when the binding does not match `expected`.
   * @throws {@link NotReadyError} on a disk fault, as {@link NameStore.put}.
   */
  delete(name: string, expected: Address | undefined, make: (binding: NameRecord, tombstone: StoredNameRecord | undefined) => StoredNameRecord): Promise<WriteResult>
  /**
   * Rewrites, in one transaction, every binding and tombstone for which `fix` returns a
   * replacement (signing records at start).
   * @returns how many were rewritten.
   * @throws {@link NotReadyError} on a disk fault.
   */
  migrate(fix: { binding(name: string, b: NameRecord): NameRecord | undefined; tombstone(name: string, t: StoredNameRecord): StoredNameRecord | undefined }): Promise<number>
  /**
   * Writes back the signatures of records this node signed when it served them (the write-back,
   * DESIGN.md "Name records are signed when served"), in one transaction: each record lands on the
   * stored binding (a non-null `manifestAddress`) or tombstone (`null`) of its name only if that
   * one is still stored with exactly its five fields and no `sig`; otherwise (a write, delete or
   * purge of the name came between) it is dropped. A store that signs at the write (a shared one)
   * need not have it.
   * @returns how many landed.
   * @throws {@link NotReadyError} on a disk fault (nothing of the batch lands).
   */
  keepSigned?(records: readonly SignedNameRecord[]): Promise<number>
  /**
   * Removes the tombstones signed before `before` (Unix ms).
   * @returns how many were removed.
   * @throws {@link NotReadyError} on a disk fault.
   */
  purgeTombstones(before: number): Promise<number>
  /** Bound names in name order: those starting with `prefix`, after `after` (exclusive), at most `limit`. */
  list(prefix: string, after: string | undefined, limit: number): Array<[string, NameRecord]>
  /** Checks that the disk takes a write now. @throws {@link NotReadyError} on a disk fault. */
  probe(): Promise<void>
  /** Number of bound names. */
  count(): number
  /** Releases the store. Idempotent. */
  close(): Promise<void>
  /** True once closed (by the service or by the store's owner): the index's `store` readiness dependency. @default unknown: treated as open */
  readonly closed?: boolean
}
