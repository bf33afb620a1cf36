/**
 * The durable name store on LMDB (the `lmdb` package: an embedded, memory-mapped, copy-on-write
 * B+tree; no server to run). Crash safety comes from LMDB itself: a write transaction commits by
 * flipping one meta page, so a crash leaves either the old or the new binding, never a torn one.
 * Durability: `lmdb` commits with `overlappingSync` by default (Linux, macOS), so a write's own
 * promise resolves when it is committed and visible, and the fsync lands later; every write here
 * also awaits `db.flushed`, so it answers only once it is on disk. Concurrent writers share those
 * flushes. Compare-and-set runs inside one write transaction, so concurrent writers (even from
 * other processes) serialise.
 *
 * @module
 */

import { mkdir } from 'node:fs/promises'
import { open, type RootDatabase } from 'lmdb'
import { ClosedError } from '@ron/core'
import type { Address } from '@ron/core'
import type { Expected, NameRecord, NameStore, WriteResult } from './types.js'
import { checkDelete, checkPut } from './cas.js'

/** Options of {@link openLmdbNameStore}. */
export interface LmdbNameStoreOptions {
  /** Directory of the database (created if missing). */
  dir: string
  /** Largest map size, in bytes. @default 1 GiB */
  mapSize?: number
}

/**
 * Opens (or creates) the LMDB name store in `dir`.
 * @throws the `lmdb` error when the directory cannot be created or opened.
 */
export async function openLmdbNameStore(options: LmdbNameStoreOptions): Promise<NameStore> {
  await mkdir(options.dir, { recursive: true, mode: 0o700 })
  const db: RootDatabase<NameRecord, string> = open<NameRecord, string>({
    path: options.dir,
    name: 'names',
    compression: false,
    mapSize: options.mapSize ?? 1024 ** 3,
    // Durability: never skip the sync (each write also awaits `db.flushed` before it answers).
    noSync: false,
    encoding: 'msgpack',
  })
  let closed = false
  const guard = (): void => {
    if (closed) throw new ClosedError('name store is closed')
  }
  return {
    durable: true,
    get(name) {
      guard()
      return db.get(name)
    },
    async put(name: string, record: NameRecord, expected: Expected): Promise<WriteResult> {
      guard()
      let previous: Address | undefined
      await db.transaction(() => {
        previous = db.get(name)?.manifestAddress
        checkPut(name, previous, expected)
        void db.put(name, record)
      })
      await db.flushed
      return { previous: previous ?? null }
    },
    async delete(name, expected): Promise<WriteResult> {
      guard()
      let previous: Address | undefined
      await db.transaction(() => {
        previous = checkDelete(name, db.get(name)?.manifestAddress, expected)
        void db.remove(name)
      })
      await db.flushed
      return { previous: previous ?? null }
    },
    count() {
      guard()
      return db.getCount()
    },
    async close() {
      if (closed) return
      closed = true
      await db.close()
    },
  }
}
