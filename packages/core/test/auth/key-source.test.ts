import { describe, expect, it } from 'vitest'
import { createTokenVerifier, generateIssuerKey, signToken, staticKeySource, type Jwk } from '../../src/auth/index.js'
import { remoteKeySource } from '../../src/auth-remote/index.js'
import { isRonError, NotReadyError } from '../../src/errors.js'
import type { Transport, TransportRequest, TransportResponse } from '../../src/transport/types.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'
import { rejection } from './helpers.js'

function response(status: number, body: unknown): TransportResponse {
  const bytes = new TextEncoder().encode(JSON.stringify(body))
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: [bytes] as AsyncIterable<Uint8Array> & Uint8Array[],
    bytes: () => Promise.resolve(bytes),
    text: () => Promise.resolve(new TextDecoder().decode(bytes)),
    json: <T>() => Promise.resolve(JSON.parse(new TextDecoder().decode(bytes)) as T),
    dump: () => Promise.resolve(),
  }
}

/** A passport stand-in: serves `jwks`, counts requests, can fail or hold responses. */
class FakePassport implements Transport {
  jwks: { keys: Jwk[] } = { keys: [] }
  requests: { target: string; req: TransportRequest }[] = []
  fail: 'status' | 'throw' | undefined
  gate: Promise<void> | undefined
  request(target: string, req: TransportRequest): Promise<TransportResponse> {
    this.requests.push({ target, req })
    const snapshot = structuredClone(this.jwks)
    const fail = this.fail
    const answer = (): TransportResponse => {
      if (fail === 'throw') throw new NotReadyError('passport down')
      if (fail === 'status') return response(503, { error: { code: 'Draining', message: 'draining', retryable: true, corr_id: 'c', details: {} } })
      return response(200, snapshot)
    }
    return this.gate ? this.gate.then(answer) : Promise.resolve().then(answer)
  }
  close(): Promise<void> {
    return Promise.resolve()
  }
}

function setup(opts: { cooldownMs?: number; ttlMs?: number } = {}) {
  const clock = new VirtualClock(1_800_000_000_000)
  const passport = new FakePassport()
  const k1 = generateIssuerKey({ epoch: 1 })
  passport.jwks = { keys: [k1.publicJwk] }
  const keys = remoteKeySource({ transport: passport, clock, ...opts })
  return { clock, passport, k1, keys }
}

describe('remoteKeySource', () => {
  it('fetches the JWKS from passport on first use and then serves from cache', async () => {
    const { keys, passport, k1 } = setup()
    expect((await keys.getKey(k1.kid))?.equals(k1.publicKey)).toBe(true)
    expect(await keys.getKey(k1.kid)).toBeDefined()
    expect(passport.requests).toHaveLength(1)
    expect(passport.requests[0]).toMatchObject({ target: 'passport', req: { method: 'GET', path: '/v1/passport/keys' } })
    expect(keys.fetches).toBe(1)
  })

  it('refetches on an unknown kid at most once per cooldown, then finds a rotated key', async () => {
    const { keys, passport, clock, k1 } = setup({ cooldownMs: 30_000 })
    await keys.getKey(k1.kid)
    expect(keys.fetches).toBe(1)
    const k2 = generateIssuerKey({ epoch: 2 })
    expect(await keys.getKey(k2.kid)).toBeUndefined() // the set is 0 ms old: no refetch yet
    expect(keys.fetches).toBe(1)
    await clock.advance(30_000)
    expect(await keys.getKey(k2.kid)).toBeUndefined() // refetched once: still unknown
    expect(keys.fetches).toBe(2)
    passport.jwks = { keys: [k1.publicJwk, k2.publicJwk] }
    await clock.advance(29_999)
    expect(await keys.getKey(k2.kid)).toBeUndefined() // within cooldown: no fetch
    expect(await keys.getKey('garbage#9')).toBeUndefined()
    expect(keys.fetches).toBe(2)
    await clock.advance(1)
    expect((await keys.getKey(k2.kid))?.equals(k2.publicKey)).toBe(true)
    expect(keys.fetches).toBe(3)
    expect(await keys.getKey('garbage#9')).toBeUndefined() // a flood of bogus kids costs no fetches
    expect(keys.fetches).toBe(3)
  })

  it('concurrent misses share one fetch', async () => {
    const { keys, passport, k1 } = setup()
    let open!: () => void
    passport.gate = new Promise((r) => (open = r))
    const all = Promise.all(Array.from({ length: 20 }, () => keys.getKey(k1.kid)))
    open()
    const got = await all
    expect(got.every((k) => k?.equals(k1.publicKey))).toBe(true)
    expect(passport.requests).toHaveLength(1)
  })

  it('refreshes the set after ttlMs, dropping keys passport no longer lists', async () => {
    const { keys, passport, clock, k1 } = setup({ ttlMs: 300_000, cooldownMs: 30_000 })
    await keys.getKey(k1.kid)
    const k2 = generateIssuerKey({ epoch: 2 })
    passport.jwks = { keys: [k2.publicJwk] }
    await clock.advance(299_999)
    expect(await keys.getKey(k1.kid)).toBeDefined()
    expect(keys.fetches).toBe(1)
    await clock.advance(1)
    expect(await keys.getKey(k1.kid)).toBeUndefined()
    expect(keys.fetches).toBe(2)
    expect(await keys.getKey(k2.kid)).toBeDefined()
  })

  it('keeps serving cached keys when a refresh fails', async () => {
    const { keys, passport, clock, k1 } = setup({ ttlMs: 1000, cooldownMs: 500 })
    await keys.getKey(k1.kid)
    passport.fail = 'throw'
    await clock.advance(1000)
    expect((await keys.getKey(k1.kid))?.equals(k1.publicKey)).toBe(true)
    expect(keys.fetches).toBe(2)
    expect(await keys.getKey(k1.kid)).toBeDefined() // within cooldown after the failure: no new attempt
    expect(keys.fetches).toBe(2)
  })

  it('says NotReady (not unknown_kid) when the key set cannot be fetched at all', async () => {
    const { keys, passport, k1, clock } = setup({ cooldownMs: 1000 })
    passport.fail = 'status'
    const e = await rejection(keys.getKey(k1.kid))
    expect(isRonError(e)).toBe(true)
    expect(e.code).toBe('NotReady')
    expect((e as unknown as { cause: { code: string } }).cause.code).toBe('Draining') // passport's own answer kept as cause
    passport.fail = 'throw'
    const verifier = createTokenVerifier({ keys, clock })
    const t = signToken(k1, { sub: 's', aud: 'storage', scope: 'x', ttlSec: 60 }, { clock })
    expect((await rejection(verifier.verify(t, { audience: 'storage' }))).code).toBe('NotReady') // in cooldown: last error
    expect(keys.fetches).toBe(1)
    await clock.advance(1000)
    expect((await rejection(verifier.verify(t, { audience: 'storage' }))).code).toBe('NotReady')
    passport.fail = undefined
    await clock.advance(1000)
    await expect(verifier.verify(t, { audience: 'storage' })).resolves.toBeDefined()
  })

  it('rejects a non-JWKS answer as NotReady', async () => {
    const { keys, passport, k1 } = setup()
    passport.jwks = { nope: true } as unknown as { keys: Jwk[] }
    expect((await rejection(keys.getKey(k1.kid))).code).toBe('NotReady')
  })

  it('honours an aborted signal', async () => {
    const { keys, passport, k1 } = setup()
    passport.gate = new Promise(() => undefined)
    const ac = new AbortController()
    const p = keys.getKey(k1.kid, ac.signal)
    ac.abort()
    expect((await rejection(p)).code).toBe('Canceled')
    expect((await rejection(keys.getKey(k1.kid, ac.signal))).code).toBe('Canceled')
  })

  it('honours target and path options', async () => {
    const clock = new VirtualClock(0)
    const passport = new FakePassport()
    const keys = remoteKeySource({ transport: passport, clock, target: 'pp', path: '/keys' })
    await keys.getKey('x')
    expect(passport.requests[0]).toMatchObject({ target: 'pp', req: { path: '/keys' } })
  })
})

describe('staticKeySource', () => {
  it('serves issuer keys by kid', async () => {
    const k = generateIssuerKey()
    const src = staticKeySource([k])
    expect((await src.getKey(k.kid))?.equals(k.publicKey)).toBe(true)
    expect(await src.getKey('other')).toBeUndefined()
  })

  it('serves a JWKS, ignoring keys without kid or of other types', async () => {
    const k = generateIssuerKey()
    const { kid: _kid, ...noKid } = generateIssuerKey().publicJwk
    const src = staticKeySource({ keys: [k.publicJwk, noKid, { kty: 'EC', kid: 'ec' } as unknown] })
    expect(await src.getKey(k.kid)).toBeDefined()
    expect(await src.getKey('ec')).toBeUndefined()
  })
})
