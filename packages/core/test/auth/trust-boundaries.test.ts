import { describe, expect, it } from 'vitest'
import {
  RevocationSet,
  checkCaveats,
  createTokenVerifier,
  generateIssuerKey,
  isNormalizedPath,
  signToken,
  staticKeySource,
  type TokenClaimsInput,
} from '../../src/auth/index.js'
import { createRevocationFeed, type RevocationFeedItem } from '../../src/auth-remote/index.js'
import type { Transport, TransportRequest, TransportResponse } from '../../src/transport/types.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'
import { b64, rejection } from './helpers.js'
import { sign } from 'node:crypto'

const T0 = 1_800_000_000
const need = { audience: 'storage', scope: 'storage:write' }

function setup() {
  const clock = new VirtualClock(T0 * 1000)
  const key = generateIssuerKey({ epoch: 1 })
  const revocations = new RevocationSet({ clock })
  const verifier = createTokenVerifier({ keys: staticKeySource([key]), revocations, clock })
  const base: TokenClaimsInput = { sub: 'alice', aud: ['storage'], scope: 'storage:write', ttlSec: 600 }
  const mint = (c: Partial<TokenClaimsInput> = {}): string => signToken(key, { ...base, ...c }, { clock })
  /** Signs claims given as raw JSON text (so a `"__proto__"` key stays an own key of the payload). */
  const raw = (json: string): string => {
    const input = `${b64({ alg: 'EdDSA', typ: 'JWT', kid: key.kid })}.${b64(json)}`
    return `${input}.${sign(null, Buffer.from(input), key.privateKey).toString('base64url')}`
  }
  return { clock, key, verifier, revocations, mint, raw }
}

const claimsJson = (ron: string): string => `{"iss":"passport","sub":"alice","aud":["storage"],"scope":"storage:write","iat":${T0},"exp":${T0 + 600},"jti":"j1","ron":${ron}}`

describe('caveats are parsed into null-prototype objects (issue 20, item 8)', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'])('a caveat named %s is refused as unknown_caveat', async (name) => {
    const { verifier, raw } = setup()
    // `__proto__` used to become the caveats object's prototype and hide the caveat inside it.
    const e = await rejection(verifier.verify(raw(claimsJson(`{"${name}":{"budget":1}}`)), need))
    expect([e.code, e.details['reason'], e.details['caveat']]).toEqual(['Unauthorized', 'unknown_caveat', name])
  })

  it('a __proto__ caveat is refused even by a verifier configured to know it', async () => {
    const { key, clock, raw } = setup()
    const v = createTokenVerifier({ keys: staticKeySource([key]), clock, knownCaveats: ['maxBytes', '__proto__'] })
    const e = await rejection(v.verify(raw(claimsJson('{"maxBytes":5,"__proto__":{"maxBytes":1}}')), need))
    expect(e.details['reason']).toBe('unknown_caveat')
  })

  it('verified caveats have no prototype: nothing inherited reads as a caveat', async () => {
    const { verifier, mint } = setup()
    const c = await verifier.verify(mint({ ron: { maxBytes: 5, methods: ['PUT'] } }), need)
    expect(Object.getPrototypeOf(c.ron)).toBeNull()
    expect({ ...c.ron }).toEqual({ maxBytes: 5, methods: ['PUT'] })
    expect(Object.isFrozen(c.ron)).toBe(true)
  })

  it.each([
    ['maxBytes', '{"maxBytes":-1}'],
    ['maxBytes', '{"maxBytes":1.5}'],
    ['methods', '{"methods":"PUT"}'],
    ['namePrefix', '{"namePrefix":"Docs.Alice"}'],
    ['pathPrefix', '{"pathPrefix":"o/a"}'],
  ])('a %s caveat of the wrong shape is malformed', async (name, ron) => {
    const { verifier, raw } = setup()
    const e = await rejection(verifier.verify(raw(claimsJson(ron)), need))
    expect([e.details['reason'], e.details['field']]).toEqual(['malformed', `ron.${name}`])
  })
})

describe('pathPrefix is normalised (issue 20, item 8)', () => {
  it.each(['/o/a/../b', '/o/./a', '/o//a', '/o/..', '/o/%2e%2e/b', '/o/a%2Fb', '/o\\a'])('a token whose pathPrefix is %s is malformed', async (p) => {
    const { verifier, mint } = setup()
    const e = await rejection(verifier.verify(mint({ ron: { pathPrefix: p } }), need))
    expect([e.code, e.details['reason'], e.details['field']]).toEqual(['Unauthorized', 'malformed', 'ron.pathPrefix'])
  })

  it('normal prefixes verify, a trailing slash included', async () => {
    const { verifier, mint } = setup()
    for (const p of ['/', '/o', '/o/', '/o/a.b', '/o/..a']) await expect(verifier.verify(mint({ ron: { pathPrefix: p } }), need)).resolves.toBeDefined()
    expect(isNormalizedPath('/o/a')).toBe(true)
  })

  it('checkCaveats refuses a request path that climbs out of the prefix', () => {
    const claims = { ron: { pathPrefix: '/o/a' } }
    expect(() => checkCaveats(claims, { method: 'GET', path: '/o/a/x' })).not.toThrow()
    for (const path of ['/o/a/../b', '/o/a/%2e%2e/b', '/o/a//x', '/o/a/./x']) {
      expect(() => checkCaveats(claims, { method: 'GET', path }), path).toThrow(expect.objectContaining({ code: 'Forbidden', details: expect.objectContaining({ caveat: 'pathPrefix' }) }))
    }
  })
})

describe('cascading revocation at every verifier (SPEC §5)', () => {
  it('a token whose parent was revoked with its subtree is refused; a child of a retired token verifies', async () => {
    const { verifier, revocations, mint } = setup()
    const child = mint({ jti: 'child', prf: 'parent' })
    const orphan = mint({ jti: 'orphan', prf: 'retired' })
    // Cached first: the cache hit path checks the parent too.
    await verifier.verify(child, need)
    await verifier.verify(orphan, need)
    revocations.add('parent', T0 + 600)
    revocations.add('retired', T0 + 600, { cascade: false })
    const e = await rejection(verifier.verify(child, need))
    expect([e.details['reason'], e.details['prf']]).toEqual(['revoked', 'parent'])
    await expect(verifier.verify(orphan, need)).resolves.toMatchObject({ jti: 'orphan' })
    // The retired token itself no longer verifies.
    expect((await rejection(verifier.verify(mint({ jti: 'retired' }), need))).details['reason']).toBe('revoked')
  })

  it('a retirement never downgrades a revocation; a revocation upgrades a retirement', async () => {
    const clock = new VirtualClock(T0 * 1000)
    const set = new RevocationSet({ clock })
    set.add('a', T0 + 60)
    set.add('a', T0 + 60, { cascade: false })
    expect(set.revokesDescendants('a')).toBe(true)
    set.add('b', T0 + 60, { cascade: false })
    expect([set.isRevoked('b'), set.revokesDescendants('b')]).toEqual([true, false])
    set.add('b', T0 + 60)
    expect(set.revokesDescendants('b')).toBe(true)
    await clock.advanceTo((T0 + 600) * 1000)
    expect([set.isRevoked('b'), set.revokesDescendants('b')]).toEqual([false, false])
  })

  it('the feed applies {jti, cascade}: a retirement refuses only the token, a revocation its children too', async () => {
    const clock = new VirtualClock(T0 * 1000)
    const items: RevocationFeedItem[] = [
      { seq: 1, jti: 'admin-old', exp: T0 + 600, revokedAt: T0 * 1000, cascade: false },
      { seq: 2, jti: 'leaked', exp: T0 + 600, revokedAt: T0 * 1000, cascade: true },
      { seq: 3, jti: 'legacy', exp: T0 + 600, revokedAt: T0 * 1000 },
    ]
    const transport: Transport = {
      request(_t: string, _r: TransportRequest): Promise<TransportResponse> {
        const bytes = new TextEncoder().encode(JSON.stringify({ feedId: 'f', seq: 3, items, more: false }))
        return Promise.resolve({
          status: 200,
          headers: {},
          body: [bytes] as AsyncIterable<Uint8Array> & Uint8Array[],
          bytes: () => Promise.resolve(bytes),
          text: () => Promise.resolve(new TextDecoder().decode(bytes)),
          json: <T>() => Promise.resolve(JSON.parse(new TextDecoder().decode(bytes)) as T),
          dump: () => Promise.resolve(),
        })
      },
      close: () => Promise.resolve(),
    }
    const feed = createRevocationFeed({ transport, clock })
    await feed.sync()
    expect([feed.isRevoked('admin-old'), feed.revokesDescendants('admin-old')]).toEqual([true, false])
    expect(feed.revokesDescendants('leaked')).toBe(true)
    // A feed item without `cascade` (an older passport) cascades, as revocations always did.
    expect(feed.revokesDescendants('legacy')).toBe(true)
    const key = generateIssuerKey()
    const v = createTokenVerifier({ keys: staticKeySource([key]), revocations: feed, clock })
    const mint = (jti: string, prf: string): string => signToken(key, { sub: 'a', aud: ['storage'], scope: 'storage:write', ttlSec: 60, jti, prf }, { clock })
    await expect(v.verify(mint('c1', 'admin-old'), need)).resolves.toBeDefined()
    expect((await rejection(v.verify(mint('c2', 'leaked'), need))).details['reason']).toBe('revoked')
  })
})
