/**
 * The chunk table builder hashes an object of at most one chunk once when its input is handed
 * over (`keepsInput`): the address is then that chunk's hash. Counts the hashers it creates and
 * checks the table is the same as the two-pass one.
 */
import { addressOf, createBlake3 } from '@ron/core'
import { describe, expect, it } from 'vitest'
import { ChunkTableBuilder } from '../../src/store/integrity.js'
import { bytes, rng } from './helpers.js'

function build(data: Uint8Array, chunkSize: number, seed: number, keepsInput: boolean): { encoded: Buffer; address: string; hashers: number } {
  let hashers = 0
  const b = new ChunkTableBuilder(chunkSize, keepsInput, () => {
    hashers++
    return createBlake3()
  })
  const r = rng(seed)
  for (let off = 0; off < data.length; ) {
    const n = Math.min(r(1, 2 * chunkSize), data.length - off)
    b.update(data.subarray(off, off + n))
    off += n
  }
  const t = b.finish()
  return { encoded: Buffer.from(t.encode()), address: t.address, hashers }
}

describe('chunk table builder on handed-over input', () => {
  it('builds the same table as the two-pass builder for every size around the first chunk, whatever the pieces', () => {
    const cs = 100
    for (const n of [0, 1, cs - 1, cs, cs + 1, 2 * cs, 3 * cs + 5]) {
      const data = bytes(n, n + 1)
      for (const seed of [1, 2, 3]) {
        const two = build(data, cs, seed, false)
        const one = build(data, cs, seed, true)
        expect(one.address, `${n} bytes`).toBe(addressOf(data))
        expect(one.encoded.equals(two.encoded), `${n} bytes`).toBe(true)
      }
    }
    // A first piece that fills the first chunk exactly, then more: the address starts over from byte 0.
    const data = bytes(250, 9)
    const b = new ChunkTableBuilder(100, true)
    b.update(data.subarray(0, 100))
    b.update(data.subarray(100))
    expect(b.finish().address).toBe(addressOf(data))
  })

  it('hashes an object of at most one chunk with one hasher, a larger one with two', () => {
    expect(build(bytes(100, 1), 100, 1, true).hashers).toBe(1)
    expect(build(bytes(60, 2), 100, 1, true).hashers).toBe(1)
    expect(build(bytes(101, 3), 100, 1, true).hashers).toBe(2)
    expect(build(bytes(60, 2), 100, 1, false).hashers).toBe(2) // input that may change: both from the start
  })

  it('addresses socket-sized pieces that fall anywhere the same as one piece, around every alignment and chunk edge', () => {
    // The hashers are fed in 16 KiB-aligned runs (the ragged ends of pieces wait in a carry
    // buffer that is reused): the table must not depend on where the pieces fall.
    const cs = 64 * 1024
    for (const n of [1, 16383, 16384, 16385, 40_000, 65535, 65536, 65537, 70 * 1024, 300_001]) {
      const data = bytes(n, n)
      const one = new ChunkTableBuilder(cs)
      one.update(data)
      const want = Buffer.from(one.finish().encode())
      for (const [seed, keepsInput] of [[1, true], [2, false], [3, true]] as const) {
        const b = new ChunkTableBuilder(cs, keepsInput)
        const r = rng(seed)
        for (let off = 0; off < data.length; ) {
          const len = Math.min(seed === 3 ? 10 * 1024 : r(1, 40 * 1024), data.length - off)
          b.update(data.subarray(off, off + len))
          off += len
        }
        const t = b.finish()
        expect(t.address, `${n} bytes, seed ${seed}`).toBe(addressOf(data))
        expect(Buffer.from(t.encode()).equals(want), `${n} bytes, seed ${seed}`).toBe(true)
      }
    }
  })
})
