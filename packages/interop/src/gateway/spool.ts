/**
 * Whole-object verification before the first byte goes out (SPEC §6a "Gateway"): a body from
 * another node is read to its end and hashed; only when it hashes to its address is any of it
 * served. Small bodies are kept in memory; a body that grows past `memoryBytes` is spooled to a
 * temporary file that is unlinked as soon as it is open (so nothing is left behind, even by a
 * crash), and served from that file handle.
 *
 * @module
 */

import { randomBytes } from 'node:crypto'
import { open, unlink, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { IntegrityFailedError, OverLimitError, createBlake3, toAddress, type Address } from '@ron/core'
import type { ByteRange } from './range.js'

/** How {@link readVerified} reads. */
export interface VerifyOptions {
  /** Kept in memory up to this many bytes; more go to a file. */
  memoryBytes: number
  /** Refused (OverLimit) past this many bytes. */
  maxBytes: number
  /** Directory of the temporary file. @default the OS temp directory */
  spoolDir?: string | undefined
  /** Told when a body went to a file. */
  onSpool?: () => void
}

const READ_CHUNK = 64 * 1024

/** A whole object that hashed to its address: in memory or in an unlinked temporary file. */
export interface VerifiedObject {
  readonly size: number
  /** The bytes, when they are held in memory. */
  readonly bytes: Uint8Array | undefined
  /**
   * The bytes of `range` (all of them without one) as a reply body. Takes ownership of the file,
   * if any: it is closed when the body ends or is abandoned. Call at most once.
   */
  body(range?: ByteRange): Uint8Array | AsyncIterable<Uint8Array>
  /** Closes the file when no body was taken. Idempotent. */
  release(): Promise<void>
}

/** Verified bytes held in memory. */
export function memoryObject(bytes: Uint8Array): VerifiedObject {
  return {
    size: bytes.byteLength,
    bytes,
    body: (range) => (range === undefined ? bytes : bytes.subarray(range.start, range.end + 1)),
    release: () => Promise.resolve(),
  }
}

/**
 * Reads `body` to its end, verifying it against `address`.
 * @throws {@link IntegrityFailedError} when the bytes do not hash to `address` (nothing kept);
 *   {@link OverLimitError} past `maxBytes`; the body's own errors (a cut connection, an abort).
 */
export async function readVerified(body: AsyncIterable<Uint8Array>, address: Address, o: VerifyOptions): Promise<VerifiedObject> {
  const hash = createBlake3()
  const chunks: Uint8Array[] = []
  let size = 0
  let spool: Spool | undefined
  try {
    for await (const c of body) {
      if (c.byteLength === 0) continue
      size += c.byteLength
      if (size > o.maxBytes) throw new OverLimitError(`the object is larger than ${o.maxBytes} bytes`, { details: { address, limit: o.maxBytes } })
      hash.update(c)
      if (spool === undefined && size <= o.memoryBytes) {
        // A copy: the source may reuse its buffer.
        chunks.push(c.slice())
        continue
      }
      if (spool === undefined) {
        spool = await Spool.create(o.spoolDir ?? tmpdir())
        o.onSpool?.()
        for (const held of chunks.splice(0)) await spool.write(held)
      }
      await spool.write(c)
    }
    if (toAddress(hash.digest()) !== address) {
      throw new IntegrityFailedError('the bytes another node sent do not hash to their address', { details: { address } })
    }
  } catch (e) {
    await spool?.close()
    throw e
  }
  if (spool === undefined) return memoryObject(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size))
  const s = spool
  return {
    size,
    bytes: undefined,
    body: (range) => s.body(range?.start ?? 0, range === undefined ? size : range.end + 1),
    release: () => s.close(),
  }
}

/** A temporary file, unlinked while open; read back by position. */
class Spool {
  #closed = false
  #taken = false
  private constructor(
    private readonly fh: FileHandle,
    /** Set when the file could not be unlinked at once (it is then unlinked on close). */
    private readonly leftover: string | undefined,
  ) {}

  static async create(dir: string): Promise<Spool> {
    const path = join(dir, `.ron-gateway-${randomBytes(12).toString('hex')}.spool`)
    const fh = await open(path, 'wx+', 0o600)
    try {
      await unlink(path)
      return new Spool(fh, undefined)
    } catch {
      return new Spool(fh, path)
    }
  }

  async write(chunk: Uint8Array): Promise<void> {
    let off = 0
    while (off < chunk.byteLength) {
      const { bytesWritten } = await this.fh.write(chunk, off, chunk.byteLength - off)
      off += bytesWritten
    }
  }

  body(from: number, to: number): AsyncIterable<Uint8Array> {
    if (this.#taken) throw new Error('spooled body taken twice')
    this.#taken = true
    return new FileBody(this, from, to)
  }

  async read(position: number, length: number): Promise<Uint8Array> {
    const buf = Buffer.allocUnsafe(length)
    let got = 0
    while (got < length) {
      const { bytesRead } = await this.fh.read(buf, got, length - got, position + got)
      if (bytesRead === 0) throw new Error('spool file ended early')
      got += bytesRead
    }
    return buf
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.fh.close().catch(() => undefined)
    if (this.leftover !== undefined) await unlink(this.leftover).catch(() => undefined)
  }
}

/**
 * Bytes `[from, to)` of a spool, 64 KiB at a time. Not a generator: the file must be closed even
 * when the body is abandoned before its first chunk (a generator's `finally` would not run).
 */
class FileBody implements AsyncIterable<Uint8Array>, AsyncIterator<Uint8Array> {
  #pos: number
  constructor(
    private readonly spool: Spool,
    from: number,
    private readonly to: number,
  ) {
    this.#pos = from
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this
  }

  async next(): Promise<IteratorResult<Uint8Array>> {
    if (this.#pos >= this.to) {
      await this.spool.close()
      return { done: true, value: undefined }
    }
    const n = Math.min(READ_CHUNK, this.to - this.#pos)
    try {
      const chunk = await this.spool.read(this.#pos, n)
      this.#pos += n
      return { done: false, value: chunk }
    } catch (e) {
      await this.spool.close()
      throw e
    }
  }

  async return(): Promise<IteratorResult<Uint8Array>> {
    this.#pos = this.to
    await this.spool.close()
    return { done: true, value: undefined }
  }
}
