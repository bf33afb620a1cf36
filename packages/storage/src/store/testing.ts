/**
 * Test reach-ins for the built-in stores (`@ron/storage/testing`): corrupt what is stored, find an
 * object's file, read the fs store's recovery report and cache figures. They work through a side
 * table filled by the factories, so the production store objects carry none of this.
 *
 * @module
 */

import { open } from 'node:fs/promises'
import type { Address } from '@ron/core'
import type { RecoveryReport } from './fs-layout.js'
import type { MigrationReport } from './fs-format.js'
import { internalsOf, type StoreInternals } from './internals.js'
import type { BlobStore } from './types.js'

function of(store: BlobStore, what: string): StoreInternals {
  const i = internalsOf(store)
  if (i === undefined) throw new TypeError(`${what}: not a built-in store (createFsStore/createMemoryStore)`)
  return i
}

/**
 * Flips bits `mask` of byte `offset` of the object's stored bytes (bit rot), in either built-in
 * backend. Resolves false when the object or that byte does not exist.
 * @throws TypeError for a store that is not a built-in one.
 * @example
 * ```ts
 * const { address } = await store.put(body)
 * await corruptStoredBytes(store, address, 10) // the next read of chunk 0 fails verification
 * ```
 */
export function corruptStoredBytes(store: BlobStore, address: Address, offset: number, mask = 0x01): Promise<boolean> {
  return of(store, 'corruptStoredBytes').corruptBytes(address, offset, mask)
}

/**
 * Flips bits `mask` of byte `offset` of the object's stored chunk table (its encoded form: header,
 * hashes, checksum), in either built-in backend. Resolves false when there is no such byte.
 * @throws TypeError for a store that is not a built-in one.
 */
export function corruptStoredTable(store: BlobStore, address: Address, offset: number, mask = 0x01): Promise<boolean> {
  return of(store, 'corruptStoredTable').corruptTable(address, offset, mask)
}

/**
 * The file holding an object in an fs store (its bytes from offset 0, then the table trailer).
 * @throws TypeError for a store that is not an fs store.
 */
export function objectPath(store: BlobStore, address: Address): string {
  const i = of(store, 'objectPath')
  if (i.objectPath === undefined) throw new TypeError('objectPath: not an fs store')
  return i.objectPath(address)
}

/**
 * What opening an fs store recovered (`tmpRemoved`) and migrated (`migrated`, when a format-1
 * directory was converted).
 * @throws TypeError for a store that is not an fs store.
 */
export function fsRecovery(store: BlobStore): RecoveryReport & { migrated?: MigrationReport } {
  const r = of(store, 'fsRecovery').recovery
  if (r === undefined) throw new TypeError('fsRecovery: not an fs store')
  return r
}

/**
 * Bytes held and objects cached by an fs store's small-object cache.
 * @throws TypeError for a store that is not an fs store.
 */
export function smallObjectCache(store: BlobStore): { bytes: number; size: number } {
  const c = of(store, 'smallObjectCache').cache
  if (c === undefined) throw new TypeError('smallObjectCache: not an fs store')
  return { bytes: c.bytes, size: c.size }
}

/**
 * Flips bits (`mask`) of byte `offset` of the file at `path`, in place, and moves the file's
 * mtime one second back, so anything keyed by the file's identity (the fs store's small-object
 * cache) sees the change even where file timestamps are coarser than the time since the last
 * read (jiffy-based timestamps on many kernels).
 * @throws the file system's error when the file cannot be opened; RangeError when it is shorter.
 */
export async function flipByte(path: string, offset: number, mask = 0x01): Promise<void> {
  const fh = await open(path, 'r+')
  try {
    const b = Buffer.alloc(1)
    const { bytesRead } = await fh.read(b, 0, 1, offset)
    if (bytesRead !== 1) throw new RangeError(`flipByte: ${path} has no byte at offset ${offset}`)
    b[0] = b[0]! ^ mask
    const before = await fh.stat()
    await fh.write(b, 0, 1, offset)
    await fh.utimes(before.atime, new Date(before.mtimeMs - 1000))
  } finally {
    await fh.close()
  }
}
