import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, createRevocationFeed, createTokenVerifier, remoteKeySource, type RevocationFeed } from '@ron/core'
import { VirtualClock } from '@ron/core/testing'
import { createStorageService, type StorageService } from '@ron/storage'
import { createPassportClient, createPassportService, type PassportService } from '../src/index.js'
import { ADMIN_POLICY, T0 } from './helpers.js'

const BOUND_MS = 5000
const POLL_MS = 1000

interface World {
  clock: VirtualClock
  transport: MemoryTransport
  passport: PassportService
  storage: StorageService
  feed: RevocationFeed
  stop: AbortController
  client: ReturnType<typeof createPassportClient>
}
let world: World | undefined

afterEach(async () => {
  if (world === undefined) return
  world.stop.abort()
  // Closing may wait on timers (drain deadlines, probes): keep virtual time moving until it is done.
  await settleOnVirtualTime(world.clock, world.storage.close())
  await settleOnVirtualTime(world.clock, world.passport.close())
  await world.transport.close()
  world = undefined
})

async function settleOnVirtualTime(clock: VirtualClock, p: Promise<void>): Promise<void> {
  let done = false
  const watched = p.finally(() => (done = true))
  for (let i = 0; i < 1000 && !done; i++) await clock.advance(100)
  await watched
}

/** A passport and a storage service verifying through core's verifier, following passport over the transport. */
async function build(opts: { stream?: boolean } = {}): Promise<World> {
  const clock = new VirtualClock(T0)
  const transport = new MemoryTransport({ clock })
  const passport = await createPassportService({ clock, drainReadWindowMs: 0, policy: ADMIN_POLICY }, transport)
  transport.mount('passport', passport)
  const feed = createRevocationFeed({ transport, clock, staleAfterMs: BOUND_MS, pollIntervalMs: POLL_MS, ...opts })
  const verifier = createTokenVerifier({ keys: remoteKeySource({ transport, clock }), revocations: feed, clock })
  const storage = await createStorageService({ auth: { verifier }, publicReads: false, clock, repair: { auto: false } }, transport)
  transport.mount('storage', storage)
  const stop = new AbortController()
  void feed.run(stop.signal)
  await clock.advance(0)
  const admin = await passport.mintAdminToken({ aud: ['passport', 'storage'], scope: ['passport:issue', 'passport:revoke', 'storage:write', 'storage:read'], ttlSec: 86400 })
  world = { clock, transport, passport, storage, feed, stop, client: createPassportClient(transport, { token: admin.token }) }
  return world
}

const payloadJti = (t: string): string => (JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString()) as { jti: string }).jti

async function put(w: World, token: string, body = 'hello'): Promise<{ status: number; reason?: string }> {
  const res = await w.transport.request('storage', { method: 'PUT', path: '/o', headers: { authorization: `Bearer ${token}` }, body })
  const json = await res.json<{ error?: { details?: { reason?: string } } }>()
  return { status: res.status, ...(json.error?.details?.reason === undefined ? {} : { reason: json.error.details.reason }) }
}

async function get(w: World, token: string, address: string): Promise<number> {
  const res = await w.transport.request('storage', { method: 'GET', path: `/o/${address}`, headers: { authorization: `Bearer ${token}` } })
  await res.dump()
  return res.status
}

describe('revocation reaches a storage service through the feed', () => {
  it('a token revoked on passport is refused by storage within the bound (p99 on virtual time)', async () => {
    const w = await build()
    const samples: number[] = []
    for (let i = 0; i < 40; i++) {
      const { token } = await w.client.issue({ sub: `ci-${i}`, aud: ['storage'], scope: ['storage:write'] })
      expect((await put(w, token, `x${i}`)).status).toBeLessThan(300)
      // Revoke at a different phase of the poll cycle each time.
      await w.clock.advance((i * 37) % POLL_MS)
      const revokedAt = w.clock.now()
      await w.client.revoke({ token })
      let refusedAt: number | undefined
      for (let t = 0; t <= BOUND_MS; t += 50) {
        const r = await put(w, token, `y${i}-${t}`)
        if (r.status === 401) {
          expect(r.reason).toBe('revoked')
          refusedAt = w.clock.now()
          break
        }
        await w.clock.advance(50)
      }
      expect(refusedAt, `token ${i} still accepted after the bound`).toBeDefined()
      samples.push(refusedAt! - revokedAt)
    }
    samples.sort((a, b) => a - b)
    const p99 = samples[Math.ceil(samples.length * 0.99) - 1]!
    expect(p99).toBeLessThanOrEqual(POLL_MS + 50)
    expect(p99).toBeLessThanOrEqual(BOUND_MS)
  })

  it('following the SSE stream too, a revocation applies without waiting for the next poll', async () => {
    const w = await build({ stream: true })
    await w.clock.advance(10) // the stream connects
    const samples: number[] = []
    for (let i = 0; i < 10; i++) {
      const { token } = await w.client.issue({ sub: `s-${i}`, aud: ['storage'], scope: ['storage:write'] })
      await w.clock.advance(123)
      const revokedAt = w.clock.now()
      await w.client.revoke({ token })
      // Let the pushed event travel (no virtual time passes while it does).
      for (let k = 0; k < 10_000 && !w.feed.isRevoked(payloadJti(token)); k++) await new Promise((r) => setImmediate(r))
      expect(w.feed.isRevoked(payloadJti(token))).toBe(true)
      samples.push(w.clock.now() - revokedAt)
      expect((await put(w, token, `z${i}`)).reason).toBe('revoked')
    }
    expect(Math.max(...samples)).toBe(0)
  })

  it('fails closed when the feed is down: writes 503 revocation_stale after the bound, reads keep working', async () => {
    const w = await build()
    const { token } = await w.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write', 'storage:read'] })
    const res = await w.transport.request('storage', { method: 'PUT', path: '/o', headers: { authorization: `Bearer ${token}` }, body: 'data' })
    const { address } = await res.json<{ address: string }>()
    w.transport.setReachable('passport', false)
    await w.clock.advance(BOUND_MS)
    expect((await put(w, token, 'more')).status).toBeLessThan(300) // exactly at the bound: still fresh
    await w.clock.advance(POLL_MS)
    expect(w.feed.isStale()).toBe(true)
    expect(await put(w, token, 'again')).toEqual({ status: 503, reason: 'revocation_stale' })
    expect(await get(w, token, address)).toBe(200)
    // Passport back: the next poll catches up and writes resume.
    w.transport.setReachable('passport', true)
    await w.clock.advance(POLL_MS)
    expect(w.feed.isStale()).toBe(false)
    expect((await put(w, token, 'resumed')).status).toBeLessThan(300)
  })

  it('a key rotation on passport reaches the verifier without refusing valid tokens', async () => {
    const w = await build()
    const before = (await w.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })).token
    expect((await put(w, before, 'a')).status).toBeLessThan(300)
    await w.passport.rotate()
    const after = (await w.client.issue({ sub: 'ci', aud: ['storage'], scope: ['storage:write'] })).token
    // The new current key was published as `next` before it signed: no unknown_kid.
    expect((await put(w, after, 'b')).status).toBeLessThan(300)
    expect((await put(w, before, 'c')).status).toBeLessThan(300)
  })
})
