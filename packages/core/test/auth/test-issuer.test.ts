import { describe, expect, it } from 'vitest'
import { createTestIssuer } from '../../src/testing/test-issuer.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'
import { rejection } from './helpers.js'

describe('createTestIssuer', () => {
  it('mints tokens for every service by default that its verifier accepts', async () => {
    const issuer = createTestIssuer()
    const t = issuer.mint({ scope: 'storage:write' })
    const claims = await issuer.verifier().verify(t, { audience: 'registry', scope: 'storage:write' })
    expect(claims.sub).toBe('test')
    expect(claims.aud).toEqual(['storage', 'registry', 'passport', 'index', 'interop'])
    expect(claims.exp - claims.iat).toBe(3600)
    expect(issuer.jwks.keys[0]?.kid).toBe(issuer.key.kid)
    expect(await issuer.keys.getKey(issuer.key.kid)).toBeDefined()
  })

  it('honours aud, kid and the clock', async () => {
    const clock = new VirtualClock(1_800_000_000_000)
    const issuer = createTestIssuer({ clock, kid: 'test#1' })
    expect(issuer.key.kid).toBe('test#1')
    const t = issuer.mint({ scope: ['a'], aud: 'index', ttlSec: 10 })
    const v = issuer.verifier({ clockToleranceSec: 0 })
    await expect(v.verify(t, { audience: 'index' })).resolves.toBeDefined()
    expect((await rejection(v.verify(t, { audience: 'storage' }))).details['reason']).toBe('wrong_audience')
    await clock.advance(10_001)
    expect((await rejection(v.verify(t, { audience: 'index' }))).details['reason']).toBe('expired')
  })
})
