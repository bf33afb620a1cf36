import { describe, expect, it } from 'vitest'
import {
  createTokenProvider,
  generateIssuerKey,
  isRonError,
  localMinter,
  resolveToken,
  signClientAssertion,
  staticKeySource,
  createTokenVerifier,
  type TokenMinter,
} from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { decodeJwt, importJWK, jwtVerify } from 'jose'

const T0 = 1_700_000_000_000

function countingMinter(inner: TokenMinter): TokenMinter & { calls: number } {
  const m = {
    calls: 0,
    mint: (req: Parameters<TokenMinter['mint']>[0], signal?: AbortSignal) => {
      m.calls++
      return inner.mint(req, signal)
    },
  }
  return m
}

describe('token provider', () => {
  it('localMinter makes tokens the core verifier accepts for the audience and scope', async () => {
    const clock = new VirtualClock(T0)
    const key = generateIssuerKey()
    const provider = createTokenProvider({ minter: localMinter(key, { iss: 'passport', sub: 'node:n1', clock }), clock })
    const token = await provider.token({ aud: 'index', scope: ['index:announce'] })
    const verifier = createTokenVerifier({ keys: staticKeySource({ keys: [key.publicJwk] }), clock })
    const claims = await verifier.verify(token, { audience: 'index', scope: 'index:announce' })
    expect(claims.sub).toBe('node:n1')
    expect(claims.exp - claims.iat).toBe(600)
    provider.close()
  })

  it('serves the cached token until two thirds of its life, then renews it', async () => {
    const clock = new VirtualClock(T0)
    const minter = countingMinter(localMinter(generateIssuerKey(), { iss: 'p', sub: 'node:n1', clock }))
    const provider = createTokenProvider({ minter, ttlSec: 600, clock })
    const first = await provider.token({ aud: 'index', scope: ['index:announce'] })
    await clock.advance(399_000)
    expect(await provider.token({ aud: 'index', scope: ['index:announce'] })).toBe(first)
    expect(minter.calls).toBe(1)
    await clock.advance(1_000)
    const second = await provider.token({ aud: 'index', scope: ['index:announce'] })
    expect(second).not.toBe(first)
    expect(minter.calls).toBe(2)
    provider.close()
  })

  it('caches per audience and scope set (scope order does not matter); concurrent callers share one mint', async () => {
    const clock = new VirtualClock(T0)
    const minter = countingMinter(localMinter(generateIssuerKey(), { iss: 'p', sub: 'node:n1', clock }))
    const provider = createTokenProvider({ minter, clock })
    const [a, b] = await Promise.all([
      provider.token({ aud: 'storage', scope: ['storage:write', 'storage:read'] }),
      provider.token({ aud: 'storage', scope: ['storage:read', 'storage:write'] }),
    ])
    expect(a).toBe(b)
    await provider.token({ aud: 'index', scope: ['storage:read', 'storage:write'] })
    expect(minter.calls).toBe(2)
    provider.close()
  })

  it('keeps serving a still-valid token when renewal fails, and fails once none is valid', async () => {
    const clock = new VirtualClock(T0)
    const good = localMinter(generateIssuerKey(), { iss: 'p', sub: 'node:n1', clock })
    let fail = false
    const minter: TokenMinter = { mint: (r, s) => (fail ? Promise.reject(new Error('passport down')) : good.mint(r, s)) }
    const provider = createTokenProvider({ minter, ttlSec: 60, clock })
    const t = await provider.token({ aud: 'x', scope: ['a'] })
    fail = true
    await clock.advance(45_000)
    expect(await provider.token({ aud: 'x', scope: ['a'] })).toBe(t)
    await clock.advance(14_000)
    await expect(provider.token({ aud: 'x', scope: ['a'] })).rejects.toThrow('passport down')
    provider.close()
  })

  it('rejects with Closed after close() and with the signal reason when aborted', async () => {
    const provider = createTokenProvider({ minter: { mint: () => new Promise<string>(() => {}) } })
    const ac = new AbortController()
    const p = provider.token({ aud: 'x', scope: [] }, ac.signal)
    ac.abort()
    await expect(p).rejects.toSatisfy((e) => isRonError(e, 'Canceled'))
    provider.close()
    provider.close()
    await expect(provider.token({ aud: 'x', scope: [] })).rejects.toSatisfy((e) => isRonError(e, 'Closed'))
  })

  it('refuses a ttl that is not a positive integer with RON_INVALID_OPTION', () => {
    expect(() => createTokenProvider({ minter: { mint: () => Promise.resolve('') }, ttlSec: 0 })).toThrow(
      expect.objectContaining({ code: 'RON_INVALID_OPTION' }),
    )
  })
})

describe('signClientAssertion', () => {
  it('is a one-minute EdDSA JWT with iss = sub = node:<id>, verifiable by jose', async () => {
    const clock = new VirtualClock(T0)
    const key = generateIssuerKey({ epoch: 3 })
    const jwt = signClientAssertion(key, { nodeId: 'n1', audience: 'passport', clock })
    const claims = decodeJwt(jwt)
    expect(claims).toMatchObject({ iss: 'node:n1', sub: 'node:n1', aud: 'passport', iat: T0 / 1000, exp: T0 / 1000 + 60 })
    expect(typeof claims.jti).toBe('string')
    const pub = await importJWK({ ...key.publicJwk }, 'EdDSA')
    const { protectedHeader } = await jwtVerify(jwt, pub, { audience: 'passport', currentDate: new Date(T0) })
    expect(protectedHeader).toMatchObject({ alg: 'EdDSA', kid: key.kid })
  })

  it('refuses an empty node id or audience with Malformed', () => {
    const key = generateIssuerKey()
    expect(() => signClientAssertion(key, { nodeId: '', audience: 'p' })).toThrow(expect.objectContaining({ code: 'Malformed' }))
    expect(() => signClientAssertion(key, { nodeId: 'n', audience: '' })).toThrow(expect.objectContaining({ code: 'Malformed' }))
  })
})

describe('resolveToken', () => {
  it('takes a string, a function, an async function or nothing', async () => {
    expect(await resolveToken('t')).toBe('t')
    expect(await resolveToken(() => 'f')).toBe('f')
    expect(await resolveToken(() => Promise.resolve('a'))).toBe('a')
    expect(await resolveToken(undefined)).toBeUndefined()
  })
})
