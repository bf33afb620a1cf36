/**
 * The resolve pipeline (seed section 2, "Resolver Workers"): positive cache → negative cache →
 * local store → hedged peer lookup → rank. Runs inside a `work` job of the resolver pool. Reads
 * one config snapshot per resolve (never a torn mix of two configs).
 *
 * @module
 */

import { BreakerOpenError, NotFoundError, TimeoutError, UnavailableError, isRonError, parseAddress } from '@ron/core'
import type { Address, Clock, MetricsSink, NodeDirectory, Random, Reply, Transport } from '@ron/core'
import { isNameResolution, type AnswerSource, type NameResolution, type RankedProvider, type Resolution } from './answer.js'
import type { BreakerTable, PeerHealth } from './breakers.js'
import { jitteredTtl, type CacheEntry, type TtlCache } from './cache.js'
import type { ResolvedIndexConfig } from './config.js'
import { hedgedLookup } from './hedge.js'
import type { IndexMetrics } from './metrics.js'
import { verifyManifestText } from './manifest-fetch.js'
import { checkName } from './names.js'
import { verifyNameRecord, type NameRecordRejection, type SignedNameRecord, type StoredNameRecord } from './name-record.js'
import { queryPeer } from './peer-client.js'
import type { ProviderTable } from './providers.js'
import { rank, scoreFromPeer, scoreLocal } from './ranking.js'
import type { RemoteNames } from './remote-names.js'
import type { NameRecord, NameStore } from './store/types.js'

/** A cached answer: a resolution without its per-reply fields. */
export type CachedAnswer = Omit<NameResolution, 'source' | 'ttlSec'> | { key: Address; providers: RankedProvider[] }

/** Per-resolve options. */
export interface ResolveOptions {
  /** Bypass both caches (the answer still refreshes them). */
  fresh?: boolean
  /** The query comes from a peer index: answer from cache and store only. */
  peer?: boolean
  signal?: AbortSignal
  /** When the request arrived (start of the end-to-end budget). @default now */
  startedAt?: number
  /** The request's correlation id, carried to the peers asked (`X-Corr-ID`). @default none */
  corrId?: string
}

/** What the resolver works with. */
export interface ResolverDeps {
  config: () => ResolvedIndexConfig
  store: NameStore
  providers: ProviderTable
  cache: TtlCache<CachedAnswer>
  negative: TtlCache<true>
  breakers: BreakerTable
  transport: Transport | undefined
  clock: Clock
  random: Random
  sink: MetricsSink
  metrics: IndexMetrics
  /** The nodes whose records are believed (their pinned keys); none: no peer's name answer is. */
  nodes: NodeDirectory | undefined
  /** This node's id: the home of every name in `store`. */
  selfId: string
  /** Names homed elsewhere, as learnt from verified peer records. */
  remote: RemoteNames
  /** The signed record of a local binding (signs one written before records were signed). */
  recordOf(name: string, binding: NameRecord): SignedNameRecord
  /** The signed record of a local tombstone. */
  tombstoneOf(tombstone: StoredNameRecord): SignedNameRecord
}

/**
 * The serialised replies of one positive-cache entry at one `ttlSec` (the only per-request part of
 * a hit's answer): built on the first hit of each second, shared by every hit until then.
 */
interface ReplyMemo {
  ttlSec: number
  /** For clients (no manifest text). */
  client: Reply | undefined
  /** For peer indexes (`x-ron-peer: 1`: with the manifest text). */
  peer: Reply | undefined
}

/** What {@link Resolver} peer lookups answer when every peer asked failed. */
const UNAVAILABLE = Symbol('peers unavailable')
/** What {@link Resolver} peer lookups answer when no peer could be asked: every breaker is open. */
const BREAKERS_OPEN = Symbol('every breaker open')
/** A peer lookup that found no answer because of an outage, not because nothing is known. */
type Outage = typeof UNAVAILABLE | typeof BREAKERS_OPEN

function isOutage(v: unknown): v is Outage {
  return v === UNAVAILABLE || v === BREAKERS_OPEN
}

/** A parsed resolve key. */
export type ParsedKey = { kind: 'address'; key: Address } | { kind: 'name'; key: string }

/**
 * Parses a resolve key: a `b3:` address or a name.
 * @throws {@link MalformedError} naming `field`.
 */
export function parseKey(raw: string, field = 'key'): ParsedKey {
  if (raw.startsWith('b3:')) return { kind: 'address', key: parseAddress(raw, field) }
  return { kind: 'name', key: checkName(raw, field) }
}

/** The resolver. */
export class Resolver {
  readonly #d: ResolverDeps
  // Label children looked up once: the cache-hit path is hot.
  readonly #latencies = new Map<string, { observe(v: number): void }>()
  readonly #hitPositive: { inc(): void }
  readonly #hitNegative: { inc(): void }
  readonly #hitLatency: { observe(v: number): void }

  constructor(deps: ResolverDeps) {
    this.#d = deps
    this.#hitPositive = deps.metrics.cacheHits.labels({ cache: 'positive' })
    this.#hitNegative = deps.metrics.cacheHits.labels({ cache: 'negative' })
    this.#hitLatency = this.#latency('cache')
  }

  #latency(source: string): { observe(v: number): void } {
    let h = this.#latencies.get(source)
    if (h === undefined) {
      h = this.#d.metrics.resolveLatency.labels({ source })
      this.#latencies.set(source, h)
    }
    return h
  }

  /**
   * Answers from the caches alone: the listener's fast path, run without entering the `work`
   * queue (a cache hit costs less than the queue hop). Counts the hit and its latency.
   * @returns the cached answer, or `undefined` on a miss or with `fresh`.
   * @throws {@link MalformedError} for a bad key; {@link NotFoundError} on a negative-cache hit.
   */
  fromCache(raw: string, o: ResolveOptions = {}): Resolution | undefined {
    const parsed = parseKey(raw)
    if (o.fresh === true) return undefined
    const started = o.startedAt ?? this.#d.clock.now()
    const r = this.#cached(parsed)
    if (r === undefined) return undefined
    this.#latency('cache').observe(Math.max(0, this.#d.clock.now() - started) / 1000)
    return forCaller(r, o)
  }

  /**
   * A cache hit as a ready reply, for the listener's fast path: one map lookup, and the answer's
   * JSON text kept with the cache entry (rebuilt once a second, when its `ttlSec` changes), so a
   * hit costs neither key parsing, nor an answer object, nor serialisation. The bytes are exactly
   * what {@link resolve} would answer. Counts the hit and its latency.
   * @param peer the query comes from a peer index (its answer carries the manifest text)
   * @returns the reply, or `undefined` on a miss (the key is then validated).
   * @throws {@link MalformedError} for a bad key; {@link NotFoundError} on a negative-cache hit.
   */
  cachedReply(raw: string, peer: boolean, startedAt: number): Reply | undefined {
    const d = this.#d
    const now = d.clock.now()
    // Only parsed keys are ever cached, and parsing leaves a valid key as it is: a key found in a
    // cache is a valid one, so parsing can wait for a miss.
    const e = d.cache.get(raw, now)
    if (e === undefined) {
      if (d.negative.get(raw, now) !== undefined) {
        this.#hitNegative.inc()
        throw notFound(raw, 'negative_cache')
      }
      parseKey(raw)
      return undefined
    }
    this.#hitPositive.inc()
    const ttlSec = Math.max(1, Math.ceil((e.expiresAt - now) / 1000))
    let m = e.memo as ReplyMemo | undefined
    if (m === undefined || m.ttlSec !== ttlSec) e.memo = m = { ttlSec, client: undefined, peer: undefined }
    const reply = (peer ? m.peer : m.client) ?? this.#replyOf(e, m, peer)
    this.#hitLatency.observe(Math.max(0, d.clock.now() - startedAt) / 1000)
    return reply
  }

  #replyOf(e: CacheEntry<CachedAnswer>, m: ReplyMemo, peer: boolean): Reply {
    const r = forCaller({ ...e.value, source: 'cache', ttlSec: m.ttlSec }, { peer })
    const reply: Reply = { status: 200, headers: { 'cache-control': `max-age=${m.ttlSec}`, 'content-type': 'application/json' }, body: JSON.stringify(r) }
    // Without a manifest text both callers get the same bytes.
    if (!('manifestText' in e.value) || e.value.manifestText === undefined) m.client = m.peer = reply
    else if (peer) m.peer = reply
    else m.client = reply
    return reply
  }

  /**
   * Resolves `key`: caches, local store, then peers.
   * @throws {@link MalformedError} for a bad key, {@link NotFoundError} (remembered in the negative
   *   cache), {@link TimeoutError} when the end-to-end budget runs out.
   */
  async resolve(raw: string, o: ResolveOptions = {}): Promise<Resolution> {
    const parsed = parseKey(raw)
    const started = o.startedAt ?? this.#d.clock.now()
    let source: AnswerSource | 'none' = 'none'
    try {
      const r = (o.fresh === true ? undefined : this.#cached(parsed)) ?? (await this.#resolve(parsed, o, started))
      source = r.source
      return forCaller(r, o)
    } finally {
      this.#latency(source).observe(Math.max(0, this.#d.clock.now() - started) / 1000)
    }
  }

  /** Forgets cached answers for `key` (after a name write or an announcement). */
  invalidate(key: string): void {
    this.#d.cache.delete(key)
    this.#d.negative.delete(key)
  }

  /** A positive-cache hit, `undefined` on a miss; throws NotFound on a negative-cache hit. */
  #cached(p: ParsedKey): Resolution | undefined {
    const d = this.#d
    const now = d.clock.now()
    const hit = d.cache.get(p.key, now)
    if (hit !== undefined) {
      this.#hitPositive.inc()
      return { ...hit.value, source: 'cache', ttlSec: Math.max(1, Math.ceil((hit.expiresAt - now) / 1000)) }
    }
    if (d.negative.get(p.key, now) !== undefined) {
      this.#hitNegative.inc()
      throw notFound(p.key, 'negative_cache')
    }
    return undefined
  }

  async #resolve(p: ParsedKey, o: ResolveOptions, started: number): Promise<Resolution> {
    const d = this.#d
    const cfg = d.config()
    d.metrics.cacheMisses.inc()
    const deadlineAt = started + cfg.deadlineMs

    let answer: CachedAnswer | undefined
    let source: AnswerSource = 'local'
    let outage: Outage | undefined
    try {
      answer = p.kind === 'address' ? this.#localAddress(p.key, cfg) : await this.#localName(p.key, cfg, o, deadlineAt)
      if (answer === undefined && o.peer !== true) {
        source = 'peer'
        const r = await this.#fromPeers(p, cfg, o, deadlineAt)
        if (isOutage(r)) outage = r
        else answer = r
      }
    } catch (e) {
      if (isRonError(e, 'Timeout')) {
        d.metrics.deadlineHits.inc()
        d.metrics.ioTimeouts.inc({ op: 'resolve' })
      }
      throw e
    }
    const negativeTtl = (): number => jitteredTtl(cfg.cache.negativeTtlMs, cfg.cache.negativeJitter, () => d.random.next())
    if (answer === undefined) {
      // A peer query only says "not here": remembering it would make this node's own clients
      // skip the peers for that key. Nor is it remembered when no peer could answer (every one
      // asked failed, or every breaker is open): that is an outage, not an answer, and the key
      // must resolve as soon as the peers are back.
      // A fresh "not found" (a name deleted at its home) replaces what was cached before it, so
      // the next cached read does not serve the old binding for the rest of its TTL.
      // An outage is a 503 (BreakerOpen when no peer could be asked, Unavailable when every peer
      // asked failed), never "does not exist".
      if (outage !== undefined) throw outageError(p.key, outage, cfg)
      if (o.peer !== true) {
        d.cache.delete(p.key)
        d.negative.set(p.key, true, d.clock.now() + negativeTtl())
      }
      throw notFound(p.key, o.peer === true ? 'not_local' : 'not_found')
    }
    // A name whose content has no known provider yet is kept only as briefly as a NotFound, so
    // the providers show up soon after storage announces them.
    const ttlMs = answer.providers.length === 0 ? negativeTtl() : cfg.cache.ttlMs
    d.cache.set(p.key, answer, d.clock.now() + ttlMs)
    return { ...answer, source, ttlSec: Math.max(1, Math.ceil(ttlMs / 1000)) }
  }

  #localAddress(address: Address, cfg: ResolvedIndexConfig): CachedAnswer | undefined {
    const records = this.#d.providers.lookup(address, this.#d.clock.now())
    if (records.length === 0) return undefined
    return { key: address, providers: rank([scoreLocal(records, this.#d.clock.now())], cfg.maxProviders) }
  }

  /**
   * A name homed here. A name deleted here answers NotFound at once with its signed tombstone
   * (`details.record`), so peers learn the delete; it is never looked up at the peers, whose
   * records could only be older or another home's claim on a name homed here.
   */
  async #localName(name: string, cfg: ResolvedIndexConfig, o: ResolveOptions, deadlineAt: number): Promise<CachedAnswer | undefined> {
    const rec = this.#d.store.get(name)
    if (rec === undefined) {
      const tombstone = this.#d.store.tombstone(name)
      if (tombstone !== undefined) throw notFound(name, 'deleted', this.#d.tombstoneOf(tombstone))
      return undefined
    }
    const record = this.#d.recordOf(name, rec)
    if (rec.kind === 'dir' || rec.manifest === undefined) {
      // A directory: its manifest is what a reader fetches first, so its providers are the answer's.
      const providers = await this.#contentProviders(rec.manifestAddress, [], cfg, o, deadlineAt)
      return { key: name, manifestAddress: rec.manifestAddress, kind: 'dir', record, providers }
    }
    const providers = await this.#contentProviders(rec.manifest.content, [], cfg, o, deadlineAt)
    return { key: name, manifestAddress: rec.manifestAddress, kind: 'file', manifest: rec.manifest, ...(rec.manifestText === undefined ? {} : { manifestText: rec.manifestText }), record, providers }
  }

  /**
   * The record of `name` at its home elsewhere, if any: what verified peer answers taught, or —
   * when nothing is known and peers can be asked — a fresh lookup at the peers. Peers that cannot
   * be reached leave the name unknown (a write goes ahead; two homes then resolve by node id).
   * @throws the signal's reason when `signal` aborts.
   */
  async remoteHome(name: string, signal: AbortSignal): Promise<SignedNameRecord | undefined> {
    const d = this.#d
    const known = d.remote.get(name)
    if (known !== undefined || d.nodes === undefined) return known
    const cfg = d.config()
    try {
      await this.#askPeers({ kind: 'name', key: name }, cfg, { fresh: true, signal }, d.clock.now() + cfg.deadlineMs)
    } catch (e) {
      if (signal.aborted) throw e
    }
    return d.remote.get(name)
  }

  /**
   * Providers of a manifest's content: the local table merged with what a peer already sent; when
   * both are empty (and this is not a peer query), a peer lookup of the content address within
   * what is left of the budget. A name answer never fails for want of providers.
   */
  async #contentProviders(content: Address, fromPeer: RankedProvider[], cfg: ResolvedIndexConfig, o: ResolveOptions, deadlineAt: number): Promise<RankedProvider[]> {
    const local = scoreLocal(this.#d.providers.lookup(content, this.#d.clock.now()), this.#d.clock.now())
    let providers = rank([local, fromPeer], cfg.maxProviders)
    if (providers.length > 0 || o.peer === true || cfg.peers.targets.length === 0) return providers
    try {
      const a = await this.#fromPeers({ kind: 'address', key: content }, cfg, o, deadlineAt)
      if (a !== undefined && !isOutage(a)) providers = a.providers
    } catch (e) {
      if (!isRonError(e, 'Timeout') && !isRonError(e, 'NotFound')) throw e
    }
    return providers
  }

  /**
   * Asks the peers. @returns the answer, `undefined` when there are no peers or a peer said "not
   * found", {@link BREAKERS_OPEN} when no peer could be asked (every breaker open), {@link
   * UNAVAILABLE} when every peer asked failed.
   */
  async #fromPeers(p: ParsedKey, cfg: ResolvedIndexConfig, o: ResolveOptions, deadlineAt: number): Promise<CachedAnswer | undefined | Outage> {
    const out = await this.#askPeers(p, cfg, o, deadlineAt)
    if (out === undefined || isOutage(out)) return out
    const peerProviders = scoreFromPeer(this.#knownProviders(out.value.providers), out.peer.health, out.peer.latencyMs)
    if (isNameResolution(out.value)) {
      const v = out.value
      if (v.manifest === undefined) {
        const providers = await this.#contentProviders(v.manifestAddress, peerProviders, cfg, o, deadlineAt)
        return { key: p.key, manifestAddress: v.manifestAddress, kind: 'dir', record: v.record, providers }
      }
      const providers = await this.#contentProviders(v.manifest.content, peerProviders, cfg, o, deadlineAt)
      return { key: p.key, manifestAddress: v.manifestAddress, kind: 'file', manifest: v.manifest, ...(v.manifestText === undefined ? {} : { manifestText: v.manifestText }), record: v.record, providers }
    }
    return { key: p.key as Address, providers: rank([peerProviders], cfg.maxProviders) }
  }

  /** The hedged lookup itself: the first answer that passes every check, with the peer that gave it. */
  async #askPeers(p: ParsedKey, cfg: ResolvedIndexConfig, o: ResolveOptions, deadlineAt: number): Promise<{ value: Resolution; peer: PeerHealth } | undefined | Outage> {
    const d = this.#d
    const transport = d.transport
    if (transport === undefined || cfg.peers.targets.length === 0) return undefined
    const candidates = this.#candidates()
    if (candidates.length === 0) return BREAKERS_OPEN
    const started = d.clock.now()
    const env = { transport, clock: d.clock, random: d.random, metrics: d.sink, cfg, ...(o.corrId === undefined ? {} : { corrId: o.corrId }) }
    try {
      // A job that waited in the queue past its budget asks nobody: that is a timeout, not an outage.
      if (started >= deadlineAt) throw new TimeoutError('resolve deadline exceeded', { details: { asked: 0, pending: 0 } })
      const out = await hedgedLookup<PeerHealth, Resolution>({
        candidates,
        alpha: cfg.peers.alpha,
        beta: cfg.peers.beta,
        hedgeMs: this.#hedgeDelay(candidates.slice(0, cfg.peers.alpha), cfg),
        deadlineAt,
        clock: d.clock,
        ...(o.signal === undefined ? {} : { signal: o.signal }),
        call: async (peer, signal) => {
          const reply = await queryPeer(env, peer, p.key, deadlineAt, signal, o.fresh === true)
          if (!reply.found) {
            // A NotFound from a name's home carries its signed tombstone: believed like a binding.
            if (p.kind === 'name' && reply.tombstone !== undefined) this.#believe(p.key, reply.tombstone, null)
            return undefined
          }
          const r = reply.answer
          // Only an answer for the key asked, of the kind asked for, satisfies the lookup.
          if (r.key !== p.key) return undefined
          if (!('manifestAddress' in r)) {
            if (p.kind !== 'address') return undefined
            // Only providers at endpoints their node advertises count: an answer of nothing else
            // does not satisfy the lookup, so another peer's answer is awaited.
            const providers = this.#knownProviders(r.providers)
            return providers.length > 0 ? { ...r, providers } : undefined
          }
          if (p.kind !== 'name') return undefined
          if (r.kind === 'dir') {
            // A directory answer carries no manifest, only its address: the record its home
            // signed for that very binding is the whole proof (SPEC §6a); whoever reads the
            // manifest checks it against the address.
            const record = this.#believe(p.key, r.record, r.manifestAddress)
            if (record === undefined) return undefined
            const { manifest: _m, manifestText: _t, ...rest } = r
            return { ...rest, kind: 'dir', record }
          }
          // A file answer is used only with the manifest's exact text, and only if that text
          // hashes to the manifest address: a peer cannot hand out a manifest of its own making.
          const manifest = verifyManifestText(r.manifestAddress, r.manifestText)
          if (manifest === undefined) {
            d.metrics.integrityFail.inc()
            return undefined
          }
          // And only with a record its home signed for that very binding (SPEC §6a).
          const record = this.#believe(p.key, r.record, r.manifestAddress)
          if (record === undefined) return undefined
          return { ...r, kind: 'file', manifest, record }
        },
        onHedge: (result) => d.metrics.hedged.inc({ result }),
      })
      if (!out.found) return out.asked > 0 && out.errors === out.asked ? UNAVAILABLE : undefined
      return out
    } catch (e) {
      if (e instanceof TimeoutError) d.metrics.ioTimeouts.inc({ op: 'peer' })
      throw e
    } finally {
      d.metrics.lookupMs.observe(d.clock.now() - started)
    }
  }

  /**
   * Checks a name record a peer sent for `name` with an answer binding it to `manifestAddress`
   * (`null`: a tombstone): it must verify under the pinned key of its home, say what the answer
   * says, not be a record of a name homed here, and be the newest known of the home that holds the
   * name. Refusals are counted in `rejected_total{reason}`.
   * @returns the record when it is believed.
   */
  #believe(name: string, raw: unknown, manifestAddress: Address | null): SignedNameRecord | undefined {
    const d = this.#d
    const refuse = (reason: NameRecordRejection): undefined => {
      d.metrics.nameRecordsRejected.inc({ reason })
      return undefined
    }
    const v = verifyNameRecord(raw, name, d.nodes)
    if (!v.ok) return refuse(v.reason)
    if (v.record.manifestAddress !== manifestAddress) return refuse('name_bad_signature')
    // A record of this node's own that this node no longer holds is old news, never an answer.
    if (v.record.node === d.selfId) return refuse('name_stale')
    const offered = d.remote.offer(v.record, d.clock.now())
    d.metrics.nameConflicts.set(d.remote.conflictCount)
    if (offered === 'stale') return refuse('name_stale')
    // Another home with a lower node id holds the name: the conflict is recorded, this answer lost.
    if (offered === 'lost') return undefined
    return v.record
  }

  /**
   * The providers of a peer's answer this index passes on. A peer relays announcements; it does
   * not make them (SPEC §6a "Announcements belong to their node"): with a node directory, a
   * provider counts only when its endpoint is a URL the node it names advertises, as for `POST
   * /providers`. Any other (an internal URL, another node's URL, a target name, `javascript:`) is
   * dropped and counted in `rejected_total{reason="provider_unknown_endpoint"}`, so it never
   * reaches a reader nor displaces that node's genuine record in the ranking. Without a directory
   * (embedded, in-process transports) every provider is passed on.
   */
  #knownProviders(providers: RankedProvider[]): RankedProvider[] {
    const nodes = this.#d.nodes
    if (nodes === undefined) return providers
    let kept: RankedProvider[] | undefined
    for (let i = 0; i < providers.length; i++) {
      const p = providers[i]!
      if (nodes.byEndpoint(p.endpoint)?.id === p.node) {
        kept?.push(p)
        continue
      }
      // The common case (every provider known) allocates nothing.
      kept ??= providers.slice(0, i)
      this.#d.metrics.nameRecordsRejected.inc({ reason: 'provider_unknown_endpoint' })
    }
    return kept ?? providers
  }

  /** Peers worth asking, best first: not open, healthier first, then faster (unknown = untried, first). */
  #candidates(): PeerHealth[] {
    const peers = this.#d.breakers.all().filter((p) => p.breaker.state !== 'open')
    return peers
      .map((p, i) => ({ p, i, h: p.health, l: p.latencyMs ?? 0 }))
      .sort((a, b) => b.h - a.h || a.l - b.l || a.i - b.i)
      .map((x) => x.p)
  }

  #hedgeDelay(alpha: PeerHealth[], cfg: ResolvedIndexConfig): number {
    if (!cfg.peers.hedgeFromP95) return cfg.peers.hedgeMs
    let p95: number | undefined
    for (const peer of alpha) {
      const v = peer.p95Ms
      if (v !== undefined) p95 = Math.max(p95 ?? 0, v)
    }
    if (p95 === undefined) return cfg.peers.hedgeMs
    return Math.min(cfg.peers.hedgeMs * 4, Math.max(cfg.peers.hedgeMs / 4, p95))
  }
}

/** The manifest's text travels to peer indexes only; other callers get the parsed manifest. */
function forCaller(r: Resolution, o: ResolveOptions): Resolution {
  if (o.peer === true || !isNameResolution(r) || r.manifestText === undefined) return r
  const { manifestText: _text, ...rest } = r
  return rest
}

/** The 503 of a lookup that found nothing because the peers are out: retry once they may be back. */
function outageError(key: string, outage: Outage, cfg: ResolvedIndexConfig): BreakerOpenError | UnavailableError {
  if (outage === BREAKERS_OPEN) {
    return new BreakerOpenError(`nothing known for '${key}' here, and every peer's breaker is open`, { details: { key, reason: 'breakers_open' }, retryAfterMs: cfg.breaker.cooldownMs })
  }
  return new UnavailableError(`nothing known for '${key}' here, and no peer could answer`, { details: { key, reason: 'peers_unavailable' }, retryAfterMs: Math.max(1000, cfg.peers.hedgeMs) })
}

function notFound(key: string, reason: string, record?: SignedNameRecord): NotFoundError {
  return new NotFoundError(`nothing known for '${key}'`, { details: { key, reason, ...(record === undefined ? {} : { record }) } })
}
