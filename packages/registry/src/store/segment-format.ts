/**
 * The files of a segment log directory and the low-level I/O the segment store needs: record
 * framing, scanning, whole writes, atomic file replacement and directory fsync.
 *
 * @module
 * @internal
 */

import { writeSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { crc32 } from 'node:zlib'
import type { LogEntry } from '../entry.js'

/** Record header: u32 length, u32 crc32. */
export const HEADER = 8
/** Bytes of one Merkle leaf hash in `leaves.bin`. */
export const LEAF = 32
export const GENESIS = 'genesis.json'
export const LEAVES = 'leaves.bin'
export const CHECKPOINTS = 'checkpoints.jsonl'
export const PROBE = '.probe'
/** Segment file names: `seg-<first version, 20 digits>.log`. */
export const SEGMENT_NAME = /^seg-\d{20}\.log$/

/** The file name of the segment whose first version is `first`. */
export function segName(first: number): string {
  return `seg-${String(first).padStart(20, '0')}.log`
}

/** The first version of a segment file name. */
export function segFirst(name: string): number {
  return Number(name.slice(4, 24))
}

/** A framed record: u32 length | u32 crc32 | bytes. */
export function frame(bytes: Uint8Array): Buffer {
  const buf = Buffer.allocUnsafe(HEADER + bytes.length)
  buf.writeUInt32BE(bytes.length, 0)
  buf.writeUInt32BE(crc32(bytes), 4)
  buf.set(bytes, HEADER)
  return buf
}

/**
 * Writes all of `buf` to `fd`, synchronously: at `position` when given, else at the file's
 * offset (the end, for a file opened in append mode).
 */
export function writeAll(fd: number, buf: Uint8Array, position?: number): void {
  let off = 0
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off, position === undefined ? null : position + off)
}

/** fsyncs a directory (after creating, renaming or removing entries in it). */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/**
 * Replaces `path` with `bytes` atomically and durably: a temporary file, fsync, rename, fsync of
 * the directory. A crash leaves the old file or the new one, never a mix.
 */
export async function writeFileAtomic(dir: string, path: string, bytes: Uint8Array | string, mode = 0o644): Promise<void> {
  const tmp = `${path}.tmp`
  const fh = await open(tmp, 'w', mode)
  try {
    await fh.writeFile(bytes)
    await fh.sync()
  } catch (e) {
    await fh.close().catch(() => undefined)
    await rm(tmp, { force: true }).catch(() => undefined)
    throw e
  }
  await fh.close()
  await rename(tmp, path)
  await fsyncDir(dir)
}

/** A parsed record of a segment file. */
export interface ScannedRecord {
  offset: number
  bytes: Buffer
  entry: LogEntry
}

/**
 * Scans a segment: records up to the first bad one, and where and why scanning stopped (`torn`:
 * the bad bytes run to the end of the file, as a crash mid-append leaves them; `corrupt`: more
 * follows them).
 */
export function scan(buf: Buffer): { records: ScannedRecord[]; stop: number; reason: 'end' | 'torn' | 'corrupt' } {
  const records: ScannedRecord[] = []
  let off = 0
  while (off < buf.length) {
    if (off + HEADER > buf.length) return { records, stop: off, reason: 'torn' }
    const len = buf.readUInt32BE(off)
    const sum = buf.readUInt32BE(off + 4)
    if (off + HEADER + len > buf.length) return { records, stop: off, reason: 'torn' }
    const bytes = buf.subarray(off + HEADER, off + HEADER + len)
    if (crc32(bytes) !== sum) return { records, stop: off, reason: off + HEADER + len === buf.length ? 'torn' : 'corrupt' }
    let entry: LogEntry
    try {
      entry = JSON.parse(bytes.toString('utf8')) as LogEntry
    } catch {
      return { records, stop: off, reason: 'corrupt' }
    }
    records.push({ offset: off, bytes, entry })
    off += HEADER + len
  }
  return { records, stop: off, reason: 'end' }
}
