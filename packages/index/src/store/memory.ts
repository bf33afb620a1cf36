/**
 * A memory name store: for tests, embedded use without a data directory and amnesia mode (it never
 * touches disk).
 *
 * @module
 */

import { ClosedError } from '@ron/core'
import type { Expected, NameRecord, NameStore, WriteResult } from './types.js'
import { checkDelete, checkPut } from './cas.js'

/** Creates a memory {@link NameStore}. After `close()` every call fails with {@link ClosedError}, as with LMDB. */
export function createMemoryNameStore(): NameStore {
  const names = new Map<string, NameRecord>()
  let closed = false
  const guard = (): void => {
    if (closed) throw new ClosedError('name store is closed')
  }
  return {
    durable: false,
    get: (name) => {
      guard()
      return names.get(name)
    },
    // Check and write happen in one synchronous step (no await between them): no other write can
    // interleave.
    // eslint-disable-next-line @typescript-eslint/require-await
    async put(name: string, record: NameRecord, expected: Expected): Promise<WriteResult> {
      guard()
      const previous = names.get(name)?.manifestAddress
      checkPut(name, previous, expected)
      names.set(name, record)
      return { previous: previous ?? null }
    },
    // eslint-disable-next-line @typescript-eslint/require-await
    async delete(name, expected): Promise<WriteResult> {
      guard()
      const previous = checkDelete(name, names.get(name)?.manifestAddress, expected)
      names.delete(name)
      return { previous }
    },
    count: () => {
      guard()
      return names.size
    },
    close: () => {
      closed = true
      names.clear()
      return Promise.resolve()
    },
  }
}
