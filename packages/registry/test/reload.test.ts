import { afterEach, describe, expect, it } from 'vitest'
import { harness, payload, type Harness } from './helpers.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

describe('cfg_reload (16, latest wins)', () => {
  it('a burst of reloads beyond the queue is never refused: the late ones merge and the latest value wins', async () => {
    h = await harness()
    const x = h
    const burst = Array.from({ length: 40 }, (_, i) => x.svc.reload({ proposalTtlMs: 1000 + i }))
    const results = await Promise.allSettled(burst)
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    const p = await x.client.propose(payload(1))
    expect(p.expiresAt).toBe(x.clock.now() + 1039)
  })

  it('an invalid reload merged into the burst fails only its own caller; the latest valid values still win', async () => {
    h = await harness()
    const x = h
    const burst = Array.from({ length: 30 }, (_, i) => x.svc.reload({ proposalTtlMs: 1000 + i }))
    const bad = x.svc.reload({ maxProposals: -1 })
    const after = x.svc.reload({ proposalTtlMs: 4242 })
    const results = await Promise.allSettled(burst)
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    await expect(bad).rejects.toMatchObject({ code: 'Malformed' })
    await expect(after).resolves.toBeUndefined()
    const p = await x.client.propose(payload(1))
    expect(p.expiresAt).toBe(x.clock.now() + 4242)
  })
})

