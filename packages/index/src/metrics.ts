/**
 * Every metric the index can emit, as ONE declaration (core's `defineMetrics`): the index's own
 * families with their zero series, and the label values of the SPEC/seed families core creates
 * (`busy_rejections_total` per endpoint, `io_timeouts_total` per op, `breaker_state` per peer…).
 * The host registers it at startup (SPEC §4: a fresh `/metrics` shows each of them); the README
 * lists the same names, and the conformance suite checks both ways. The two families of the
 * cache-hit path are plain tallies read at scrape time ({@link INDEX_TALLIES}, see `tally.ts`).
 *
 * @module
 */

import type { Counter, Gauge, Histogram } from 'prom-client'
import { defineMetrics } from '@ron/core'
import type { ServiceMetrics } from '@ron/core'
import { NAME_RECORD_REJECTIONS } from './name-record.js'
import { TallyCounter, TallyHistogram, registered } from './tally.js'
import { CHANNELS, ROUTES } from './topology.js'

/** Buckets of `resolve_latency_seconds`: around the 150 ms hedge and the 1200 ms budget. */
export const RESOLVE_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 0.75, 1, 1.2, 2]
/** Buckets of `index_dht_lookup_ms`, in milliseconds. */
export const LOOKUP_BUCKETS_MS: readonly number[] = [1, 5, 10, 25, 50, 100, 150, 250, 500, 750, 1000, 1200, 2000]

/** Why an announcement was refused: `index_announcements_refused_total{reason}` and the error's `details.reason`. */
export const ANNOUNCE_REFUSALS = ['not_own_node', 'bad_endpoint', 'unknown_endpoint'] as const

/** Handles on the index's own metrics. */
export interface IndexMetrics {
  /** A plain tally (the cache-hit path is hot), read when the registry is scraped. */
  resolveLatency: TallyHistogram
  /** A plain tally (the cache-hit path is hot), read when the registry is scraped. */
  cacheHits: TallyCounter
  cacheMisses: Counter<string>
  hedged: Counter<'result'>
  lookupMs: Histogram<string>
  ioTimeouts: Counter<'op'>
  deadlineHits: Counter<string>
  integrityFail: Counter<string>
  names: Gauge<string>
  providerRecords: Gauge<string>
  cacheEntries: Gauge<'cache'>
  announcements: Counter<string>
  nameWrites: Counter<'result'>
  /** `rejected_total{reason}`: per-IP admission refusals and refused peer name records. */
  nameRecordsRejected: Counter<'reason'>
  nameConflicts: Gauge<string>
  storeFaults: Counter<'reason'>
  /** `index_record_writebacks_total{result}`: records signed on serve, written back or not. */
  writeBacks: Counter<'result'>
  announcementsRefused: Counter<'reason'>
  /** `index_admin_total{action,result}`: admin reindex and pin/unpin requests. */
  admin: Counter<'action' | 'result'>
  /** `index_pinned_keys`: keys pinned in the positive cache. */
  pinned: Gauge<string>
}

/** The endpoints whose 429s are labelled by route (a full `work` queue, a service-wide limit). */
const ENDPOINTS = [...new Set(Object.values(ROUTES))]

/** Why `rejected_total` counts a request or a record. */
export const REJECTED_REASONS = ['per_ip', 'per_ip_rate', ...NAME_RECORD_REJECTIONS, 'provider_unknown_endpoint'] as const

/** The index's metrics (names from SPEC §4 and seed svc-index section 9, *orig* names). */
export const INDEX_METRICS = defineMetrics(
  {
    index_cache_misses_total: { type: 'counter', help: 'Resolves that missed both caches (or bypassed them with ?fresh).' },
    dht_hedged_requests_total: { type: 'counter', help: 'Hedged (β) peer requests by outcome: won, lost (aborted or past the deadline), failed.', labels: ['result'], zero: { result: ['won', 'lost', 'failed'] } },
    index_dht_lookup_ms: { type: 'histogram', help: 'Duration of hedged peer lookups, in milliseconds.', buckets: LOOKUP_BUCKETS_MS },
    resolve_deadline_hit_total: { type: 'counter', help: 'Resolves that ran out of their end-to-end budget (504).' },
    index_integrity_fail_total: { type: 'counter', help: 'Manifests whose bytes did not hash to their address.' },
    index_names: { type: 'gauge', help: 'Names bound in the name store.' },
    index_provider_records: { type: 'gauge', help: 'Provider records held (soft state).' },
    index_cache_entries: { type: 'gauge', help: 'Entries in the positive and negative caches.', labels: ['cache'], zero: { cache: ['positive', 'negative'] } },
    index_announcements_total: { type: 'counter', help: 'Provider announcements accepted.' },
    index_name_writes_total: {
      type: 'counter',
      help: 'Name writes and deletes by result (ok, conflict, home_elsewhere, invalid_reference, not_ready).',
      labels: ['result'],
      zero: { result: ['ok', 'conflict', 'home_elsewhere', 'invalid_reference', 'not_ready'] },
    },
    rejected_total: {
      type: 'counter',
      help: 'Requests refused by the per-IP admission (per_ip, per_ip_rate), peer name records refused (name_unsigned, name_unknown_home, name_bad_signature, name_stale) and peer-relayed providers at an endpoint their node does not advertise (provider_unknown_endpoint).',
      labels: ['reason'],
      zero: { reason: REJECTED_REASONS },
    },
    index_name_conflicts: { type: 'gauge', help: 'Names two remote homes both claim (the lower node id is believed; see conflicts()).' },
    index_record_writebacks_total: {
      type: 'counter',
      help: 'Records signed on serve and written back to the name store, by result (landed, stale: the name was written since, failed: the store refused the write-back, dropped: too many waiting).',
      labels: ['result'],
      zero: { result: ['landed', 'stale', 'failed', 'dropped'] },
    },
    index_store_faults_total: { type: 'counter', help: 'Writes of the name store the disk refused, by reason (disk_full, io_error, read_only).', labels: ['reason'], zero: { reason: ['disk_full', 'io_error', 'read_only'] } },
    index_announcements_refused_total: { type: 'counter', help: 'Provider announcements refused, by reason (not_own_node, bad_endpoint, unknown_endpoint).', labels: ['reason'], zero: { reason: ANNOUNCE_REFUSALS } },
    breaker_open_total: { type: 'counter', help: 'Times a peer breaker opened.', labels: ['target'] },
    index_admin_total: {
      type: 'counter',
      help: 'Admin requests by action (reindex, pin, unpin) and result (ok, replayed: a reindex answered from its Idempotency-Key).',
      labels: ['action', 'result'],
      zero: [
        { action: 'reindex', result: 'ok' },
        { action: 'reindex', result: 'replayed' },
        { action: 'pin', result: 'ok' },
        { action: 'unpin', result: 'ok' },
      ],
    },
    index_pinned_keys: { type: 'gauge', help: 'Keys pinned by an admin: their cached answers are kept past their TTL and the cache bound.' },
  },
  {
    io_timeouts_total: { op: ['resolve', 'peer', 'storage'] },
    backoff_retries_total: { op: ['peer'] },
    // The host labels a full work queue by the route that met it and the queue, per-IP refusals by
    // the admission; a full provider table is a Busy of the announce route.
    busy_rejections_total: [
      ...ENDPOINTS.map((endpoint) => ({ endpoint, queue: endpoint === ROUTES.names ? CHANNELS.names : CHANNELS.work })),
      { endpoint: ROUTES.announce, queue: '' },
      { endpoint: 'admission', queue: '' },
    ],
    queue_depth: { queue: [CHANNELS.work, CHANNELS.names] },
    // Core's host: a request cut off at the drain deadline counts its pool worker as aborted; a
    // worker ended by its signal otherwise counts as canceled.
    tasks_aborted_total: { kind: ['request', 'work-worker', 'names-worker'] },
    tasks_canceled_total: { kind: ['work-worker', 'names-worker'] },
    bus_lagged_total: { topic: [CHANNELS.events] },
  },
)

/** The cache-hit path's families, kept as plain tallies (see `tally.ts`) and registered beside {@link INDEX_METRICS}. */
export const INDEX_TALLIES = {
  resolve_latency_seconds: { type: 'histogram', help: 'End-to-end resolve latency by answer source (cache, local, peer, none).', labels: ['source'] },
  index_cache_hits_total: { type: 'counter', help: 'Resolves answered from the positive or negative cache.', labels: ['cache'] },
} as const

/** Every metric name the index registers (its own, the tallies, and the SPEC/seed families it shows), as the README lists them. */
export const INDEX_METRIC_NAMES: readonly string[] = [
  ...Object.keys(INDEX_TALLIES),
  ...Object.keys(INDEX_METRICS.table),
  ...Object.keys(INDEX_METRICS.seed),
  'breaker_state',
  'tasks_spawned_total',
]

/** Registers every metric of the index on `m` (at zero) and returns handles on the index's own. */
export function registerIndexMetrics(m: ServiceMetrics, peers: readonly string[]): IndexMetrics {
  const h = m.register(INDEX_METRICS)
  for (const target of peers) {
    m.zero('breaker_state', { target })
    h.breaker_open_total.inc({ target }, 0)
  }
  const t = INDEX_TALLIES
  const out: IndexMetrics = {
    resolveLatency: registered(m.registry, new TallyHistogram('resolve_latency_seconds', t.resolve_latency_seconds.help, 'source', RESOLVE_BUCKETS)),
    cacheHits: registered(m.registry, new TallyCounter('index_cache_hits_total', t.index_cache_hits_total.help, 'cache')),
    cacheMisses: h.index_cache_misses_total,
    hedged: h.dht_hedged_requests_total,
    lookupMs: h.index_dht_lookup_ms,
    ioTimeouts: m.counter('io_timeouts_total', 'Operations that exceeded their deadline.', ['op']),
    deadlineHits: h.resolve_deadline_hit_total,
    integrityFail: h.index_integrity_fail_total,
    names: h.index_names,
    providerRecords: h.index_provider_records,
    cacheEntries: h.index_cache_entries,
    announcements: h.index_announcements_total,
    nameWrites: h.index_name_writes_total,
    nameRecordsRejected: h.rejected_total,
    nameConflicts: h.index_name_conflicts,
    storeFaults: h.index_store_faults_total,
    writeBacks: h.index_record_writebacks_total,
    announcementsRefused: h.index_announcements_refused_total,
    admin: h.index_admin_total,
    pinned: h.index_pinned_keys,
  }
  for (const source of ['cache', 'local', 'peer', 'none']) out.resolveLatency.labels({ source })
  for (const cache of ['positive', 'negative']) out.cacheHits.labels({ cache })
  return out
}
