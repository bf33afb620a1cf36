import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'

const { cases } = JSON.parse(readFileSync(new URL('../vectors/blake3.json', import.meta.url), 'utf8')) as { cases: { input_len: number; hash: string }[] }

describe('blake3 backend fallback', () => {
  afterEach(() => {
    vi.unstubAllEnvs()
    vi.resetModules()
  })

  it('falls back to @noble/hashes when the native backend is not used, with identical results', async () => {
    vi.stubEnv('RON_BLAKE3_BACKEND', 'noble')
    vi.resetModules()
    const mod = { ...(await import('../../src/hash/blake3.js')), ...(await import('../../src/hash/index.js')) }
    expect(mod.blake3Backend).toBe('noble')
    expect(mod.blake3Backends.native).toBeUndefined()
    for (const c of cases.filter((x) => x.input_len <= 8193)) {
      const input = Uint8Array.from({ length: c.input_len }, (_, i) => i % 251)
      expect(Buffer.from(mod.blake3(input)).toString('hex')).toBe(c.hash)
      const h = mod.createBlake3()
      h.update(input.subarray(0, 100)).update(input.subarray(100))
      expect(Buffer.from(h.digest()).toString('hex')).toBe(c.hash)
    }
  })

  it('picks the backend on the first hash, not at import (a client that never hashes never loads the binding)', async () => {
    vi.resetModules()
    const mod = await import('../../src/hash/blake3.js')
    // Chosen after the import: a backend picked at import time would ignore this.
    vi.stubEnv('RON_BLAKE3_BACKEND', 'noble')
    expect(Buffer.from(mod.blake3(new Uint8Array(0))).toString('hex')).toBe(cases.find((c) => c.input_len === 0)!.hash)
    expect(mod.loadBlake3Backend()).toBe('noble')
    // And the main entry still decides at import, as before.
    vi.unstubAllEnvs()
    vi.resetModules()
    const index = await import('../../src/hash/index.js')
    vi.stubEnv('RON_BLAKE3_BACKEND', 'noble')
    const viaNative = (await import('../../src/hash/blake3.js')).blake3Backends.native !== undefined
    expect(index.blake3Backend).toBe(viaNative ? 'native' : 'noble')
  })
})
