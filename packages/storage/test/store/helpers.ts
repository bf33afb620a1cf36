/** Test helpers for the store suites: the compliance suite's helpers, the canonical `flipByte`, and `readAll`. */
import type { Address } from '@ron/core'
import { collect } from '../../src/store/compliance-helpers.js'
import type { BlobStore } from '../../src/store/types.js'

export { bytes, chunked, collect, concat, listAll, once, readUntilError, rejection, rng } from '../../src/store/compliance-helpers.js'
export { flipByte } from '../../src/store/testing.js'


/** Opens `address` (it must exist), reads it whole or the given range, and closes the reader. */
export async function readAll(store: BlobStore, address: Address, range?: { start: number; end: number }): Promise<Uint8Array> {
  const r = await store.open(address)
  if (r === undefined) throw new Error(`object ${address} is missing`)
  try {
    return (await collect(r.read(range))).data
  } finally {
    await r.close()
  }
}
