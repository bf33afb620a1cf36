import { describe, expect, it } from 'vitest'
import { collectBytes } from '@ron/core'

async function* from(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield p
}

describe('collectBytes', () => {
  it('concatenates chunks in order', async () => {
    const out = await collectBytes(from(Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(3)))
    expect(out).toEqual(Uint8Array.of(1, 2, 3))
  })

  it('returns an empty array for an empty stream', async () => {
    expect(await collectBytes(from())).toEqual(new Uint8Array(0))
  })

  it('returns a plain Uint8Array view (not a copy, not a Buffer) of a single chunk', async () => {
    const buf = Buffer.from([9, 8, 7])
    const out = await collectBytes(from(buf))
    expect(out.constructor).toBe(Uint8Array)
    expect(out).toEqual(Uint8Array.of(9, 8, 7))
    buf[0] = 1
    expect(out[0]).toBe(1)
  })
})
