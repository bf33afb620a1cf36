/**
 * The durable name store on LMDB (the `lmdb` package: an embedded, memory-mapped, copy-on-write
 * B+tree; no server to run). Crash safety comes from LMDB itself: a write transaction commits by
 * flipping one meta page, so a crash leaves either the old or the new binding, never a torn one.
 * Durability: `lmdb` commits with `overlappingSync` by default (Linux, macOS), so a write's own
 * promise resolves when it is committed and visible, and the fsync lands later; every write here
 * also awaits `db.flushed`, so it answers only once it is on disk. Concurrent writers share those
 * commits and flushes.
 *
 * Compare-and-set of a name write is decided on the main thread, against the committed state, and
 * its changes go to lmdb as one asynchronous `batch` (atomic: one transaction), the way a bare put
 * loop writes: lmdb's writer thread puts the batches in flight into one transaction and one sync,
 * with no hand-off back to JavaScript inside the transaction. Writes of one name are chained: each
 * decides only once the one before it has committed or failed, so it reads what that one left (a
 * failed commit leaves nothing, and the next write decides on the state before it). `migrate`
 * waits for the writes in flight and holds new ones back until it is done; `purgeTombstones`, the
 * probe and `keepSigned` (the write-back of signatures made on serve) still run as transactions
 * (rare; they check inside). This process is the only writer
 * of the directory (the service owns its data directory).
 *
 * Three databases share the environment: `names` (bindings), `tombstones` (signed deletes) and
 * `meta` (the disk probe). Writes inside a transaction or batch use calls that return no promise
 * of their own, so no promise of `lmdb` is ever left without a handler; a failed commit or flush
 * (a full or failing volume) is a 503 `NotReady` disk fault ({@link lmdbFault}), never an
 * unhandled rejection.
 *
 * @module
 */

import { mkdir } from 'node:fs/promises'
import { asBinary, open, type Database, type RootDatabase } from 'lmdb'
import { ClosedError, toDiskFault } from '@ron/core'
import type { StoredNameRecord } from '../name-record.js'
import type { NameRecord, NameStore, WriteResult } from './types.js'
import { checkDelete, checkPut, stillUnsigned } from './cas.js'
import { LOW_SPACE_BYTES, freeBytes, lmdbFault } from './disk-fault.js'

/** Options of {@link openLmdbNameStore}. */
export interface LmdbNameStoreOptions {
  /** Directory of the database (created if missing). */
  dir: string
  /** Largest map size, in bytes. @default 1 GiB */
  mapSize?: number
}

/**
 * Most bindings kept decoded beside their stored bytes (`known` in {@link openLmdbNameStore}):
 * the names written or read for a write lately, about 1 KiB each.
 */
const KNOWN_MAX = 4096

/** The msgpack decoder of an lmdb database (`Database.decoder`, typed `any` there). */
interface Decoder {
  decode(bytes: Buffer): unknown
}

/** What a write decided: its changes, the answer once they are committed, what to do then. */
interface Decision<T> {
  /** The changes, run inside one lmdb `batch`. */
  apply: () => void
  answer: T
  /** Called once the changes are committed (before the flush). */
  committed?: () => void
}

/** The msgpack encoder of an lmdb database (`Database.encoder`, typed `any` there). */
interface Encoder {
  encode(value: unknown): Buffer
}

/**
 * Opens (or creates) the LMDB name store in `dir`.
 * @throws the `lmdb` error when the directory cannot be created or opened.
 */
export async function openLmdbNameStore(options: LmdbNameStoreOptions): Promise<NameStore> {
  const dir = options.dir
  await mkdir(dir, { recursive: true, mode: 0o700 })
  // The bindings keep the database the store has always used (`names`), so existing data opens.
  const root: RootDatabase<NameRecord, string> = open<NameRecord, string>({
    path: dir,
    name: 'names',
    compression: false,
    mapSize: options.mapSize ?? 1024 ** 3,
    // Durability: never skip the sync (each write also awaits `db.flushed` before it answers).
    noSync: false,
    encoding: 'msgpack',
    // Plain msgpack maps for what is written from now on: msgpackr's default records put their
    // field list inline in every value (no shared structures here), and decoding one defines its
    // record structures anew each time, about a third of a name write's msgpack work. Values
    // written as records before still decode (the decoder reads both).
    encoder: { useRecords: false },
    // Each write here is its own transaction. lmdb's event-turn batching would open a batch per
    // event turn whose own commit promise nobody awaits: when that commit fails (a full disk) the
    // rejection is unhandled and ends the process.
    eventTurnBatching: false,
  })
  const names: Database<NameRecord, string> = root
  const tombstones: Database<StoredNameRecord, string> = root.openDB<StoredNameRecord, string>({ name: 'tombstones', encoding: 'msgpack', compression: false })
  const meta: Database<number, string> = root.openDB<number, string>({ name: 'meta', encoding: 'msgpack', compression: false })
  let closed = false
  /** A commit failed and no commit succeeded since. */
  let failed = false
  const guard = (): void => {
    if (closed) throw new ClosedError('name store is closed')
  }
  /**
   * Runs `body` in one write transaction and waits until it is on disk. What `body` throws (a
   * compare-and-set conflict) passes through as it is; a failed commit or flush is a disk fault.
   */
  const commit = async <T>(body: () => T): Promise<T> => {
    guard()
    let out: { value: T } | undefined
    let refused: { error: unknown } | undefined
    try {
      await root.transaction(() => {
        try {
          out = { value: body() }
        } catch (e) {
          refused = { error: e }
          throw e
        }
      })
      await root.flushed
      failed = false
    } catch (e) {
      if (refused !== undefined) throw refused.error
      failed = true
      throw await lmdbFault(e, dir)
    }
    if (out === undefined) throw await lmdbFault(new Error('the transaction did not run'), dir)
    return out.value
  }
  /**
   * Bindings kept decoded, each with a copy of the bytes it was decoded from (or encoded to): a
   * write's read (`stateForWrite`) and decision (`put`, `delete`) reuse the value when the stored
   * bytes are still those bytes, and decode them otherwise. Set by each read that decoded and by
   * each committed put (it encodes the binding itself, so it knows the bytes it stored), so the
   * next write of a name decodes nothing. The bytes are compared on every use: a change by any
   * other path (a write-back, a migration, another process) is simply not reused. At most
   * {@link KNOWN_MAX}, the least lately kept dropped first.
   */
  const decoder = (names as unknown as { decoder: Decoder }).decoder
  const encoder = (names as unknown as { encoder: Encoder }).encoder
  const known = new Map<string, { bytes: Buffer; value: NameRecord }>()
  const keep = (name: string, bytes: Buffer, value: NameRecord): void => {
    known.delete(name)
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!)
    known.set(name, { bytes, value })
  }
  /**
   * The committed binding of `name`, decoded only when its stored bytes are not the known ones.
   * lmdb's fast buffer reports the value's length but spans its whole shared buffer (byteLength),
   * and the next read overwrites it: compared at once, copied when kept.
   */
  const bindingNow = (name: string): NameRecord | undefined => {
    const fast = names.getBinaryFast(name)
    if (fast === undefined) return undefined
    const bytes = fast.subarray(0, fast.length)
    const kept = known.get(name)
    if (kept !== undefined && kept.bytes.equals(bytes)) return kept.value
    const copy = Buffer.from(bytes)
    const value = decoder.decode(copy) as NameRecord
    keep(name, copy, value)
    return value
  }
  /**
   * Per name, a promise that settles once the last write of it queued so far has committed or
   * failed (never rejects): the next write of the name decides after it. Removed by the write that
   * set it when no later write of the name came.
   */
  const chains = new Map<string, Promise<void>>()
  /** While `migrate` runs: settles when it is done; writes wait for it before joining a chain. */
  let exclusive: Promise<void> | undefined
  /**
   * Writes `name`: waits for the writes of the name before it, then `decide` (on the main thread,
   * against the committed state) checks the compare-and-set and returns the changes and the
   * answer; the changes go to lmdb as one batch (one transaction, shared with the writes in
   * flight), and the answer comes once it is committed and flushed. What `decide` throws (a
   * conflict) passes through and writes nothing; a failed batch, commit or flush is a disk fault.
   */
  const write = async <T>(name: string, decide: () => Decision<T>): Promise<T> => {
    guard()
    while (exclusive !== undefined) await exclusive
    const before = chains.get(name)
    let release!: () => void
    const mine = new Promise<void>((r) => (release = r))
    chains.set(name, mine)
    try {
      if (before !== undefined) {
        await before
        guard()
      }
      const { apply, answer, committed: onCommitted } = decide()
      let committed: Promise<unknown>
      try {
        committed = root.batch(apply)
      } catch (e) {
        failed = true
        throw await lmdbFault(e, dir)
      }
      try {
        await committed
        onCommitted?.()
        // Committed and visible: the next write of the name may decide now (it shares the flush).
        release()
        await root.flushed
        failed = false
      } catch (e) {
        failed = true
        throw await lmdbFault(e, dir)
      }
      return answer
    } finally {
      release()
      if (chains.get(name) === mine) chains.delete(name)
    }
  }
  return {
    durable: true,
    stateForWrite(name) {
      guard()
      const binding = bindingNow(name)
      // A bound name has no tombstone (see `put`): only an unbound one is looked up.
      return binding === undefined ? { binding: undefined, tombstone: tombstones.get(name) } : { binding, tombstone: undefined }
    },
    get(name) {
      guard()
      return names.get(name)
    },
    tombstone(name) {
      guard()
      return tombstones.get(name)
    },
    put(name, expected, make): Promise<WriteResult> {
      return write(name, () => {
        const binding = bindingNow(name)
        const previous = binding?.manifestAddress
        checkPut(name, previous, expected)
        // A name has a binding or a tombstone, never both: this batch removes the tombstone it
        // binds over, and a delete's removes the binding. So a bound name's tombstone is neither
        // read nor removed (a read and a write instruction less for most writes).
        const tombstone = binding === undefined ? tombstones.get(name) : undefined
        const value = make({ binding, tombstone })
        // Encoded here (as lmdb would, with the same encoder) so the bytes stored are known: the
        // next write of the name finds them and decodes nothing.
        const bytes = Buffer.from(encoder.encode(value))
        return {
          apply: () => {
            void names.put(name, asBinary(bytes) as unknown as NameRecord)
            if (tombstone !== undefined) void tombstones.remove(name)
          },
          answer: { previous: previous ?? null },
          committed: () => keep(name, bytes, value),
        }
      })
    },
    delete(name, expected, make): Promise<WriteResult> {
      return write(name, () => {
        const binding = bindingNow(name)
        const previous = checkDelete(name, binding?.manifestAddress, expected)
        const tombstone = make(binding!, tombstones.get(name))
        return {
          apply: () => {
            void tombstones.put(name, tombstone)
            void names.remove(name)
          },
          answer: { previous },
        }
      })
    },
    async migrate(fix) {
      guard()
      // Alone: the writes in flight commit first, and new ones wait until the rewrite is done, so
      // none decides on a state the rewrite is about to change.
      while (exclusive !== undefined) await exclusive
      let done!: () => void
      exclusive = new Promise<void>((r) => (done = r))
      try {
        await Promise.all(chains.values())
        return await commit(() => {
          let n = 0
          for (const { key, value } of names.getRange()) {
            const r = fix.binding(key, value)
            if (r !== undefined) {
              names.putSync(key, r)
              n++
            }
          }
          for (const { key, value } of tombstones.getRange()) {
            const r = fix.tombstone(key, value)
            if (r !== undefined) {
              tombstones.putSync(key, r)
              n++
            }
          }
          return n
        })
      } finally {
        exclusive = undefined
        done()
      }
    },
    keepSigned(records) {
      // A transaction that checks inside, as the purge: it sees every write queued before it (a
      // name write decided earlier, a purge), and a write queued after it replaces the whole
      // binding or tombstone anyway. So a write-back never undoes a write, and never needs the
      // name's write chain.
      return commit(() => {
        let n = 0
        for (const r of records) {
          const binding = names.get(r.name)
          const tombstone = binding === undefined ? tombstones.get(r.name) : undefined
          if (!stillUnsigned(r, binding, tombstone)) continue
          if (binding !== undefined) names.putSync(r.name, { ...binding, record: r })
          else tombstones.putSync(r.name, r)
          n++
        }
        return n
      })
    },
    async purgeTombstones(before) {
      guard()
      // Read first: most rounds find nothing to purge and need no write at all.
      const expired: string[] = []
      for (const { key, value } of tombstones.getRange()) if (value.signedAt < before) expired.push(key)
      if (expired.length === 0) return 0
      return commit(() => {
        let n = 0
        for (const key of expired) {
          const t = tombstones.get(key)
          if (t !== undefined && t.signedAt < before) {
            tombstones.removeSync(key)
            n++
          }
        }
        return n
      })
    },
    list(prefix, after, limit) {
      guard()
      const out: Array<[string, NameRecord]> = []
      // Keys sort as strings: start at the prefix (or just after the cursor) and stop at the first
      // name outside the prefix.
      const start = after !== undefined && after >= prefix ? after : prefix
      for (const { key, value } of names.getRange({ start })) {
        if (out.length >= limit || !key.startsWith(prefix)) break
        if (after !== undefined && key <= after) continue
        out.push([key, value])
      }
      return out
    },
    async probe() {
      // A copy-on-write B+tree can reuse freed pages on a full volume, so a tiny write may pass
      // where a real one fails: the volume must also have room.
      const free = await freeBytes(dir)
      if (free !== undefined && free < LOW_SPACE_BYTES) throw toDiskFault(Object.assign(new Error(`${free} bytes free`), { code: 'ENOSPC' }), 'index')
      await commit(() => meta.putSync('probe', (meta.get('probe') ?? 0) + 1))
    },
    count() {
      guard()
      return names.getCount()
    },
    get closed() {
      return closed
    },
    async close() {
      if (closed) return
      closed = true
      // lmdb's close waits for the flush of the last batch, which never comes when that batch's
      // commit failed (a full disk): an empty transaction commits without writing a page and
      // brings a flush that does.
      if (failed) await root.transaction(() => undefined).catch(() => undefined)
      await root.close()
    },
  }
}
