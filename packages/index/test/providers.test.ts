import { describe, expect, it } from 'vitest'
import { BusyError } from '@ron/core'
import { MAX_PROVIDERS_PER_ADDRESS, ProviderTable } from '../src/providers.js'
import { addr } from './helpers.js'

describe('provider table bounds', () => {
  it('one address holds at most MAX_PROVIDERS_PER_ADDRESS live providers; refreshes still pass and expired records make room', () => {
    const t = new ProviderTable(1_000_000)
    const a = addr('popular')
    for (let i = 0; i < MAX_PROVIDERS_PER_ADDRESS; i++) t.announce(a, `n${i}`, `http://n${i}`, i === 0 ? 2_000 : 10_000, 1_000)
    expect(() => t.announce(a, 'one-more', 'http://x', 10_000, 1_000)).toThrow(BusyError)
    expect(() => t.announce(a, 'one-more', 'http://x', 10_000, 1_000)).toThrow(expect.objectContaining({ details: expect.objectContaining({ reason: 'provider_set_full' }) }))
    // A known node refreshes its record; another address is not affected.
    expect(t.announce(a, 'n5', 'http://n5', 20_000, 1_000)).toBe(false)
    expect(t.announce(addr('other'), 'one-more', 'http://x', 10_000, 1_000)).toBe(true)
    // Once n0 has expired, its slot is reused.
    expect(t.announce(a, 'one-more', 'http://x', 10_000, 2_000)).toBe(true)
    expect(t.lookup(a, 2_000)).toHaveLength(MAX_PROVIDERS_PER_ADDRESS)
    expect(t.size).toBe(MAX_PROVIDERS_PER_ADDRESS + 1)
  })
})
