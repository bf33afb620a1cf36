import { createHash } from 'node:crypto'
import { SignJWT, importJWK, jwtVerify } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import {
  RevocationSet,
  createTokenVerifier,
  generateIssuerKey,
  signToken,
  staticKeySource,
  type KeySource,
  type TokenClaimsInput,
} from '../../src/auth/index.js'
import { ForbiddenError, UnauthorizedError } from '../../src/errors.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'
import { b64, craft, hs256, rejection } from './helpers.js'

const T0 = 1_800_000_000 // seconds
const base: TokenClaimsInput = { sub: 'alice', aud: ['storage'], scope: 'storage:write storage:read', ttlSec: 600, jti: 'j-1' }
const need = { audience: 'storage', scope: 'storage:write' }

function setup(opts: { tolerance?: number } = {}) {
  const clock = new VirtualClock(T0 * 1000)
  const key = generateIssuerKey({ epoch: 1 })
  const keys = staticKeySource([key])
  const revocations = new RevocationSet({ clock })
  const verifier = createTokenVerifier({ keys, revocations, clock, ...(opts.tolerance === undefined ? {} : { clockToleranceSec: opts.tolerance }) })
  const mint = (c: Partial<TokenClaimsInput> = {}): string => signToken(key, { ...base, ...c }, { clock })
  const claims = (c: Record<string, unknown> = {}) => ({ iss: 'passport', sub: 'alice', aud: ['storage'], scope: 'storage:write', iat: T0, exp: T0 + 600, jti: 'j-x', ...c })
  return { clock, key, keys, revocations, verifier, mint, claims }
}

async function reason(p: Promise<unknown>): Promise<[string, unknown]> {
  const e = await rejection(p)
  return [e.code, e.details['reason']]
}

describe('createTokenVerifier', () => {
  it('accepts a token it signed and returns normalised claims', async () => {
    const { verifier, mint, key } = setup()
    const claims = await verifier.verify(mint({ ron: { maxBytes: 10 }, prf: 'parent' }), need)
    expect(claims).toEqual({
      iss: 'passport',
      sub: 'alice',
      aud: ['storage'],
      scope: ['storage:write', 'storage:read'],
      iat: T0,
      exp: T0 + 600,
      jti: 'j-1',
      prf: 'parent',
      ron: { maxBytes: 10 },
    })
    const header = JSON.parse(Buffer.from(mint().split('.')[0]!, 'base64url').toString()) as unknown
    expect(header).toEqual({ alg: 'EdDSA', typ: 'JWT', kid: key.kid })
  })

  it('accepts a token without required scope, and a string aud', async () => {
    const { verifier, key, claims } = setup()
    const t = craft({ alg: 'EdDSA', kid: key.kid }, claims({ aud: 'storage' }), key)
    expect((await verifier.verify(t, { audience: 'storage' })).aud).toEqual(['storage'])
  })

  it('tokens are standard JWTs: jose verifies ours, and we verify jose-signed ones', async () => {
    const { key, verifier, clock } = setup()
    const token = signToken(key, { ...base, ttlSec: 60 }, { clock })
    const pub = await importJWK(key.publicJwk, 'EdDSA')
    const { payload, protectedHeader } = await jwtVerify(token, pub, { audience: 'storage', currentDate: new Date(clock.now()), algorithms: ['EdDSA'] })
    expect(protectedHeader.kid).toBe(key.kid)
    expect(payload.scope).toBe('storage:write storage:read')

    const joseToken = await new SignJWT({ scope: 'storage:write', jti: 'jose-1' })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: key.kid })
      .setIssuer('passport')
      .setSubject('bob')
      .setAudience(['storage'])
      .setIssuedAt(T0)
      .setExpirationTime(T0 + 60)
      .sign(key.privateKey)
    expect((await verifier.verify(joseToken, need)).sub).toBe('bob')
  })

  it('refuses an empty token as missing', async () => {
    const { verifier } = setup()
    expect(await reason(verifier.verify('', need))).toEqual(['Unauthorized', 'missing'])
  })

  it.each([
    ['none', { alg: 'none' }],
    ['HS256', { alg: 'HS256' }],
    ['ES256', { alg: 'ES256' }],
    ['lower-case eddsa', { alg: 'eddsa' }],
    ['Ed25519', { alg: 'Ed25519' }],
    ['missing alg', {}],
    ['array alg', { alg: ['EdDSA'] }],
  ])('refuses alg %s as bad_alg', async (_n, h) => {
    const { verifier, key, claims } = setup()
    const t = craft({ typ: 'JWT', kid: key.kid, ...h }, claims(), key)
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'bad_alg'])
  })

  it('refuses alg none with an empty signature (the classic bypass)', async () => {
    const { verifier, key, claims } = setup()
    const t = craft({ alg: 'none', typ: 'JWT', kid: key.kid }, claims(), undefined, '')
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'bad_alg'])
  })

  it('refuses HS256 tokens MACed with the public key as the secret (algorithm confusion)', async () => {
    const { verifier, key, claims } = setup()
    const h = { alg: 'HS256', typ: 'JWT', kid: key.kid }
    const secrets = [
      Buffer.from(key.publicJwk.x, 'base64url'),
      key.publicJwk.x,
      JSON.stringify(key.publicJwk),
      key.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    ]
    for (const secret of secrets) {
      expect(await reason(verifier.verify(hs256(h, claims(), secret), need))).toEqual(['Unauthorized', 'bad_alg'])
      // Even with the header lying about the alg, the MAC is not an Ed25519 signature.
      const lying = hs256({ ...h, alg: 'EdDSA' }, claims(), secret)
      expect(await reason(verifier.verify(lying, need))).toEqual(['Unauthorized', 'bad_signature'])
    }
  })

  it('refuses a token signed by another key under our kid as bad_signature', async () => {
    const { verifier, key, claims } = setup()
    const mallory = generateIssuerKey({ kid: key.kid })
    expect(await reason(verifier.verify(craft({ alg: 'EdDSA', kid: key.kid }, claims(), mallory), need))).toEqual(['Unauthorized', 'bad_signature'])
  })

  it('refuses a token whose claims were changed after signing', async () => {
    const { verifier, mint } = setup()
    const [h, , s] = mint().split('.')
    const forged = `${h}.${b64({ ...JSON.parse(Buffer.from(mint().split('.')[1]!, 'base64url').toString()), scope: 'storage:admin' })}.${s}`
    expect(await reason(verifier.verify(forged, need))).toEqual(['Unauthorized', 'bad_signature'])
  })

  it('refuses a truncated or over-long signature as bad_signature', async () => {
    const { verifier, mint } = setup()
    const [h, p, s] = mint().split('.') as [string, string, string]
    const sig = Buffer.from(s, 'base64url')
    expect(await reason(verifier.verify(`${h}.${p}.${sig.subarray(0, 63).toString('base64url')}`, need))).toEqual(['Unauthorized', 'bad_signature'])
    expect(await reason(verifier.verify(`${h}.${p}.${Buffer.concat([sig, Buffer.from([0])]).toString('base64url')}`, need))).toEqual([
      'Unauthorized',
      'bad_signature',
    ])
    expect(await reason(verifier.verify(`${h}.${p}.${s.slice(0, -4)}`, need))).toEqual(['Unauthorized', 'bad_signature'])
  })

  it('refuses a non-canonical signature encoding even though lenient decoders yield the valid signature', async () => {
    const { verifier, mint } = setup()
    const t = mint()
    const last = t.at(-1)!
    // 64 bytes = 86 base64url chars; the last one carries 4 unused bits. Set one of them.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const twisted = t.slice(0, -1) + alphabet[alphabet.indexOf(last) | 1]!
    expect(twisted).not.toBe(t)
    expect(Buffer.from(twisted.split('.')[2]!, 'base64url').equals(Buffer.from(t.split('.')[2]!, 'base64url'))).toBe(true)
    expect(await reason(verifier.verify(twisted, need))).toEqual(['Unauthorized', 'bad_signature'])
  })

  it.each([
    ['two segments', (t: string) => t.split('.').slice(0, 2).join('.')],
    ['four segments', (t: string) => `${t}.x`],
    ['an empty trailing segment', (t: string) => `${t}.`],
    ['a + character', (t: string) => `${t.slice(0, 5)}+${t.slice(6)}`],
    ['a / character', (t: string) => `${t.slice(0, 5)}/${t.slice(6)}`],
    ['padding', (t: string) => t.replace(/\./, '=.')],
    ['whitespace', (t: string) => ` ${t}`],
    ['an empty header', (t: string) => t.slice(t.indexOf('.'))],
  ])('refuses a token with %s as malformed', async (_n, mutate) => {
    const { verifier, mint } = setup()
    expect(await reason(verifier.verify(mutate(mint()), need))).toEqual(['Unauthorized', 'malformed'])
  })

  it('refuses an oversized token before parsing it', async () => {
    const { keys, clock, mint } = setup()
    const spy = vi.spyOn(JSON, 'parse')
    const verifier = createTokenVerifier({ keys, clock, maxTokenBytes: 100 })
    const err = await rejection(verifier.verify(mint(), need))
    expect([err.code, err.details['reason']]).toEqual(['Unauthorized', 'malformed'])
    expect(spy).not.toHaveBeenCalled()
    spy.mockRestore()
    const big = setup()
    expect(await reason(big.verifier.verify(`${'a'.repeat(9000)}.b.c`, need))).toEqual(['Unauthorized', 'malformed'])
  })

  it.each([
    ['no kid', { alg: 'EdDSA', typ: 'JWT' }],
    ['an empty kid', { alg: 'EdDSA', kid: '' }],
    ['a numeric kid', { alg: 'EdDSA', kid: 1 }],
    ['typ JOSE+JSON', { alg: 'EdDSA', typ: 'JOSE+JSON', kid: 'k' }],
    ['a crit header', { alg: 'EdDSA', kid: 'k', crit: ['b64'], b64: false }],
  ])('refuses a header with %s as malformed', async (_n, h) => {
    const { verifier, key, claims } = setup()
    expect(await reason(verifier.verify(craft(h, claims(), key), need))).toEqual(['Unauthorized', 'malformed'])
  })

  it('refuses a header or payload that is not a JSON object as malformed', async () => {
    const { verifier, key, claims } = setup()
    const sig = 'A'.repeat(86)
    expect(await reason(verifier.verify(`${b64('not json')}.${b64(claims())}.${sig}`, need))).toEqual(['Unauthorized', 'malformed'])
    expect(await reason(verifier.verify(`${b64([1])}.${b64(claims())}.${sig}`, need))).toEqual(['Unauthorized', 'malformed'])
    expect(await reason(verifier.verify(craft({ alg: 'EdDSA', kid: key.kid }, '[]', key), need))).toEqual(['Unauthorized', 'malformed'])
  })

  it.each([
    ['exp as a string', { exp: String(T0 + 600) }],
    ['no exp', { exp: undefined }],
    ['no jti', { jti: undefined }],
    ['an empty aud list', { aud: [] }],
    ['scope as an array', { scope: ['storage:write'] }],
    ['maxBytes negative', { ron: { maxBytes: -1 } }],
  ])('refuses claims with %s as malformed, naming the field', async (_n, c) => {
    const { verifier, key, claims } = setup()
    const e = await rejection(verifier.verify(craft({ alg: 'EdDSA', kid: key.kid }, claims(c), key), need))
    expect([e.code, e.details['reason']]).toEqual(['Unauthorized', 'malformed'])
    expect(typeof e.details['field']).toBe('string')
  })

  it('refuses an unknown kid without verifying', async () => {
    const { verifier, key, claims } = setup()
    const e = await rejection(verifier.verify(craft({ alg: 'EdDSA', kid: 'nobody#1' }, claims(), key), need))
    expect([e.code, e.details['reason'], e.details['kid']]).toEqual(['Unauthorized', 'unknown_kid', 'nobody#1'])
  })

  it('expiry honours the clock tolerance to the millisecond', async () => {
    const { verifier, mint, clock } = setup()
    const t = mint({ ttlSec: 60 })
    await clock.advanceTo((T0 + 60 + 30) * 1000)
    await expect(verifier.verify(t, need)).resolves.toBeDefined()
    await clock.advance(1)
    const e = await rejection(verifier.verify(t, need))
    expect([e.code, e.details['reason']]).toEqual(['Unauthorized', 'expired'])
    expect(e).toBeInstanceOf(UnauthorizedError)
  })

  it('not-before honours the clock tolerance, and zero tolerance is exact', async () => {
    const { verifier, mint, clock, keys } = setup()
    const t = mint({ nbf: T0 + 100 })
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'not_yet_valid'])
    await clock.advanceTo((T0 + 70) * 1000)
    await expect(verifier.verify(t, need)).resolves.toBeDefined()
    const strict = createTokenVerifier({ keys, clock, clockToleranceSec: 0 })
    expect(await reason(strict.verify(t, need))).toEqual(['Unauthorized', 'not_yet_valid'])
    await clock.advanceTo((T0 + 100) * 1000)
    await expect(strict.verify(t, need)).resolves.toBeDefined()
  })

  it('refuses a token for another audience as wrong_audience', async () => {
    const { verifier, mint } = setup()
    expect(await reason(verifier.verify(mint({ aud: ['registry', 'index'] }), need))).toEqual(['Unauthorized', 'wrong_audience'])
  })

  it('refuses a token from another issuer when the issuer is pinned', async () => {
    const { keys, clock, mint } = setup()
    const pinned = createTokenVerifier({ keys, clock, issuer: 'passport' })
    await expect(pinned.verify(mint(), need)).resolves.toBeDefined()
    expect(await reason(pinned.verify(mint({ iss: 'elsewhere' }), need))).toEqual(['Unauthorized', 'wrong_audience'])
  })

  it('a valid token lacking the scope is Forbidden missing_scope, not Unauthorized', async () => {
    const { verifier, mint } = setup()
    const e = await rejection(verifier.verify(mint({ scope: 'storage:read' }), need))
    expect(e).toBeInstanceOf(ForbiddenError)
    expect(e.details).toMatchObject({ reason: 'missing_scope', scope: 'storage:write' })
    // scope matching is exact, not by prefix
    expect(await reason(verifier.verify(mint({ scope: 'storage:writer storage:write:x' }), need))).toEqual(['Forbidden', 'missing_scope'])
  })

  it('refuses a revoked token', async () => {
    const { verifier, mint, revocations } = setup()
    const t = mint({ jti: 'bad-one' })
    await expect(verifier.verify(t, need)).resolves.toBeDefined()
    revocations.add('bad-one', T0 + 600)
    expect(await reason(verifier.verify(t, need))).toEqual(['Unauthorized', 'revoked'])
  })

  it('checks revocation before any key lookup or signature work', async () => {
    const { clock, key, claims } = setup()
    const getKey = vi.fn<KeySource['getKey']>(() => Promise.resolve(key.publicKey))
    const revocations = new RevocationSet({ clock })
    revocations.add('j-x', T0 + 600)
    const verifier = createTokenVerifier({ keys: { getKey }, revocations, clock })
    const garbage = craft({ alg: 'EdDSA', kid: 'whatever' }, claims(), undefined, 'A'.repeat(10))
    expect(await reason(verifier.verify(garbage, need))).toEqual(['Unauthorized', 'revoked'])
    expect(getKey).not.toHaveBeenCalled()
  })

  it('runs the caveat hook last, with the claims and the requirement', async () => {
    const { keys, clock, mint } = setup()
    const hook = vi.fn((claims: { ron?: { maxBytes?: number } }) => {
      if ((claims.ron?.maxBytes ?? Infinity) < 100) throw new ForbiddenError('too small', { details: { reason: 'caveat' } })
    })
    const verifier = createTokenVerifier({ keys, clock, caveats: hook })
    await expect(verifier.verify(mint({ ron: { maxBytes: 1000 } }), need)).resolves.toBeDefined()
    expect(hook).toHaveBeenLastCalledWith(expect.objectContaining({ ron: { maxBytes: 1000 } }), need)
    expect(await reason(verifier.verify(mint({ ron: { maxBytes: 10 } }), need))).toEqual(['Forbidden', 'caveat'])
    hook.mockClear()
    await rejection(verifier.verify(mint({ scope: 'x' }), need))
    expect(hook).not.toHaveBeenCalled()
  })

  it('never leaks the token in error details', async () => {
    const { verifier, mint } = setup()
    const t = mint({ aud: 'index' })
    const e = await rejection(verifier.verify(t, need))
    expect(JSON.stringify(e.details)).not.toContain(t.split('.')[2]!)
    expect(createHash('sha256').update(t).digest('hex')).toHaveLength(64)
  })
})
