/**
 * The index's parts, built on a service host: caches, provider table, breaker table, resolver,
 * disk gate, admin state and the route context. `service.ts` wires them, `tasks.ts` runs the
 * janitors over them.
 *
 * @module
 */

import type { Broadcast, NodeDirectory, NodeIdentity, Random, ServiceHost, Transport } from '@ron/core'
import { IdempotencyCache } from './admin.js'
import { BreakerTable } from './breakers.js'
import { TtlCache } from './cache.js'
import type { ResolvedIndexConfig } from './config.js'
import { DiskGate } from './disk-gate.js'
import { registerIndexMetrics, type IndexMetrics } from './metrics.js'
import { RecordSigner, type SignedNameRecord, type StoredNameRecord } from './name-record.js'
import { ProviderTable } from './providers.js'
import { RemoteNames } from './remote-names.js'
import { Resolver, type CachedAnswer } from './resolver.js'
import type { IndexContext, IndexEvent } from './routes/index.js'
import type { NameRecord, NameStore } from './store/index.js'
import { CHANNELS } from './topology.js'
import { SignatureWriteBack } from './write-back.js'

/**
 * The record of a binding homed on `signer`'s node, as served: the kept one when it is this node's
 * and says what the binding says (signed now unless it was kept signed), otherwise one signed now
 * from the binding (`signedAt` = when it was written, so the signature is the same every time:
 * Ed25519 is deterministic).
 */
export function recordOfBinding(signer: RecordSigner, selfId: string, name: string, b: NameRecord, writeBack?: SignatureWriteBack): SignedNameRecord {
  const r = b.record
  if (r !== undefined && r.node === selfId && r.name === name && r.manifestAddress === b.manifestAddress) {
    if (r.sig !== undefined) return r as SignedNameRecord
    // Kept unsigned: signed now, and the signature written back (at most once per write).
    const signed = signer.record(name, r.manifestAddress, r.seq, r.signedAt)
    writeBack?.keep(signed)
    return signed
  }
  // Not homed here yet (the start could not rewrite it): the store janitor will, nothing to write back.
  return signer.record(name, b.manifestAddress, r?.seq ?? 1, b.updatedAt)
}

/** The record of a tombstone kept here, as served; a tombstone kept unsigned as this node's is written back signed. */
export function recordOfTombstone(signer: RecordSigner, selfId: string, t: StoredNameRecord, writeBack?: SignatureWriteBack): SignedNameRecord {
  if (t.sig !== undefined) return t as SignedNameRecord
  const signed = signer.served(t)
  if (t.node === selfId) writeBack?.keep(signed)
  return signed
}

/**
 * Homes on this node, in the store, every record that is not this node's (written before records
 * were signed, or under another identity): its fields are rewritten with this node's id, and it is
 * signed when served. Records already this node's are left as they are, signed or not.
 */
export async function homeStoredRecords(store: NameStore, identity: NodeIdentity): Promise<number> {
  const node = identity.id
  return store.migrate({
    binding: (name, b) => {
      const r = b.record
      if (r !== undefined && r.node === node && r.name === name && r.manifestAddress === b.manifestAddress) return undefined
      return { ...b, record: { name, manifestAddress: b.manifestAddress, seq: r?.seq ?? 1, node, signedAt: b.updatedAt } }
    },
    tombstone: (name, t) => (t.node === node && t.name === name ? undefined : { name, manifestAddress: null, seq: t.seq, node, signedAt: t.signedAt }),
  })
}

/** The index's parts. */
export interface IndexParts {
  metrics: IndexMetrics
  providers: ProviderTable
  cache: TtlCache<CachedAnswer>
  negative: TtlCache<true>
  breakers: BreakerTable
  events: Broadcast<IndexEvent>
  remote: RemoteNames
  resolver: Resolver
  disk: DiskGate
  idempotency: IdempotencyCache
  /** Signs the records of names homed here as they are served, and keeps the latest. */
  signer: RecordSigner
  /** Writes back the records the signer signed for records kept unsigned; closed before the store. */
  writeBack: SignatureWriteBack
  /** Records not homed here at start (the disk refused): the store janitor homes them once it can. */
  unsigned: boolean
  /** Hands a changed config to the parts that follow it (reload). */
  reconfigure(): void
  /** Drops the caches and the soft state (close). */
  clear(): void
}

/** Builds the parts of an index on `host`. */
export function indexParts(host: ServiceHost<ResolvedIndexConfig>, store: NameStore, net: Transport, random: Random, identity: NodeIdentity, nodes: NodeDirectory | undefined): IndexParts {
  const cfg = host.config
  const cfg0 = cfg.get()
  const clock = host.clock
  const metrics = registerIndexMetrics(host.metrics, cfg0.peers.targets)
  const providers = new ProviderTable(cfg0.maxProviderRecords)
  const cache = new TtlCache<CachedAnswer>(cfg0.cache.maxEntries)
  const negative = new TtlCache<true>(cfg0.cache.negativeMaxEntries)
  const breakers = new BreakerTable(clock, host.metrics.sink)
  breakers.sync(cfg0)
  const remote = new RemoteNames()
  const signer = new RecordSigner(identity)
  const disk = new DiskGate({ readiness: host.readiness, metrics, clock, logger: host.logger, config: () => cfg.get() })
  // A store that signs at the write (shared) has no keepSigned: nothing is queued for it.
  const writeBack = new SignatureWriteBack({
    store,
    paused: () => disk.fault !== undefined,
    failed: (e, records) => host.logger.warn({ err: e, records }, 'index: a signature write-back failed; its records are signed again when next served'),
    counted: (result, records) => metrics.writeBacks.inc({ result }, records),
  })
  const recordOf = (name: string, b: NameRecord): SignedNameRecord => recordOfBinding(signer, identity.id, name, b, writeBack)
  const idempotency = new IdempotencyCache(clock)
  const resolver = new Resolver({ config: () => cfg.get(), store, providers, cache, negative, breakers, transport: net, clock, random, sink: host.metrics.sink, metrics, nodes, selfId: identity.id, remote, recordOf, tombstoneOf: (t) => recordOfTombstone(signer, identity.id, t, writeBack) })
  return {
    metrics,
    providers,
    cache,
    negative,
    breakers,
    events: host.broadcast<IndexEvent>(CHANNELS.events),
    remote,
    resolver,
    disk,
    idempotency,
    signer,
    writeBack,
    unsigned: false,
    reconfigure() {
      const next = cfg.get()
      cache.resize(next.cache.maxEntries)
      negative.resize(next.cache.negativeMaxEntries)
      providers.resize(next.maxProviderRecords)
    },
    clear() {
      remote.clear()
      cache.clear()
      negative.clear()
      providers.clear()
      idempotency.clear()
      signer.clear()
      disk.close()
    },
  }
}

/** The shared state of the routes. */
export function indexContext(host: ServiceHost<ResolvedIndexConfig>, p: IndexParts, store: NameStore, net: Transport, identity: NodeIdentity, nodes: NodeDirectory | undefined): IndexContext {
  const cfg = host.config
  const clock = host.clock
  return {
    config: () => cfg.get(),
    resolver: p.resolver,
    store,
    providers: p.providers,
    metrics: p.metrics,
    clock,
    events: p.events,
    identity,
    nodes,
    remote: p.remote,
    recordOf: (name, b) => recordOfBinding(p.signer, identity.id, name, b, p.writeBack),
    signer: p.signer,
    writable: () => p.disk.writable(),
    storeFailed: (e) => p.disk.failed(e),
    work: (job, signal) => host.pool(CHANNELS.work).submit(job, signal),
    cache: p.cache,
    idempotency: p.idempotency,
    reindex: async () => {
      p.disk.writable()
      let resigned = 0
      try {
        // A store the cluster shares keeps the record of the node that wrote each binding.
        if (store.shared !== true) resigned = await homeStoredRecords(store, identity)
      } catch (e) {
        p.disk.failed(e)
        throw e
      }
      p.cache.clear()
      p.negative.clear()
      const names = store.count()
      p.metrics.names.set(names)
      return { names, resigned }
    },
    manifests: {
      transport: net,
      get storage() {
        return cfg.get().storage
      },
      get timeoutMs() {
        return cfg.get().storageTimeoutMs
      },
      get maxBytes() {
        return cfg.get().maxManifestBytes
      },
      onIntegrityFail: () => p.metrics.integrityFail.inc(),
      clock,
    },
  }
}
