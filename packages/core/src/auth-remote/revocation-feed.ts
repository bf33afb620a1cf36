/**
 * Following passport's revocation feed (SPEC.md sections 5 and 6a): `GET
 * /v1/passport/revocations?since=<seq>` polled over a {@link Transport}, applied to a local
 * {@link RevocationSet}, with a staleness bound. While the feed has not synced within the bound,
 * the follower reports itself stale and the verifier refuses write and admin scopes (fail closed).
 *
 * @module
 */

import { abortReason, systemClock, type Clock } from '../clock.js'
import { NotReadyError } from '../errors.js'
import { sseEvents } from '../http/sse.js'
import { noopMetrics, type MetricsSink } from '../metrics-sink.js'
import { errorFromResponse } from '../transport/response.js'
import type { Transport } from '../transport/types.js'
import { RevocationSet, type RevocationCheck } from '../auth/revocation.js'

/** One revocation as the feed carries it. */
export interface RevocationFeedItem {
  /** Position in the feed (strictly increasing). */
  seq: number
  /** The revoked token id. */
  jti: string
  /** The token's `exp` (JWT seconds) when known: the entry can be dropped after it. */
  exp?: number
  /** When passport accepted the revocation (Unix ms). */
  revokedAt: number
  /**
   * `true`: a revocation (a leak): tokens minted from this one are refused too — passport lists
   * every descendant it minted as its own item, and verifiers also refuse a token whose `prf`
   * names a cascaded id. `false`: a retirement (the admin token replaced on renewal or rotation):
   * only this token stops verifying (SPEC.md section 5, "Retiring is not revoking"). Absent (a
   * feed from before retirements existed) reads as `true`.
   */
  cascade?: boolean
}

/** A page of the feed: `GET /v1/passport/revocations?since=<seq>`. */
export interface RevocationFeedPage {
  /** Identifies this feed's history; a follower seeing another id starts again from 0. */
  feedId: string
  /** The highest seq covered by this page (the feed's head when `more` is false). */
  seq: number
  /** Revocations with `seq` greater than `since`, ascending. */
  items: RevocationFeedItem[]
  /** True when more items follow (fetch again with `since = seq`). */
  more: boolean
}

/** Options of {@link createRevocationFeed}. */
export interface RevocationFeedOptions {
  /** How to reach passport. */
  transport: Transport
  /** Transport target name. @default 'passport' */
  target?: string
  /** Path of the feed. @default '/v1/passport/revocations' */
  path?: string
  /**
   * Staleness bound: when the last successful sync is older than this, {@link RevocationFeed.isStale}
   * is true. @default 5000
   */
  staleAfterMs?: number
  /** Time between two polls. Must be well below `staleAfterMs`. @default 1000 */
  pollIntervalMs?: number
  /** Deadline of one request. @default 2000 */
  timeoutMs?: number
  /**
   * Also follow the feed's SSE stream (`<path>/stream`, resumed with `Last-Event-ID`) while
   * running, so revocations apply as soon as passport publishes them; polling stays on as the
   * staleness backstop and fills any gap. @default false
   */
  stream?: boolean
  /** Where revoked ids are kept. @default a new {@link RevocationSet} on the same clock */
  set?: RevocationSet
  /** Bearer token for the feed, when passport's feed is not public. @default none */
  token?: string | (() => string | Promise<string>)
  /** Observes `revocation_propagation_seconds` (revokedAt → applied here). @default noopMetrics */
  metrics?: MetricsSink
  /** Called when staleness flips (checked after every poll), e.g. to set readiness. */
  onStaleChange?: (stale: boolean) => void
  /** @default systemClock */
  clock?: Clock
}

/** A followed revocation feed; use it as the verifier's `revocations`. */
export interface RevocationFeed extends RevocationCheck {
  isRevoked(jti: string): boolean
  /** True when `jti` was revoked with its subtree (see {@link RevocationFeedItem.cascade}). */
  revokesDescendants(jti: string): boolean
  /** True when the last successful sync is older than the staleness bound (or never happened). */
  isStale(): boolean
  /** The highest feed seq applied. */
  readonly seq: number
  /** When the last sync succeeded (clock ms), `undefined` before the first. */
  readonly lastSyncAt: number | undefined
  /** The set revocations are applied to. */
  readonly set: RevocationSet
  /**
   * Fetches every page since the last applied seq and applies it.
   * @throws {@link NotReadyError} / transport errors when passport cannot be reached (the feed
   * then stays as stale as it was).
   */
  sync(signal?: AbortSignal): Promise<void>
  /** Polls until `signal` aborts (hand it to a supervisor: `supervisor.spawn('revocation-feed', (s) => feed.run(s))`). */
  run(signal: AbortSignal): Promise<void>
  /** Starts polling on its own (for hosts without a supervisor); stopped by {@link RevocationFeed.close}. */
  start(): void
  /** Stops {@link RevocationFeed.start}'s polling. Idempotent. */
  close(): Promise<void>
  /** Same as {@link RevocationFeed.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Follows passport's revocation feed. Nothing is fetched until {@link RevocationFeed.sync},
 * {@link RevocationFeed.run} or {@link RevocationFeed.start}; until the first successful sync the
 * feed is stale, so writes fail closed.
 *
 * @example
 * ```ts
 * const revocations = createRevocationFeed({ transport, staleAfterMs: 5000 })
 * revocations.start()
 * const verifier = createTokenVerifier({ keys: remoteKeySource({ transport }), revocations })
 * ```
 */
export function createRevocationFeed(opts: RevocationFeedOptions): RevocationFeed {
  const { transport } = opts
  const clock = opts.clock ?? systemClock
  const target = opts.target ?? 'passport'
  const path = opts.path ?? '/v1/passport/revocations'
  const staleAfterMs = opts.staleAfterMs ?? 5000
  const pollIntervalMs = opts.pollIntervalMs ?? 1000
  const timeoutMs = opts.timeoutMs ?? 2000
  const metrics = opts.metrics ?? noopMetrics
  const set = opts.set ?? new RevocationSet({ clock })

  let seq = 0
  let feedId: string | undefined
  let lastSyncAt: number | undefined
  let synced = false
  let lastStale: boolean | undefined
  let inflight: Promise<void> | undefined
  let own: { abort: AbortController; done: Promise<void> } | undefined

  const isStale = (): boolean => lastSyncAt === undefined || clock.now() - lastSyncAt > staleAfterMs

  function notify(): void {
    const stale = isStale()
    if (stale === lastStale) return
    lastStale = stale
    opts.onStaleChange?.(stale)
  }

  function apply(item: RevocationFeedItem): void {
    if (typeof item?.jti !== 'string' || typeof item.seq !== 'number' || item.seq <= seq) return
    set.add(item.jti, typeof item.exp === 'number' ? item.exp : undefined, { cascade: item.cascade !== false })
    // Items seen on the first sync are history, not propagation.
    if (synced && typeof item.revokedAt === 'number') metrics.observe('revocation_propagation_seconds', undefined, Math.max(0, clock.now() - item.revokedAt) / 1000)
  }

  // The SSE stream: contiguous items apply at once; a gap is filled by a poll.
  async function follow(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream', 'last-event-id': String(seq) }
        if (opts.token !== undefined) headers['authorization'] = `Bearer ${typeof opts.token === 'string' ? opts.token : await opts.token()}`
        const res = await transport.request(target, { method: 'GET', path: `${path}/stream`, headers, timeoutMs, signal })
        if (res.status !== 200) {
          await res.dump()
          throw new NotReadyError('revocation stream unavailable', { details: { dependency: target, status: res.status } })
        }
        for await (const e of sseEvents(res.body, { signal })) {
          if (e.event !== 'revocation') continue
          let item: RevocationFeedItem
          try {
            item = JSON.parse(e.data) as RevocationFeedItem
          } catch {
            continue
          }
          if (item.seq === seq + 1 && synced) {
            apply(item)
            seq = item.seq
          } else if (item.seq > seq + 1) {
            void sync(signal).catch(() => undefined)
          }
        }
      } catch {
        // Reconnect after a pause; polling keeps the feed fresh meanwhile.
      }
      try {
        await clock.sleep(pollIntervalMs, signal)
      } catch {
        return
      }
    }
  }

  async function fetchPage(since: number, signal?: AbortSignal): Promise<RevocationFeedPage> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (opts.token !== undefined) headers['authorization'] = `Bearer ${typeof opts.token === 'string' ? opts.token : await opts.token()}`
    const res = await transport.request(target, {
      method: 'GET',
      path: `${path}?since=${since}`,
      headers,
      timeoutMs,
      ...(signal === undefined ? {} : { signal }),
    })
    if (res.status !== 200) throw await errorFromResponse(res)
    const page = await res.json<Partial<RevocationFeedPage>>()
    if (page === null || typeof page !== 'object' || typeof page.feedId !== 'string' || typeof page.seq !== 'number' || !Array.isArray(page.items)) {
      throw new NotReadyError('revocation feed answered something that is not a feed page', { details: { dependency: target } })
    }
    return page as RevocationFeedPage
  }

  async function syncOnce(signal?: AbortSignal): Promise<void> {
    const started = clock.now()
    for (let pages = 0; pages < 10_000; pages++) {
      const page = await fetchPage(seq, signal)
      if (feedId !== undefined && page.feedId !== feedId) {
        // Passport's history changed (a fresh in-memory passport): start over. Entries already
        // held stay revoked.
        feedId = page.feedId
        seq = 0
        continue
      }
      feedId = page.feedId
      for (const item of page.items) apply(item)
      seq = Math.max(seq, page.seq)
      if (!page.more) break
    }
    // The sync covers everything revoked before it started.
    lastSyncAt = Math.max(lastSyncAt ?? -Infinity, started)
    synced = true
  }

  function sync(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    inflight ??= syncOnce(signal).finally(() => {
      inflight = undefined
      notify()
    })
    return inflight
  }

  async function run(signal: AbortSignal): Promise<void> {
    notify()
    const streaming = opts.stream === true ? follow(signal) : undefined
    try {
      await poll(signal)
    } finally {
      await streaming
    }
  }

  async function poll(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await sync(signal)
      } catch {
        if (signal.aborted) return
        notify()
      }
      try {
        await clock.sleep(pollIntervalMs, signal)
      } catch {
        return
      }
    }
  }

  async function close(): Promise<void> {
    if (own === undefined) return
    own.abort.abort()
    await own.done
  }

  return {
    isRevoked: (jti) => set.isRevoked(jti),
    revokesDescendants: (jti) => set.revokesDescendants(jti),
    isStale,
    get seq() {
      return seq
    },
    get lastSyncAt() {
      return lastSyncAt
    },
    set,
    sync,
    run,
    start() {
      if (own !== undefined) return
      const abort = new AbortController()
      own = { abort, done: run(abort.signal) }
    },
    close,
    [Symbol.asyncDispose]: close,
  }
}
