import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ALL_SCOPES, MemoryTransport, createRevocationFeed, createTokenVerifier, nameWithinPrefix, type Claims } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createPassportClient, createPassportService, prefixWithin } from '../src/index.js'
import { T0, payloadOf } from './helpers.js'

/** A token handed out during a run, with what its claims say. */
interface Held {
  token: string
  jti: string
  claims: Claims & { scope: string }
  parent: number | undefined
}

const SCOPES = ['storage:write', 'storage:read', 'index:write', 'passport:issue', 'passport:revoke', 'registry:propose'] as const
const AUDS = ['storage', 'index', 'passport', 'registry'] as const
const PATHS = ['/o', '/o/a', '/o/a/b', '/p', '/o/../p', '/o//a'] as const
const NAMES = ['b.c', 'a.b.c', 'x.a.b.c', 'c', 'd.c'] as const
const METHODS = ['GET', 'PUT', 'DELETE'] as const

const caveatsArb = fc.record(
  {
    maxBytes: fc.integer({ min: 0, max: 4000 }),
    methods: fc.subarray([...METHODS], { minLength: 1 }),
    pathPrefix: fc.constantFrom(...PATHS),
    namePrefix: fc.constantFrom(...NAMES),
  },
  { requiredKeys: [] },
)

const opArb = fc.oneof(
  fc.record({
    kind: fc.constantFrom('attenuate' as const, 'issue' as const),
    from: fc.nat(),
    scope: fc.option(fc.subarray([...SCOPES], { minLength: 1 }), { nil: undefined }),
    aud: fc.option(fc.subarray([...AUDS], { minLength: 1 }), { nil: undefined }),
    ttlSec: fc.option(fc.integer({ min: 1, max: 7200 }), { nil: undefined }),
    caveats: fc.option(caveatsArb, { nil: undefined }),
  }),
  fc.record({ kind: fc.constantFrom('revoke' as const, 'retire' as const), from: fc.nat() }),
)

/** `child` carries no more authority than `parent`: scopes, audiences, expiry and every caveat. */
function within(child: Held['claims'], parent: Held['claims']): boolean {
  const cs = child.scope.split(' ')
  const ps = parent.scope.split(' ')
  if (!cs.every((s) => ps.includes(s))) return false
  if (!child.aud.every((a) => parent.aud.includes(a))) return false
  // Every audience is a service the scopes name.
  if (!child.aud.every((a) => cs.some((s) => s.startsWith(`${a}:`)))) return false
  if (child.exp > parent.exp) return false
  const p = parent.ron ?? {}
  const c = child.ron ?? {}
  if (p.maxBytes !== undefined && !(c.maxBytes !== undefined && c.maxBytes <= p.maxBytes)) return false
  if (p.methods !== undefined && !(c.methods !== undefined && c.methods.every((m) => p.methods!.includes(m)))) return false
  if (p.pathPrefix !== undefined && !(c.pathPrefix !== undefined && prefixWithin(c.pathPrefix, p.pathPrefix))) return false
  if (p.namePrefix !== undefined && !(c.namePrefix !== undefined && nameWithinPrefix(c.namePrefix, p.namePrefix))) return false
  return true
}

describe('property: no chain of issue/attenuate/revoke/retire grows authority, and no descendant of a revoked token verifies', () => {
  it('random chains, run in concurrent waves against passport and a verifier following its feed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), async (waves) => {
        const clock = new VirtualClock(T0)
        const transport = new MemoryTransport({ clock })
        const passport = await createPassportService({ clock, drainReadWindowMs: 0, policy: { maxTtlSec: 7200, callers: { '*': { scopes: ['*'], audiences: ['*'] } } } }, transport)
        transport.mount('passport', passport)
        try {
          const root = await passport.mintAdminToken({ aud: [...AUDS], scope: [...ALL_SCOPES], ttlSec: 86_400 })
          const held: Held[] = [{ token: root.token, jti: root.jti, claims: payloadOf(root.token), parent: undefined }]
          const revoked = new Set<string>() // cascading
          const retired = new Set<string>()
          const anon = createPassportClient(transport)
          const rootClient = createPassportClient(transport, { token: root.token })
          for (const wave of waves) {
            // Each wave's operations run concurrently: mints race revocations.
            await Promise.all(
              wave.map(async (op) => {
                const i = op.from % held.length
                const from = held[i]!
                try {
                  if (op.kind === 'revoke') {
                    await rootClient.revoke({ jti: from.jti })
                    revoked.add(from.jti)
                  } else if (op.kind === 'retire') {
                    await passport.retire(from.jti)
                    retired.add(from.jti)
                  } else if ('ttlSec' in op) {
                    const req = { ...(op.scope === undefined ? {} : { scope: op.scope }), ...(op.aud === undefined ? {} : { aud: op.aud }), ...(op.ttlSec === undefined ? {} : { ttlSec: op.ttlSec }), ...(op.caveats === undefined ? {} : { caveats: op.caveats }) }
                    const t =
                      op.kind === 'attenuate'
                        ? await anon.attenuate({ token: from.token, ...req })
                        : await createPassportClient(transport, { token: from.token }).issue({ sub: `s${held.length}`, aud: op.aud ?? [...from.claims.aud], scope: op.scope ?? from.claims.scope.split(' '), ...req })
                    const claims = payloadOf(t.token)
                    // Authority never grows: within the token it was minted from, hence within the root.
                    expect(claims.prf).toBe(from.jti)
                    expect(within(claims, from.claims), JSON.stringify({ claims, from: from.claims })).toBe(true)
                    held.push({ token: t.token, jti: t.jti, claims, parent: i })
                  }
                } catch (e) {
                  const code = (e as { code?: string }).code
                  // Refusals are fine (a wider request, a revoked parent); nothing else is.
                  if (!['Forbidden', 'Malformed', 'Unauthorized'].includes(code ?? '')) throw e
                }
              }),
            )
          }
          // Every service: passport's own verifier and a verifier following the feed.
          const feed = createRevocationFeed({ transport, clock })
          await feed.sync()
          const follower = createTokenVerifier({ keys: passport.keys, revocations: feed, clock })
          const cascaded = (h: Held): boolean => {
            for (let at: Held | undefined = h; at !== undefined; at = at.parent === undefined ? undefined : held[at.parent]) if (revoked.has(at.jti)) return true
            return false
          }
          for (const h of held) {
            const dead = cascaded(h) || retired.has(h.jti)
            const need = { audience: h.claims.aud[0]! }
            const atPassport = await passport.verifier.verify(h.token, need).then(
              () => true,
              () => false,
            )
            const atFollower = await follower.verify(h.token, need).then(
              () => true,
              () => false,
            )
            expect([atPassport, atFollower], `${h.jti} dead=${dead}`).toEqual([!dead, !dead])
          }
        } finally {
          await passport.close()
          await transport.close()
        }
      }),
      { numRuns: 60 },
    )
  })
})
