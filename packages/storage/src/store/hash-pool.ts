/**
 * Reading and hashing large blocks off the main thread. A streamed GET of a large object spends
 * most of its main-thread time hashing (BLAKE3 of every chunk before it is sent); with several
 * streams the one JS thread serialises them. A small pool of worker threads each reads a block
 * with one `pread` on the object's open descriptor and hashes its chunks with the native BLAKE3,
 * and hands back the bytes (transferred, not copied) with one digest per chunk; the main thread
 * only compares the digests with the chunk table ({@link ChunkTable.matchRun}) before yielding
 * the bytes. Verification is unchanged: the digests are of exactly the bytes that are sent.
 *
 * Used only with the native hasher (`@napi-rs/blake-hash`) and for blocks of at least
 * {@link OFFLOAD_MIN_BYTES}; anything else (small reads, ranges, no native binary) is read and
 * hashed on the main thread as before. The workers start on first use, never keep the process
 * alive, and a worker that fails is replaced.
 *
 * @module
 */

import { availableParallelism } from 'node:os'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { blake3Backend } from '@ron/core'

/** Blocks at least this large are read and hashed by a worker. */
export const OFFLOAD_MIN_BYTES = 256 * 1024

/** A block read and hashed by a worker: its bytes and the BLAKE3 digest of each chunk in it. */
export interface HashedBlock {
  bytes: Uint8Array
  /** 32 bytes per chunk, for the `ceil(bytes.length / chunkSize)` pieces of `bytes`. */
  digests: Uint8Array
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { readSync } = require('node:fs')
const { blake3 } = require(workerData.native)
parentPort.on('message', (m) => {
  try {
    const buf = Buffer.allocUnsafeSlow(m.len)
    let got = 0
    while (got < m.len) {
      const n = readSync(m.fd, buf, got, m.len - got, m.pos + got)
      if (n === 0) break
      got += n
    }
    const count = Math.ceil(got / m.chunkSize)
    const digests = Buffer.allocUnsafeSlow(count * 32)
    for (let i = 0; i < count; i++) blake3(buf.subarray(i * m.chunkSize, Math.min((i + 1) * m.chunkSize, got))).copy(digests, i * 32)
    parentPort.postMessage({ id: m.id, buf: buf.buffer, got, digests: digests.buffer }, [buf.buffer, digests.buffer])
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: { code: e && e.code, message: String(e && e.message) } })
  }
})
`

type Reply = { id: number; buf: ArrayBuffer; got: number; digests: ArrayBuffer; error?: undefined } | { id: number; error: { code?: string; message: string } }

interface Slot {
  worker: Worker
  pending: Map<number, { resolve(b: HashedBlock): void; reject(e: Error): void }>
}

function nativePath(): string | undefined {
  if (blake3Backend !== 'native') return undefined
  try {
    return createRequire(import.meta.url).resolve('@napi-rs/blake-hash')
  } catch {
    return undefined
  }
}

/**
 * A fixed-size pool of reader-hasher threads (round robin; each worker takes its requests in
 * order). @internal
 */
export class HashPool {
  readonly #native: string | undefined
  readonly #size: number
  readonly #slots: (Slot | undefined)[]
  #next = 0
  #id = 0

  constructor(size = Math.max(1, Math.min(4, availableParallelism())), native = nativePath()) {
    this.#native = native
    this.#size = size
    this.#slots = new Array<Slot | undefined>(size).fill(undefined)
  }

  /** Whether blocks of `len` bytes go to a worker. */
  accepts(len: number): boolean {
    return this.#native !== undefined && this.#size > 0 && len >= OFFLOAD_MIN_BYTES
  }

  /**
   * Reads `len` bytes at `pos` of descriptor `fd` (short only at end of file) and hashes them in
   * pieces of `chunkSize`. The descriptor must stay open until this settles.
   * @throws the read's error (`code` kept, e.g. `EBADF`).
   */
  read(fd: number, pos: number, len: number, chunkSize: number): Promise<HashedBlock> {
    const i = this.#next
    this.#next = (i + 1) % this.#size
    const slot = (this.#slots[i] ??= this.#spawn(i))
    const id = ++this.#id
    return new Promise<HashedBlock>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject })
      // Outstanding requests keep the worker referenced; an idle pool never holds the process.
      if (slot.pending.size === 1) slot.worker.ref()
      slot.worker.postMessage({ id, fd, pos, len, chunkSize })
    })
  }

  #spawn(i: number): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { native: this.#native } })
    worker.unref()
    const slot: Slot = { worker, pending: new Map() }
    const failAll = (e: Error): void => {
      if (this.#slots[i] === slot) this.#slots[i] = undefined
      for (const p of slot.pending.values()) p.reject(e)
      slot.pending.clear()
    }
    worker.on('message', (r: Reply) => {
      const p = slot.pending.get(r.id)
      if (p === undefined) return
      slot.pending.delete(r.id)
      if (slot.pending.size === 0) worker.unref()
      if (r.error !== undefined) {
        const e = new Error(r.error.message) as Error & { code?: string }
        if (r.error.code !== undefined) e.code = r.error.code
        p.reject(e)
      } else {
        p.resolve({ bytes: Buffer.from(r.buf, 0, r.got), digests: new Uint8Array(r.digests) })
      }
    })
    worker.on('error', failAll)
    worker.on('exit', (code) => failAll(new Error(`hash worker exited (${code})`)))
    return slot
  }
}

let shared: HashPool | undefined

/** The process-wide pool (created on first use). @internal */
export function hashPool(): HashPool {
  return (shared ??= new HashPool())
}
