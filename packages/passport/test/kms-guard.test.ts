import { describe, expect, it } from 'vitest'
import { NotFoundError, noopMetrics } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createMemoryKeystore } from '../src/index.js'
import { KmsGuard } from '../src/kms-guard.js'

describe('KmsGuard health', () => {
  it('an unknown kid (NotFound) is the caller’s problem: it passes through and does not mark the KMS unhealthy', async () => {
    const health: Array<[boolean, string | undefined]> = []
    const kms = createMemoryKeystore()
    const guard = new KmsGuard({ kms, timeoutMs: 3000, clock: new VirtualClock(0), metrics: noopMetrics, onHealth: (ok, reason) => health.push([ok, reason]) })
    await expect(guard.call('sign', (s) => kms.sign('no-such-kid', new Uint8Array(1), s))).rejects.toBeInstanceOf(NotFoundError)
    expect(health.filter(([ok]) => !ok)).toEqual([])
  })

  it('does not call the KMS for a caller that already gave up', async () => {
    let calls = 0
    const guard = new KmsGuard({ kms: createMemoryKeystore(), timeoutMs: 3000, clock: new VirtualClock(0), metrics: noopMetrics })
    const ac = new AbortController()
    ac.abort(new Error('gone'))
    await expect(guard.call('sign', () => (calls++, Promise.resolve(new Uint8Array(64))), ac.signal)).rejects.toThrow('gone')
    expect(calls).toBe(0)
  })
})
