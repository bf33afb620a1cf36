import { addressOf, blake3, isRonError } from '@ron/core'
import { describe, expect, it } from 'vitest'
import { ChunkTableBuilder, checkChunkSize, decodeTable } from '../../src/store/integrity.js'
import { bytes, rng } from './helpers.js'

function build(data: Uint8Array, chunkSize: number, seed: number): ReturnType<ChunkTableBuilder['finish']> {
  const b = new ChunkTableBuilder(chunkSize)
  const r = rng(seed)
  for (let off = 0; off < data.length; ) {
    const n = Math.min(r(1, 3 * chunkSize), data.length - off)
    b.update(data.subarray(off, off + n))
    off += n
  }
  return b.finish()
}

describe('chunk table', () => {
  it('records the BLAKE3 of every chunk and the address, whatever the input chunking', () => {
    const cs = 100
    const data = bytes(1050, 3)
    const a = build(data, cs, 1)
    const b = build(data, cs, 2)
    expect(a.address).toBe(addressOf(data))
    expect(a.count).toBe(11)
    expect(Buffer.from(a.encode()).equals(Buffer.from(b.encode()))).toBe(true)
    for (let i = 0; i < a.count; i++) {
      const chunk = data.subarray(i * cs, Math.min((i + 1) * cs, data.length))
      expect(a.chunkLength(i)).toBe(chunk.length)
      expect(a.verifyChunk(i, chunk)).toBe(true)
      const bad = chunk.slice()
      bad[0] = bad[0]! ^ 0x80
      expect(a.verifyChunk(i, bad)).toBe(false)
      expect(a.verifyChunk(i, chunk.subarray(1))).toBe(false) // short chunk
    }
    expect(a.verifyChunk(11, new Uint8Array())).toBe(false)
    // Digest of the last (short) chunk is the plain BLAKE3 of those bytes.
    expect(Buffer.from(blake3(data.subarray(1000))).equals(Buffer.from(a.encode().subarray(56 + 10 * 32, 56 + 11 * 32)))).toBe(true)
  })

  it('encodes an empty object as a table with no chunks', () => {
    const t = new ChunkTableBuilder(64).finish()
    expect(t.count).toBe(0)
    expect(t.encode().length).toBe(88)
    const back = decodeTable(t.encode(), { address: addressOf(new Uint8Array()), size: 0 })
    expect(typeof back).toBe('object')
  })

  it('decodes what it encodes, bound to the address and size', () => {
    const data = bytes(5000, 4)
    const t = build(data, 1024, 1)
    const enc = t.encode()
    const back = decodeTable(enc, { address: t.address, size: 5000 })
    expect(back).not.toBeTypeOf('string')
    if (typeof back === 'string') return
    expect([back.size, back.chunkSize, back.count]).toEqual([5000, 1024, 5])
    expect(back.verifyChunk(4, data.subarray(4096))).toBe(true)
  })

  it('rejects every single-bit flip, truncation and extension as corrupt', () => {
    const t = build(bytes(3000, 5), 1024, 1)
    const enc = t.encode()
    for (let off = 0; off < enc.length; off++) {
      const bad = enc.slice()
      bad[off] = bad[off]! ^ 0x04
      expect(decodeTable(bad, { address: t.address }), `offset ${off}`).toBe('table_corrupt')
    }
    expect(decodeTable(enc.subarray(0, enc.length - 1), { address: t.address })).toBe('table_corrupt')
    expect(decodeTable(new Uint8Array([...enc, 0]), { address: t.address })).toBe('table_corrupt')
    expect(decodeTable(new Uint8Array(0), { address: t.address })).toBe('table_corrupt')
  })

  it('rejects an intact table of another object or size as a mismatch', () => {
    const t = build(bytes(3000, 5), 1024, 1)
    expect(decodeTable(t.encode(), { address: addressOf(bytes(1)) })).toBe('table_mismatch')
    expect(decodeTable(t.encode(), { address: t.address, size: 2999 })).toBe('table_mismatch')
  })

  it('validates the chunk size option', () => {
    expect(checkChunkSize(65536)).toBe(65536)
    for (const bad of [0, 15, 1.5, 17 * 1024 * 1024, Number.NaN]) {
      let err: unknown
      try {
        checkChunkSize(bad)
      } catch (e) {
        err = e
      }
      expect(isRonError(err, 'Malformed'), String(bad)).toBe(true)
    }
  })
})
