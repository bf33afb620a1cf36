/**
 * A memory name store: for tests, embedded use without a data directory and amnesia mode (it never
 * touches disk).
 *
 * @module
 */

import { ClosedError } from '@ron/core'
import type { StoredNameRecord } from '../name-record.js'
import type { NameRecord, NameStore, WriteResult } from './types.js'
import { checkDelete, checkPut, stillUnsigned } from './cas.js'

/** Creates a memory {@link NameStore}. After `close()` every call fails with {@link ClosedError}, as with LMDB. */
export function createMemoryNameStore(): NameStore {
  const names = new Map<string, NameRecord>()
  const tombstones = new Map<string, StoredNameRecord>()
  let closed = false
  const guard = (): void => {
    if (closed) throw new ClosedError('name store is closed')
  }
  // Every write checks and changes the maps in one synchronous step (no await between them): no
  // other write can interleave.
  return {
    durable: false,
    get: (name) => {
      guard()
      return names.get(name)
    },
    tombstone: (name) => {
      guard()
      return tombstones.get(name)
    },
    // eslint-disable-next-line @typescript-eslint/require-await
    async put(name, expected, make): Promise<WriteResult> {
      guard()
      const binding = names.get(name)
      const previous = binding?.manifestAddress
      checkPut(name, previous, expected)
      names.set(name, make({ binding, tombstone: tombstones.get(name) }))
      tombstones.delete(name)
      return { previous: previous ?? null }
    },
    // eslint-disable-next-line @typescript-eslint/require-await
    async delete(name, expected, make): Promise<WriteResult> {
      guard()
      const binding = names.get(name)
      const previous = checkDelete(name, binding?.manifestAddress, expected)
      tombstones.set(name, make(binding!, tombstones.get(name)))
      names.delete(name)
      return { previous }
    },
    migrate(fix) {
      guard()
      let n = 0
      for (const [name, b] of names) {
        const r = fix.binding(name, b)
        if (r !== undefined) {
          names.set(name, r)
          n++
        }
      }
      for (const [name, t] of tombstones) {
        const r = fix.tombstone(name, t)
        if (r !== undefined) {
          tombstones.set(name, r)
          n++
        }
      }
      return Promise.resolve(n)
    },
    keepSigned(records) {
      guard()
      let n = 0
      for (const r of records) {
        const binding = names.get(r.name)
        const tombstone = binding === undefined ? tombstones.get(r.name) : undefined
        if (!stillUnsigned(r, binding, tombstone)) continue
        if (binding !== undefined) names.set(r.name, { ...binding, record: r })
        else tombstones.set(r.name, r)
        n++
      }
      return Promise.resolve(n)
    },
    purgeTombstones(before) {
      guard()
      let n = 0
      for (const [name, t] of tombstones) {
        if (t.signedAt < before) {
          tombstones.delete(name)
          n++
        }
      }
      return Promise.resolve(n)
    },
    list(prefix, after, limit) {
      guard()
      const out: Array<[string, NameRecord]> = []
      // Sorted on demand: memory stores are small (tests, amnesia), and listing is rare.
      for (const name of [...names.keys()].sort()) {
        if (out.length >= limit) break
        if (!name.startsWith(prefix) || (after !== undefined && name <= after)) continue
        out.push([name, names.get(name)!])
      }
      return out
    },
    probe: () => (closed ? Promise.reject(new ClosedError('name store is closed')) : Promise.resolve()),
    count: () => {
      guard()
      return names.size
    },
    get closed() {
      return closed
    },
    close: () => {
      closed = true
      names.clear()
      tombstones.clear()
      return Promise.resolve()
    },
  }
}
