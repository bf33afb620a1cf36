/**
 * File I/O helpers of the filesystem backend: coalesced sequential writes for puts and positioned
 * chunk reads for verified streaming.
 *
 * @module
 */

import type { FileHandle } from 'node:fs/promises'

/**
 * Gathers small pieces (request bodies arrive in pieces of a few KiB under load) into one buffer
 * so the file sees large sequential writes, not one thread-pool round trip per piece.
 * @internal
 */
export class CoalescingWriter {
  static readonly CAPACITY = 256 * 1024
  readonly #fh: FileHandle
  #buf: Buffer | undefined
  #len = 0

  constructor(fh: FileHandle) {
    this.#fh = fh
  }

  async write(piece: Uint8Array): Promise<void> {
    const cap = CoalescingWriter.CAPACITY
    if (this.#len + piece.length > cap) await this.flush()
    if (piece.length >= cap) return writeAll(this.#fh, piece)
    this.#buf ??= Buffer.allocUnsafe(cap)
    this.#buf.set(piece, this.#len)
    this.#len += piece.length
  }

  async flush(): Promise<void> {
    if (this.#len === 0 || !this.#buf) return
    const n = this.#len
    this.#len = 0
    await writeAll(this.#fh, this.#buf.subarray(0, n))
  }
}

/** Writes all of `piece` at the current file position (loops over short writes). @internal */
export async function writeAll(fh: FileHandle, piece: Uint8Array): Promise<void> {
  let off = 0
  while (off < piece.length) {
    const { bytesWritten } = await fh.write(piece, off, piece.length - off)
    off += bytesWritten
  }
}

/** Positioned read of up to `len` bytes at `pos` into a fresh buffer; short only at end of file. @internal */
export async function readAt(fh: FileHandle, pos: number, len: number, checkOpen: () => void): Promise<Uint8Array> {
  const buf = Buffer.allocUnsafe(len)
  let got = 0
  try {
    while (got < len) {
      const { bytesRead } = await fh.read(buf, got, len - got, pos + got)
      if (bytesRead === 0) break
      got += bytesRead
    }
  } catch (e) {
    checkOpen() // a handle closed under us reports Closed, not EBADF
    throw e
  }
  return got === len ? buf : buf.subarray(0, got)
}
