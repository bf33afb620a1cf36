import { describe, expect, it, vi } from 'vitest'
import { RevocationSet, createTokenVerifier, generateIssuerKey, signToken, staticKeySource, type KeySource, type TokenClaimsInput } from '../../src/auth/index.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'
import { craft, rejection } from './helpers.js'

const T0 = 1_800_000_000
const base: TokenClaimsInput = { sub: 'alice', aud: ['storage'], scope: 'storage:write storage:read', ttlSec: 600, jti: 'j-1' }
const need = { audience: 'storage', scope: 'storage:write' }

function setup(maxEntries = 100) {
  const clock = new VirtualClock(T0 * 1000)
  const key = generateIssuerKey({ epoch: 1 })
  let current: KeySource = staticKeySource([key])
  const getKey = vi.fn<KeySource['getKey']>((kid, s) => current.getKey(kid, s))
  const revocations = new RevocationSet({ clock })
  const verifier = createTokenVerifier({ keys: { getKey }, revocations, clock, cache: { maxEntries } })
  const mint = (c: Partial<TokenClaimsInput> = {}): string => signToken(key, { ...base, ...c }, { clock })
  return { clock, key, verifier, revocations, mint, getKey, setKeys: (k: KeySource) => (current = k) }
}

async function reason(p: Promise<unknown>): Promise<[string, unknown]> {
  const e = await rejection(p)
  return [e.code, e.details['reason']]
}

describe('verifier cache', () => {
  it('answers a repeated token from the cache with the same claims', async () => {
    const { verifier, mint } = setup()
    const t = mint()
    const first = await verifier.verify(t, need)
    const second = await verifier.verify(t, need)
    expect(second).toEqual(first)
    expect(verifier.cacheHits).toBe(1)
    expect(verifier.cacheSize).toBe(1)
  })

  it('still checks revocation on every use', async () => {
    const { verifier, mint, revocations } = setup()
    const t = mint({ jti: 'r' })
    await verifier.verify(t, need)
    revocations.add('r', T0 + 600)
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'revoked'])
  })

  it('still checks expiry on every use', async () => {
    const { verifier, mint, clock } = setup()
    const t = mint({ ttlSec: 60 })
    await verifier.verify(t, need)
    await clock.advanceTo((T0 + 91) * 1000)
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'expired'])
  })

  it('still checks not-before, audience, scope and the caveat hook on every use', async () => {
    const { verifier, mint } = setup()
    const t = mint({ nbf: T0 + 100 })
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'not_yet_valid'])
    const u = mint()
    await verifier.verify(u, need)
    expect(await reason(verifier.verify(u, { audience: 'registry' }))).toEqual(['Unauthorized', 'wrong_audience'])
    expect(await reason(verifier.verify(u, { audience: 'storage', scope: 'storage:admin' }))).toEqual(['Forbidden', 'missing_scope'])
  })

  it('refuses a cached token once its key is retired (kid no longer resolves)', async () => {
    const { verifier, mint, setKeys } = setup()
    const t = mint()
    await verifier.verify(t, need)
    setKeys(staticKeySource([]))
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'unknown_kid'])
    expect(verifier.cacheSize).toBe(0)
  })

  it('verifies from scratch when the kid names other key material', async () => {
    const { verifier, mint, setKeys, key } = setup()
    const t = mint()
    await verifier.verify(t, need)
    setKeys(staticKeySource([generateIssuerKey({ kid: key.kid })]))
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'bad_signature'])
  })

  it('is bounded: the least recently used token is evicted', async () => {
    const { verifier, mint } = setup(2)
    const [a, b, c] = [mint({ jti: 'a' }), mint({ jti: 'b' }), mint({ jti: 'c' })]
    await verifier.verify(a, need)
    await verifier.verify(b, need)
    await verifier.verify(a, need) // a is now the most recent
    await verifier.verify(c, need) // evicts b
    expect(verifier.cacheSize).toBe(2)
    const hits = verifier.cacheHits
    await verifier.verify(a, need)
    expect(verifier.cacheHits).toBe(hits + 1)
    await verifier.verify(b, need)
    expect(verifier.cacheHits).toBe(hits + 1)
  })

  it('never caches a forged token, and cache: false turns caching off', async () => {
    const { verifier, key, clock } = setup()
    const forged = craft({ alg: 'EdDSA', kid: key.kid }, { iss: 'passport', sub: 'x', aud: ['storage'], scope: 'storage:write', iat: T0, exp: T0 + 60, jti: 'f' }, generateIssuerKey())
    expect(await reason(verifier.verify(forged, need))).toEqual(['Unauthorized', 'bad_signature'])
    expect(verifier.cacheSize).toBe(0)
    const off = createTokenVerifier({ keys: staticKeySource([key]), clock, cache: false })
    const t = signToken(key, base, { clock })
    await off.verify(t, need)
    await off.verify(t, need)
    expect(off.cacheHits).toBe(0)
  })
})

describe('caveats fail closed', () => {
  it('refuses a token with a caveat outside the catalog as unknown_caveat', async () => {
    const { verifier, mint } = setup()
    expect(await reason(verifier.verify(mint({ ron: { budget: 5 } }), need))).toEqual(['Unauthorized', 'unknown_caveat'])
    await expect(verifier.verify(mint({ ron: { maxBytes: 5, methods: ['PUT'], pathPrefix: '/o' } }), need)).resolves.toBeDefined()
  })

  it('accepts extra caveats a verifier is configured to know', async () => {
    const { key, clock } = setup()
    const v = createTokenVerifier({ keys: staticKeySource([key]), clock, knownCaveats: ['budget'] })
    await expect(v.verify(signToken(key, { ...base, ron: { budget: 5 } }, { clock }), need)).resolves.toBeDefined()
  })
})

describe('revocation staleness', () => {
  it('refuses write and admin scopes with 503 revocation_stale, keeps reads working', async () => {
    const clock = new VirtualClock(T0 * 1000)
    const key = generateIssuerKey()
    const set = new RevocationSet({ clock })
    let stale = true
    const v = createTokenVerifier({ keys: staticKeySource([key]), clock, revocations: { isRevoked: (j) => set.isRevoked(j), isStale: () => stale } })
    const t = signToken(key, base, { clock })
    expect(await reason(v.verify(t, need))).toEqual(['NotReady', 'revocation_stale'])
    expect(await reason(v.verify(t, { audience: 'storage', scope: 'storage:admin' }))).toEqual(['NotReady', 'revocation_stale'])
    await expect(v.verify(t, { audience: 'storage', scope: 'storage:read' })).resolves.toBeDefined()
    await expect(v.verify(t, { audience: 'storage' })).resolves.toBeDefined()
    // Cached tokens are gated too.
    expect(await reason(v.verify(t, need))).toEqual(['NotReady', 'revocation_stale'])
    expect(v.revocationsStale()).toBe(true)
    stale = false
    expect(v.revocationsStale()).toBe(false)
    await expect(v.verify(t, need)).resolves.toBeDefined()
  })

  it('anyAudience skips only the audience check', async () => {
    const { verifier, mint } = setup()
    await expect(verifier.verify(mint({ aud: ['index'] }), { audience: '', anyAudience: true })).resolves.toBeDefined()
  })
})
