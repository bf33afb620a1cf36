/**
 * `@ron/storage/testing`: utilities for tests of storage and of custom backends. Not for
 * production code.
 *
 * - {@link corruptObject}: flips a bit of an object's stored bytes in either built-in backend
 *   (bit rot, for repair and verified-read tests);
 * - {@link flipByte}: flips a bit of a file (fs backend, or any file-based custom backend).
 *
 * The BlobStore compliance suite (every backend runs the same tests, as js-libp2p ships its
 * interface-compliance tests) joins this entry once it moves into the package (`src/store/`).
 *
 * @example
 * ```ts
 * import { createMemoryStore } from '@ron/storage'
 * import { corruptObject } from '@ron/storage/testing'
 *
 * const store = createMemoryStore()
 * const { address } = await store.put(body)
 * await corruptObject(store, address, 10) // the next read of chunk 0 fails verification
 * ```
 *
 * @packageDocumentation
 * @module @ron/storage/testing
 */

import { open } from 'node:fs/promises'
import type { Address } from '@ron/core'
import type { BlobStore } from './store/index.js'

/**
 * Flips bits (`mask`) of byte `offset` of the file at `path`, in place.
 * @throws the file system's error when the file cannot be opened or is shorter than `offset`.
 */
export async function flipByte(path: string, offset: number, mask = 0x01): Promise<void> {
  const fh = await open(path, 'r+')
  try {
    const b = Buffer.alloc(1)
    const { bytesRead } = await fh.read(b, 0, 1, offset)
    if (bytesRead !== 1) throw new RangeError(`flipByte: ${path} has no byte at offset ${offset}`)
    b[0] = b[0]! ^ mask
    await fh.write(b, 0, 1, offset)
  } finally {
    await fh.close()
  }
}

interface MemoryHooks {
  corrupt(address: Address, offset: number, mask?: number): boolean
}
interface FsHooks {
  pathsOf(address: Address): { data: string }
}

/**
 * Flips bits of byte `offset` of the stored bytes of `address` in a built-in backend (memory or
 * filesystem), so that the chunk holding it fails verification.
 * @returns false when the object is not stored.
 * @throws TypeError for a backend this helper does not know.
 */
export async function corruptObject(store: BlobStore, address: Address, offset: number, mask = 0x01): Promise<boolean> {
  const s = store as Partial<MemoryHooks & FsHooks>
  if (typeof s.corrupt === 'function') return s.corrupt(address, offset, mask)
  if (typeof s.pathsOf === 'function') {
    if ((await store.stat(address)) === undefined) return false
    await flipByte(s.pathsOf(address).data, offset, mask)
    return true
  }
  throw new TypeError(`corruptObject: backend '${store.kind}' has no corruption hook`)
}
