import { describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import { CapabilityCache, tokenLifeMs, type Capability } from '../src/capabilities.js'

function issuer(): { issue: () => Promise<Capability>; count: () => number; fail: (on: boolean) => void; life: (ms: number | undefined) => void } {
  let n = 0
  let failing = false
  let lifeMs: number | undefined
  return {
    issue: () => {
      n++
      return failing ? Promise.reject(new Error('passport down')) : Promise.resolve({ token: `t${n}`, jti: `j${n}`, lifeMs })
    },
    count: () => n,
    fail: (on) => (failing = on),
    life: (ms) => (lifeMs = ms),
  }
}

describe('CapabilityCache', () => {
  it('hands one capability out until two thirds of its life, per key', async () => {
    const clock = new VirtualClock(0)
    const c = new CapabilityCache({ clock })
    const i = issuer()
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t1')
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t1')
    expect((await c.get('b', 60_000, i.issue)).token).toBe('t2') // another client or limit
    await clock.advance(39_999)
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t1')
    await clock.advance(1)
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t3')
  })

  it("the token's own life (exp − iat) shortens the reuse when it is shorter than the asked one", async () => {
    const clock = new VirtualClock(0)
    const c = new CapabilityCache({ clock })
    const i = issuer()
    i.life(30_000) // 30 s instead of 60: renewal at 20 s
    await c.get('a', 60_000, i.issue)
    await clock.advance(19_000)
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t1')
    await clock.advance(1_000)
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t2')
  })

  it('concurrent callers share one issuance; a failed issuance is not kept', async () => {
    const clock = new VirtualClock(0)
    const c = new CapabilityCache({ clock })
    const i = issuer()
    const all = await Promise.all([c.get('a', 60_000, i.issue), c.get('a', 60_000, i.issue), c.get('a', 60_000, i.issue)])
    expect(all.map((x) => x.token)).toEqual(['t1', 't1', 't1'])
    expect(i.count()).toBe(1)
    i.fail(true)
    await expect(c.get('z', 60_000, i.issue)).rejects.toThrow(/passport down/)
    i.fail(false)
    expect((await c.get('z', 60_000, i.issue)).token).toBe('t3')
  })

  it('a caller whose signal aborts stops waiting; the issuance still serves the others', async () => {
    const clock = new VirtualClock(0)
    const c = new CapabilityCache({ clock })
    let resolve!: (v: Capability) => void
    const issue = (): Promise<Capability> => new Promise((r) => (resolve = r))
    const ac = new AbortController()
    const first = c.get('a', 60_000, issue, ac.signal)
    const second = c.get('a', 60_000, issue)
    ac.abort(new Error('client gone'))
    await expect(first).rejects.toThrow(/client gone/)
    resolve({ token: 't', jti: 'j' })
    expect((await second).token).toBe('t')
  })

  it('tokenLifeMs reads exp − iat from a compact JWT, undefined otherwise', () => {
    const jwt = (p: unknown): string => `h.${Buffer.from(JSON.stringify(p)).toString('base64url')}.s`
    expect(tokenLifeMs(jwt({ iat: 100, exp: 160 }))).toBe(60_000)
    expect(tokenLifeMs(jwt({ exp: 160 }))).toBeUndefined()
    expect(tokenLifeMs(jwt({ iat: 160, exp: 100 }))).toBeUndefined()
    expect(tokenLifeMs('opaque')).toBeUndefined()
    expect(tokenLifeMs('a.!!!.c')).toBeUndefined()
  })

  it('invalidate drops only the refused token; clear drops all; the cache is bounded', async () => {
    const clock = new VirtualClock(0)
    const c = new CapabilityCache({ clock, maxEntries: 2 })
    const i = issuer()
    await c.get('a', 60_000, i.issue)
    c.invalidate('a', 'not-this-one')
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t1')
    c.invalidate('a', 't1')
    expect((await c.get('a', 60_000, i.issue)).token).toBe('t2')
    await c.get('b', 60_000, i.issue)
    await c.get('c', 60_000, i.issue)
    expect(c.size).toBe(2)
    c.clear()
    expect(c.size).toBe(0)
  })
})
