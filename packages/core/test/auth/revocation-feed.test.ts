import { describe, expect, it } from 'vitest'
import { generateIssuerKey } from '../../src/auth/index.js'
import { createRevocationFeed, remoteKeySource, type RevocationFeedItem } from '../../src/auth-remote/index.js'
import { NotReadyError } from '../../src/errors.js'
import type { Transport, TransportRequest, TransportResponse } from '../../src/transport/types.js'
import { VirtualClock } from '../../src/testing/virtual-clock.js'

const T0 = 1_800_000_000_000

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

/** A passport stand-in serving a revocation feed in pages of `pageSize`. */
class FakeFeed implements Transport {
  feedId = 'f1'
  items: RevocationFeedItem[] = []
  down = false
  pageSize = 2
  paths: string[] = []
  jwks: unknown = { keys: [] }
  request(_target: string, req: TransportRequest): Promise<TransportResponse> {
    this.paths.push(req.path)
    if (this.down) return Promise.reject(new NotReadyError('unreachable', { details: { reason: 'unreachable' } }))
    if (req.path.startsWith('/v1/passport/keys')) return Promise.resolve(response(200, this.jwks))
    const since = Number(new URL(req.path, 'http://x').searchParams.get('since'))
    const after = this.items.filter((i) => i.seq > since)
    const page = after.slice(0, this.pageSize)
    const head = this.items.at(-1)?.seq ?? 0
    return Promise.resolve(response(200, { feedId: this.feedId, seq: page.at(-1)?.seq ?? Math.max(since, head), items: page, more: after.length > page.length }))
  }
  close(): Promise<void> {
    return Promise.resolve()
  }
}

describe('createRevocationFeed', () => {
  it('is stale until its first sync, then applies every page', async () => {
    const clock = new VirtualClock(T0)
    const feed = new FakeFeed()
    feed.items = [1, 2, 3].map((seq) => ({ seq, jti: `j${seq}`, exp: T0 / 1000 + 600, revokedAt: T0 }))
    const f = createRevocationFeed({ transport: feed, clock })
    expect(f.isStale()).toBe(true)
    await f.sync()
    expect(f.isStale()).toBe(false)
    expect(f.seq).toBe(3)
    expect(['j1', 'j2', 'j3'].every((j) => f.isRevoked(j))).toBe(true)
    expect(feed.paths).toEqual(['/v1/passport/revocations?since=0', '/v1/passport/revocations?since=2'])
  })

  it('turns stale after the bound when passport is down, and fresh again when it is back', async () => {
    const clock = new VirtualClock(T0)
    const feed = new FakeFeed()
    const changes: boolean[] = []
    const f = createRevocationFeed({ transport: feed, clock, staleAfterMs: 5000, pollIntervalMs: 1000, onStaleChange: (s) => changes.push(s) })
    const abort = new AbortController()
    const running = f.run(abort.signal)
    await clock.advance(0)
    expect(f.isStale()).toBe(false)
    feed.down = true
    await clock.advance(5000)
    expect(f.isStale()).toBe(false)
    await clock.advance(1000)
    expect(f.isStale()).toBe(true)
    feed.down = false
    feed.items.push({ seq: 1, jti: 'late', revokedAt: clock.now() - 2000 })
    await clock.advance(1000)
    expect(f.isStale()).toBe(false)
    expect(f.isRevoked('late')).toBe(true)
    expect(changes).toEqual([true, false, true, false])
    abort.abort()
    await running
  })

  it('starts over when the feed id changes (a fresh passport)', async () => {
    const clock = new VirtualClock(T0)
    const feed = new FakeFeed()
    feed.items = [{ seq: 1, jti: 'a', revokedAt: T0 }, { seq: 2, jti: 'b', revokedAt: T0 }]
    const f = createRevocationFeed({ transport: feed, clock })
    await f.sync()
    feed.feedId = 'f2'
    feed.items = [{ seq: 1, jti: 'c', revokedAt: T0 }]
    await f.sync()
    expect(f.isRevoked('a')).toBe(true)
    expect(f.isRevoked('c')).toBe(true)
    expect(f.seq).toBe(1)
  })

  it('start() and close() poll on their own and stop cleanly', async () => {
    const clock = new VirtualClock(T0)
    const feed = new FakeFeed()
    const f = createRevocationFeed({ transport: feed, clock, pollIntervalMs: 100 })
    f.start()
    await clock.advance(350)
    expect(feed.paths.length).toBeGreaterThanOrEqual(3)
    await f.close()
    await f.close()
    const n = feed.paths.length
    await clock.advance(1000)
    expect(feed.paths.length).toBe(n)
    expect(clock.pending).toBe(0)
  })
})

describe('remoteKeySource retirement', () => {
  it('treats a key as unknown from its retiresAt on, without a refetch', async () => {
    const clock = new VirtualClock(T0)
    const feed = new FakeFeed()
    const k = generateIssuerKey()
    feed.jwks = { keys: [{ ...k.publicJwk, retiresAt: T0 + 1000 }] }
    const keys = remoteKeySource({ transport: feed, clock })
    expect(await keys.getKey(k.kid)).toBeDefined()
    await clock.advance(1000)
    expect(await keys.getKey(k.kid)).toBeUndefined()
    expect(keys.fetches).toBe(1)
  })

  it('stops its own polling on await using (Symbol.asyncDispose), leaving no timer behind', async () => {
    const clock = new VirtualClock(T0)
    const feed = new FakeFeed()
    {
      await using f = createRevocationFeed({ transport: feed, clock, pollIntervalMs: 100 })
      f.start()
      await clock.advance(250)
      expect(f.isStale()).toBe(false)
    }
    expect(clock.pending).toBe(0)
    const polls = feed.paths.length
    await clock.advance(1000)
    expect(feed.paths.length).toBe(polls)
  })
})
