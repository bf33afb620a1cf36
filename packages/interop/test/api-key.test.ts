import * as crypto from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { hashApiKey } from '../src/index.js'
import { API_KEY, system, type System } from './helpers.js'

// Spy on node:crypto's constant-time compare, keeping the real implementation.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>()
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) }
})

let sys: System | undefined
afterEach(async () => {
  await sys?.close()
  sys = undefined
})

describe('API keys', () => {
  it('are matched by comparing the key hash in constant time with every configured hash, never by a lookup that exits early', async () => {
    const keys = ['ronk_zzz_first_client_key_000000', API_KEY, 'ronk_zzz_third_client_key_00000']
    sys = await system({ apiKeys: keys.map((k, i) => ({ client: `c${i}`, keyHash: hashApiKey(k) })) })
    const tse = vi.mocked(crypto.timingSafeEqual)
    for (const key of [API_KEY, 'ronk_unknown_key']) {
      tse.mockClear()
      const res = await sys.request('POST', '/put', { 'x-api-key': key }, 'x')
      expect(res.status).toBe(key === API_KEY ? 201 : 401)
      // One 32-byte comparison per configured key, whichever key matched (or none).
      const keyCompares = tse.mock.calls.filter(([a, b]) => (a as Uint8Array).byteLength === 32 && (b as Uint8Array).byteLength === 32)
      expect(keyCompares.length).toBeGreaterThanOrEqual(keys.length)
    }
  })
})
