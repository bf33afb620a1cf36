/**
 * The head record (`head.bin`): durable evidence of what the log has acknowledged, kept apart from
 * the segments so that a segment cut short, rewritten or deleted cannot also erase the proof that
 * its entries existed.
 *
 * ```
 * head.bin   1024 bytes: two 512-byte slots (A at offset 0, B at 512), each:
 *   0   4  magic "RONH"
 *   4   4  layout version, u32 BE (1)
 *   8   8  seq, u64 BE: +1 on every write; the valid slot with the higher seq is the record
 *  16   8  version, u64 BE: HEAD, the last acknowledged version (0: none yet)
 *  24  32  HEAD's entry hash, raw BLAKE3 (at version 0 the genesis hash)
 *  56   8  oldest, u64 BE: lowest version held (earlier ones were pruned under a checkpoint)
 *  64   8  checkpoints, u64 BE: signed checkpoints stored in checkpoints.jsonl
 *  72   8  checkpointBytes, u64 BE: the bytes of checkpoints.jsonl those occupy
 *  80   8  leaves, u64 BE: leaf hashes of leaves.bin known durable (fsynced), from version 1
 *  88   4  crc32 (zlib) of bytes 0..88
 *  92 420  zero
 * ```
 *
 * A write goes to slot `seq % 2` (never the slot holding the current record) and is fdatasynced,
 * so a write torn by a crash leaves the previous record intact in the other slot. A commit writes
 * its segment record and fdatasyncs it *before* writing the head record, and is acknowledged only
 * after both: every version up to the head record is acknowledged and durable, and whatever the
 * segments hold past it never was.
 *
 * @module
 * @internal
 */

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import type { Address } from '@ron/core'

/** The head record's file name in a log directory. */
export const HEAD_FILE = 'head.bin'
/** Bytes per slot (one disk sector: a slot is never split across two). */
export const SLOT_BYTES = 512
/** Bytes of the head file. */
export const HEAD_FILE_BYTES = 2 * SLOT_BYTES
const RECORD_BYTES = 92
const MAGIC = 0x524f4e48 // "RONH"
const LAYOUT = 1

/** What the head record says. */
export interface HeadRecord {
  /** Write sequence number (the higher valid slot wins). */
  seq: number
  /** The last acknowledged version. */
  version: number
  /** Its entry hash (`b3:`), or the genesis hash at version 0. */
  hash: Address
  /** Lowest version held. */
  oldest: number
  /** Signed checkpoints stored. */
  checkpoints: number
  /** Bytes of `checkpoints.jsonl` they occupy. */
  checkpointBytes: number
  /** Leaf hashes at the start of `leaves.bin` known durable (the rest is rebuilt from the segments). */
  leaves: number
}

/**
 * Writes `n` (a non-negative safe integer) at `off` as a u64 BE: the same bytes as
 * `writeBigUInt64BE(BigInt(n))`, as two u32 writes (no BigInt per field: a commit writes six).
 */
function writeU64(b: Buffer, n: number, off: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`head record field must be a non-negative safe integer, got ${n}`)
  b.writeUInt32BE(Math.floor(n / 0x1_0000_0000), off)
  b.writeUInt32BE(n >>> 0, off + 4)
}

/** The 92 bytes of one slot. */
export function encodeHeadRecord(r: HeadRecord): Buffer {
  if (!r.hash.startsWith('b3:') || r.hash.length !== 67) throw new Error(`head record hash must be a b3: address, got ${r.hash}`)
  const b = Buffer.allocUnsafe(RECORD_BYTES)
  b.writeUInt32BE(MAGIC, 0)
  b.writeUInt32BE(LAYOUT, 4)
  writeU64(b, r.seq, 8)
  writeU64(b, r.version, 16)
  if (b.write(r.hash.slice(3), 24, 32, 'hex') !== 32) throw new Error(`head record hash must be a b3: address, got ${r.hash}`)
  writeU64(b, r.oldest, 56)
  writeU64(b, r.checkpoints, 64)
  writeU64(b, r.checkpointBytes, 72)
  writeU64(b, r.leaves, 80)
  b.writeUInt32BE(crc32(b.subarray(0, 88)), 88)
  return b
}

/** Decodes one slot; `undefined` when it is empty, torn or not a head record. */
export function decodeHeadSlot(slot: Buffer): HeadRecord | undefined {
  if (slot.length < RECORD_BYTES || slot.readUInt32BE(0) !== MAGIC || slot.readUInt32BE(4) !== LAYOUT) return undefined
  if (crc32(slot.subarray(0, 88)) !== slot.readUInt32BE(88)) return undefined
  const n = (off: number): number => Number(slot.readBigUInt64BE(off))
  return {
    seq: n(8),
    version: n(16),
    hash: `b3:${slot.subarray(24, 56).toString('hex')}`,
    oldest: n(56),
    checkpoints: n(64),
    checkpointBytes: n(72),
    leaves: n(80),
  }
}

/** The record of a whole head file: the valid slot with the higher seq, or `undefined` when neither is valid. */
export function decodeHeadFile(file: Buffer): HeadRecord | undefined {
  const a = decodeHeadSlot(file.subarray(0, SLOT_BYTES))
  const b = decodeHeadSlot(file.subarray(SLOT_BYTES, HEAD_FILE_BYTES))
  if (a === undefined) return b
  if (b === undefined) return a
  return a.seq >= b.seq ? a : b
}

/** A fresh head file holding `r` in its slot. */
export function headFileBytes(r: HeadRecord): Buffer {
  const file = Buffer.alloc(HEAD_FILE_BYTES)
  encodeHeadRecord(r).copy(file, slotOffset(r.seq))
  return file
}

/** Byte offset of the slot that record number `seq` is written to. */
export function slotOffset(seq: number): number {
  return (seq % 2) * SLOT_BYTES
}

/**
 * Reads `<dir>/head.bin`: `missing` when there is no file, `record` undefined when the file holds
 * no valid slot.
 */
export async function readHeadFile(dir: string): Promise<{ missing: boolean; record: HeadRecord | undefined; bytes: Buffer }> {
  let bytes: Buffer
  try {
    bytes = await readFile(join(dir, HEAD_FILE))
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT') return { missing: true, record: undefined, bytes: Buffer.alloc(0) }
    throw e
  }
  return { missing: false, record: decodeHeadFile(bytes), bytes }
}
