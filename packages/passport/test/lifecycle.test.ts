import { describe, expect, it } from 'vitest'
import { isRonError, noopLogger } from '@ron/core'
import { createMemoryKeystore, type Kms } from '../src/index.js'
import { setup } from './helpers.js'

const metric = (text: string, name: string, label: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label))
  return line === undefined ? NaN : Number(line.split(' ').at(-1))
}

describe('revoke queue', () => {
  it('a full revoke queue refuses at once with Busy (429), counted in queue_dropped_total{queue="revoke"}; accepted ones all apply', async () => {
    const { passport, client, close } = await setup({ revokeQueue: 1 })
    try {
      const tokens = await Promise.all([0, 1, 2, 3].map((i) => client.issue({ sub: `t${i}`, aud: ['storage'], scope: ['storage:read'] })))
      // Sent in one turn: one worker, one slot → at most two are taken, the others are refused without waiting.
      const results = await Promise.allSettled(tokens.map((t) => passport.revoke(t.jti)))
      const busy = results.filter((r) => r.status === 'rejected' && isRonError(r.reason, 'Busy'))
      const ok = results.filter((r) => r.status === 'fulfilled')
      expect(busy.length + ok.length).toBe(4)
      expect(busy.length).toBeGreaterThanOrEqual(2)
      expect((busy[0] as PromiseRejectedResult).reason).toMatchObject({ status: 429 })
      expect(metric(await passport.metricsText(), 'queue_dropped_total', 'queue="revoke"')).toBe(busy.length)
      results.forEach((r, i) => expect(passport.revocations.isRevoked(tokens[i]!.jti)).toBe(r.status === 'fulfilled'))
    } finally {
      await close()
    }
  })
})

describe('shutdown', () => {
  it('close() turns issuance unready and refuses new work with 503; a second close() is harmless', async () => {
    const { passport, client, close } = await setup()
    try {
      await passport.close()
      expect(passport.health()).toMatchObject({ ready: false })
      await expect(client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:read'] })).rejects.toMatchObject({ status: 503 })
      await expect(passport.close()).resolves.toBeUndefined()
    } finally {
      await close()
    }
  })
})

describe('runtime objects in the config', () => {
  it('a host-supplied KMS with mutable state, and the logger, are not frozen into the config snapshot', async () => {
    const inner = createMemoryKeystore()
    // A plugged-in KMS as a class with a public field it updates on every call (an HSM session, a counter…).
    class CountingKms implements Kms {
      signs = 0
      generate: Kms['generate'] = (epoch, s) => inner.generate(epoch, s)
      import: Kms['import'] = (key, s) => inner.import(key, s)
      list: Kms['list'] = (s) => inner.list(s)
      destroy: Kms['destroy'] = (kid, s) => inner.destroy(kid, s)
      sign: Kms['sign'] = (kid, data, s) => {
        this.signs++
        return inner.sign(kid, data, s)
      }
    }
    const kms = new CountingKms()
    const logger = { ...noopLogger, child: () => logger }
    const { client, close } = await setup({ keystore: kms, logger })
    try {
      expect(Object.isFrozen(kms)).toBe(false)
      expect(Object.isFrozen(logger)).toBe(false)
      const before = kms.signs
      await client.issue({ sub: 'x', aud: ['storage'], scope: ['storage:read'] })
      expect(kms.signs).toBe(before + 1)
    } finally {
      await close()
    }
  })

  it('reload() refuses runtime objects (they are not config: unknown keys, never frozen into the snapshot)', async () => {
    const { passport, close } = await setup()
    try {
      for (const key of ['logger', 'clock', 'random', 'keystore', 'cluster']) {
        const obj = { ...noopLogger }
        await expect(passport.reload({ [key]: obj }), key).rejects.toMatchObject({ code: 'Malformed', message: expect.stringContaining(key) as string })
        expect(Object.isFrozen(obj), key).toBe(false)
      }
    } finally {
      await close()
    }
  })
})

