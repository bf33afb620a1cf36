/**
 * The memory backend: for tests and amnesia mode. Same contract and the same integrity checks as
 * the filesystem backend; nothing touches disk.
 *
 * @module
 */

import { setMaxListeners } from 'node:events'
import { ClosedError, IntegrityFailedError, abortReason, linkSignals, parseAddress } from '@ron/core'
import type { Address } from '@ron/core'
import { DEFAULT_CHUNK_SIZE, checkChunkSize, decodeTable } from './integrity.js'
import type { ChunkTable } from './integrity.js'
import { attempt, ingest } from './ingest.js'
import { registerInternals } from './internals.js'
import { readVerified, verifyChunks } from './verified-read.js'
import type {
  BlobReader,
  BlobStat,
  BlobStore,
  ByteRange,
  MemoryStoreOptions,
  ProbeResult,
  PutOptions,
  PutResult,
  VerifyResult,
} from './types.js'

interface MemoryRecord {
  data: Uint8Array
  /** Encoded chunk table, decoded and checked on every open/verify like the fs sidecar. */
  table: Uint8Array
  size: number
}


/**
 * Creates an in-memory {@link BlobStore}. Objects live in a `Map` until deleted or the store is
 * closed; puts are still hashed and verified like on disk, reads are still verified chunk by
 * chunk, and the returned chunks are copies.
 *
 * @throws `MalformedError` when `chunkSize` is out of bounds.
 * @example
 * ```ts
 * const store = createMemoryStore()
 * const { address } = await store.put((async function* () { yield new TextEncoder().encode('hi') })())
 * const reader = await store.open(address)
 * for await (const chunk of reader!.read()) console.log(chunk)
 * await reader!.close()
 * ```
 */
export function createMemoryStore(opts: MemoryStoreOptions = {}): BlobStore & AsyncDisposable {
  const chunkSize = checkChunkSize(opts.chunkSize ?? DEFAULT_CHUNK_SIZE)
  const objects = new Map<Address, MemoryRecord>()
  const closing = new AbortController()
  setMaxListeners(0, closing.signal) // one listener per put in flight
  let closed = false

  const checkOpen = (): void => {
    if (closed) throw new ClosedError('memory store is closed')
  }

  const store: BlobStore & AsyncDisposable = {
    kind: 'memory',
    chunkSize,
    get closed() {
      return closed
    },

    async put(source: AsyncIterable<Uint8Array>, o: PutOptions = {}): Promise<PutResult> {
      checkOpen()
      const link = linkSignals(closing.signal, o.signal)
      const signal = link.signal
      const pieces: Uint8Array[] = []
      let table
      try {
        table = await ingest(source, { chunkSize, expect: o.expect, maxBytes: o.maxBytes, signal }, (p) => {
          pieces.push(p.slice())
        })
        if (o.beforeCommit !== undefined) await o.beforeCommit(table.address, table.size)
        checkOpen()
        // Like the fs backend: a put cancelled before its commit keeps nothing.
        if (signal.aborted) throw abortReason(signal)
      } finally {
        link.dispose()
      }
      // Like the fs backend, a put always stores its freshly verified copy: an existing record may
      // be corrupt, and re-uploading the right bytes must heal it (content addressing: same bytes).
      // `created` is false only when a record with a usable table was already there.
      const prev = objects.get(table.address)
      const existed = prev !== undefined && typeof decodeTable(prev.table, { address: table.address, size: prev.size }) !== 'string'
      const data = new Uint8Array(table.size)
      let off = 0
      for (const p of pieces) {
        data.set(p, off)
        off += p.length
      }
      objects.set(table.address, { data, table: table.encode(), size: table.size })
      return { address: table.address, size: table.size, created: o.replace === true || !existed }
    },

    // eslint-disable-next-line @typescript-eslint/require-await
    async open(address: Address): Promise<BlobReader | undefined> {
      checkOpen()
      const rec = objects.get(parseAddress(address, 'address'))
      if (!rec) return undefined
      const table = decodeTable(rec.table, { address, size: rec.size })
      if (typeof table === 'string') {
        throw new IntegrityFailedError(`integrity data of ${address} is unusable (${table})`, { details: { address, reason: table } })
      }
      let readerClosed = false
      const checkReader = (): void => {
        checkOpen()
        if (readerClosed) throw new ClosedError('blob reader is closed')
      }
      return {
        address,
        size: table.size,
        chunkSize: table.chunkSize,
        read(range?: ByteRange, signal?: AbortSignal): AsyncIterable<Uint8Array> {
          return readVerified(table, range, signal, readChunkOf(rec, table), checkReader)
        },
        close(): Promise<void> {
          readerClosed = true
          return Promise.resolve()
        },
      }
    },

    stat(address: Address): Promise<BlobStat | undefined> {
      return attempt(() => {
        checkOpen()
        const rec = objects.get(parseAddress(address, 'address'))
        return rec ? { size: rec.size } : undefined
      })
    },

    delete(address: Address): Promise<boolean> {
      return attempt(() => {
        checkOpen()
        return objects.delete(parseAddress(address, 'address'))
      })
    },

    async *list(signal?: AbortSignal): AsyncGenerator<Address> {
      checkOpen()
      for (const a of [...objects.keys()]) {
        await Promise.resolve() // stay cooperative: a long listing must not monopolise the loop
        if (signal?.aborted) throw abortReason(signal)
        checkOpen()
        yield a
      }
    },

    async verify(address: Address, signal?: AbortSignal): Promise<VerifyResult> {
      checkOpen()
      const rec = objects.get(parseAddress(address, 'address'))
      if (!rec) return { ok: false, size: 0, badChunks: [], reason: 'missing' }
      const table = decodeTable(rec.table, { address, size: rec.size })
      if (typeof table === 'string') return { ok: false, size: rec.size, badChunks: [], reason: 'table_corrupt' }
      return verifyChunks(table, readChunkOf(rec, table), signal)
    },

    probe(): Promise<ProbeResult> {
      return Promise.resolve(closed ? { writable: false, reason: 'closed' } : { writable: true })
    },

    close(): Promise<void> {
      if (!closed) {
        closed = true
        closing.abort(new ClosedError('memory store is closed'))
        objects.clear()
      }
      return Promise.resolve()
    },

    [Symbol.asyncDispose](): Promise<void> {
      return store.close()
    },

  }
  // Corruption for tests goes through `@ron/storage/testing`, not through the store object.
  const flip = (bytes: Uint8Array | undefined, offset: number, mask: number): boolean => {
    if (bytes === undefined || offset < 0 || offset >= bytes.length) return false
    bytes[offset] = bytes[offset]! ^ mask
    return true
  }
  registerInternals(store, {
    corruptBytes: (address, offset, mask) => Promise.resolve(flip(objects.get(address)?.data, offset, mask)),
    corruptTable: (address, offset, mask) => Promise.resolve(flip(objects.get(address)?.table, offset, mask)),
  })
  return store
}

function readChunkOf(rec: MemoryRecord, table: ChunkTable): (i: number, len: number) => Promise<Uint8Array> {
  return (i, len) => {
    const start = i * table.chunkSize
    return Promise.resolve(rec.data.slice(start, Math.min(start + len, rec.data.length)))
  }
}
