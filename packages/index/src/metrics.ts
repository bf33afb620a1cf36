/**
 * The index's metrics, all registered at startup so a fresh `/metrics` shows each at zero
 * (SPEC §4). Names follow SPEC and the seed (svc-index section 9, *orig* names).
 *
 * @module
 */

import type { Counter, Gauge, Histogram } from 'prom-client'
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
  /** `rejected_total{reason}`: admission refusals and refused peer name records. */
  nameRecordsRejected: Counter<'reason'>
  nameConflicts: Gauge<string>
  storeFaults: Counter<'reason'>
  announcementsRefused: Counter<'reason'>
}

/** Every metric name the index registers, for the README and the startup test. */
export const INDEX_METRIC_NAMES: readonly string[] = [
  'resolve_latency_seconds',
  'index_cache_hits_total',
  'index_cache_misses_total',
  'dht_hedged_requests_total',
  'index_dht_lookup_ms',
  'io_timeouts_total',
  'resolve_deadline_hit_total',
  'index_integrity_fail_total',
  'index_names',
  'index_provider_records',
  'index_cache_entries',
  'index_announcements_total',
  'index_name_writes_total',
  'index_name_conflicts',
  'index_store_faults_total',
  'index_announcements_refused_total',
  'breaker_state',
  'breaker_open_total',
  'backoff_retries_total',
  'busy_rejections_total',
  'rejected_total',
  'queue_depth',
  'queue_dropped_total',
  'tasks_spawned_total',
  'tasks_aborted_total',
  'tasks_canceled_total',
  'bus_lagged_total',
  'http_requests_total',
  'http_request_duration_seconds',
]

/** Registers every metric of the index on `m` (at zero) and returns handles on the index's own. */
export function registerIndexMetrics(m: ServiceMetrics, peers: readonly string[]): IndexMetrics {
  const out: IndexMetrics = {
    resolveLatency: registered(m.registry, new TallyHistogram('resolve_latency_seconds', 'End-to-end resolve latency by answer source (cache, local, peer, none).', 'source', RESOLVE_BUCKETS)),
    cacheHits: registered(m.registry, new TallyCounter('index_cache_hits_total', 'Resolves answered from the positive or negative cache.', 'cache')),
    cacheMisses: m.counter('index_cache_misses_total', 'Resolves that missed both caches (or bypassed them with ?fresh).'),
    hedged: m.counter('dht_hedged_requests_total', 'Hedged (β) peer requests by outcome: won, lost (aborted or past the deadline), failed.', ['result']),
    lookupMs: m.histogram('index_dht_lookup_ms', 'Duration of hedged peer lookups, in milliseconds.', [], LOOKUP_BUCKETS_MS),
    ioTimeouts: m.counter('io_timeouts_total', 'Operations that exceeded their deadline.', ['op']),
    deadlineHits: m.counter('resolve_deadline_hit_total', 'Resolves that ran out of their end-to-end budget (504).'),
    integrityFail: m.counter('index_integrity_fail_total', 'Manifests whose bytes did not hash to their address.'),
    names: m.gauge('index_names', 'Names bound in the name store.'),
    providerRecords: m.gauge('index_provider_records', 'Provider records held (soft state).'),
    cacheEntries: m.gauge('index_cache_entries', 'Entries in the positive and negative caches.', ['cache']),
    announcements: m.counter('index_announcements_total', 'Provider announcements accepted.'),
    nameWrites: m.counter('index_name_writes_total', 'Name writes and deletes by result (ok, conflict, home_elsewhere, invalid_reference, not_ready).', ['result']),
    nameRecordsRejected: m.counter('rejected_total', 'Requests rejected by admission (per_ip, rate), peer name records refused (name_unsigned, name_unknown_home, name_bad_signature, name_stale) and peer-relayed providers at an endpoint their node does not advertise (provider_unknown_endpoint).', ['reason']),
    nameConflicts: m.gauge('index_name_conflicts', 'Names two remote homes both claim (the lower node id is believed; see conflicts()).'),
    storeFaults: m.counter('index_store_faults_total', 'Writes of the name store the disk refused, by reason (disk_full, io_error, read_only).', ['reason']),
    announcementsRefused: m.counter('index_announcements_refused_total', 'Provider announcements refused, by reason (not_own_node, bad_endpoint, unknown_endpoint).', ['reason']),
  }
  for (const source of ['cache', 'local', 'peer', 'none']) out.resolveLatency.labels({ source })
  for (const cache of ['positive', 'negative']) {
    out.cacheHits.labels({ cache })
    out.cacheEntries.labels({ cache }).set(0)
  }
  out.cacheMisses.inc(0)
  for (const result of ['won', 'lost', 'failed']) out.hedged.labels({ result }).inc(0)
  for (const op of ['resolve', 'peer', 'storage']) out.ioTimeouts.labels({ op }).inc(0)
  out.deadlineHits.inc(0)
  out.integrityFail.inc(0)
  out.names.set(0)
  out.providerRecords.set(0)
  out.announcements.inc(0)
  for (const result of ['ok', 'conflict', 'home_elsewhere', 'invalid_reference', 'not_ready']) out.nameWrites.labels({ result }).inc(0)
  for (const reason of ['per_ip', 'rate', ...NAME_RECORD_REJECTIONS, 'provider_unknown_endpoint']) out.nameRecordsRejected.labels({ reason }).inc(0)
  out.nameConflicts.set(0)
  for (const reason of ['disk_full', 'io_error', 'read_only']) out.storeFaults.labels({ reason }).inc(0)
  for (const reason of ANNOUNCE_REFUSALS) out.announcementsRefused.labels({ reason }).inc(0)

  const breakerState = m.gauge('breaker_state', 'Circuit breaker state per peer: 0 closed, 1 open, 2 half-open.', ['target'])
  const breakerOpen = m.counter('breaker_open_total', 'Times a peer breaker opened.', ['target'])
  for (const target of peers) {
    breakerState.labels({ target }).set(0)
    breakerOpen.labels({ target }).inc(0)
  }
  const retries = m.counter('backoff_retries_total', 'Retries of idempotent operations (peer queries).', ['op'])
  retries.labels({ op: 'peer' }).inc(0)
  m.counter('retries_total', 'Retries of idempotent operations.', ['op']).labels({ op: 'peer' }).inc(0)

  const busy = m.counter('busy_rejections_total', 'Requests or items rejected with Busy because a queue or limit was full.', ['endpoint', 'queue'])
  // The host labels a full work queue by the route that met it and the queue, admission refusals
  // by endpoint; a full provider table is a Busy of the announce route.
  for (const endpoint of new Set(Object.values(ROUTES))) busy.labels({ endpoint, queue: endpoint === ROUTES.names ? CHANNELS.names : CHANNELS.work }).inc(0)
  busy.labels({ endpoint: ROUTES.announce, queue: '' }).inc(0)
  busy.labels({ endpoint: 'admission', queue: '' }).inc(0)
  const depth = m.gauge('queue_depth', 'Items waiting in a bounded queue.', ['queue'])
  for (const queue of [CHANNELS.work, CHANNELS.names]) depth.labels({ queue }).set(0)
  m.counter('queue_dropped_total', 'Items evicted from drop-oldest queues.', ['queue']).labels({ queue: CHANNELS.events }).inc(0)
  const spawned = m.counter('tasks_spawned_total', 'Supervised tasks started (including restarts).', ['kind'])
  const aborted = m.counter('tasks_aborted_total', 'Tasks still running at the shutdown deadline and aborted.', ['kind'])
  const canceled = m.counter('tasks_canceled_total', 'Supervised tasks that ended because their signal aborted.', ['kind'])
  // Core's host: a request cut off at the drain deadline counts its pool worker as aborted; a
  // worker ended by its signal otherwise counts as canceled.
  for (const kind of ['request', 'work-worker', 'names-worker']) aborted.labels({ kind }).inc(0)
  for (const kind of ['work-worker', 'names-worker']) canceled.labels({ kind }).inc(0)
  void spawned
  m.counter('bus_lagged_total', 'Broadcast events a slow subscriber missed.', ['topic']).labels({ topic: CHANNELS.events }).inc(0)
  return out
}
