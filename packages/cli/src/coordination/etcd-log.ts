/**
 * The registry's log on etcd (SPEC §6c): a {@link LogStore} every registry of the cluster appends
 * to, with its {@link SharedLog} (HEAD, the other nodes' appends, proposals, the checkpoint signer
 * lease). Keys under `<prefix>registry/`:
 *
 * | key | value |
 * |---|---|
 * | `genesis` | the genesis record (canonical JSON), written once by the first node |
 * | `head` | `{"version","hash"}`: a commit is a transaction comparing it and appending |
 * | `entries/<v>` | entry `v`'s canonical bytes; an entry over 65 535 bytes without its payload |
 * | `payloads/<b3>` | the payload of such an entry (written before the transaction) |
 * | `leaves/<v>` | entry `v`'s Merkle leaf hash (kept when retention prunes the entry) |
 * | `checkpoints/<size>` | checkpoints stored for retention |
 * | `checkpoint`, `checkpoint-size` | the latest checkpoint the signer published |
 * | `signer` | the node id holding the signer lease (attached to its etcd lease) |
 *
 * Every node keeps what it holds of the log in memory, filled at open and kept current by one
 * watch over the prefix (etcd delivers it in revision order, a transaction's keys together), so
 * reads of what is known go on without a quorum. The log key never goes into etcd: each node has
 * it (file or KMS) and only the lease holder signs with it.
 *
 * @module
 */

import { IntegrityFailedError, canonicalBytes, canonicalJson, type JsonValue } from '@ron/core'
import { MAX_BUNDLE_LEAF, type CheckpointLease, type LogStore, type OpenOptions, type PublishedCheckpoint, type RecoveredLog, type SegmentInfo, type SharedLog, type StoredCheckpoint } from '@ron/registry'
import type { Watcher } from 'etcd3'
import type { IKeyValue, IWatchResponse } from 'etcd3'
import { ConfigError, ClosedError } from '@ron/core'
import { relKey, pad, type EtcdCoordinator } from './etcd.js'
import { EtcdProposals } from './etcd-proposals.js'

type Head = ReturnType<LogStore['head']>
type Genesis = RecoveredLog['genesis']
type LogEntry = RecoveredLog['notable'][number]

const R = 'registry/'
const K = {
  genesis: `${R}genesis`,
  head: `${R}head`,
  entries: `${R}entries/`,
  leaves: `${R}leaves/`,
  payloads: `${R}payloads/`,
  checkpoints: `${R}checkpoints/`,
  checkpoint: `${R}checkpoint`,
  checkpointSize: `${R}checkpoint-size`,
  signer: `${R}signer`,
}

/** Options of {@link createEtcdLogStore}. */
export interface EtcdLogStoreOptions {
  /** This node's id (what `signer` holds while this node signs). */
  nodeId: string
  /** Entries per segment (the unit of pruning). @default 1000 */
  segmentEntries?: number
}

/** How often the lease holder removes expired proposals. */
const SWEEP_MS = 30_000

const headJson = (h: Head): string => JSON.stringify({ version: h.version, hash: h.hash })

function isNotable(e: LogEntry, bytes: number): boolean {
  if (bytes > MAX_BUNDLE_LEAF) return true
  const items = (e.payload as { items?: Array<{ kind?: unknown }> } | undefined)?.items ?? []
  return items.some((i) => i.kind === 'signer-set') || e.payload?.meta?.supersedes !== undefined
}

/** The log store on etcd. */
class EtcdLogStore implements LogStore {
  readonly kind = 'etcd'
  readonly shared: SharedLog
  readonly #c: EtcdCoordinator
  readonly #segmentEntries: number
  #head: Head = { version: 0, hash: 'b3:' }
  readonly #entries = new Map<number, Uint8Array>()
  /** Payloads of large entries by `payloadB3` (their entry key holds the entry without it). */
  readonly #payloads = new Map<string, string>()
  /** Large entries whose payload has not arrived yet (never, in order; kept for safety). */
  readonly #waiting = new Map<number, Uint8Array>()
  readonly #leaves: Uint8Array[] = []
  #checkpoints: StoredCheckpoint[] = []
  #oldest = 1
  #watcher: Watcher | undefined
  #revision = '0'
  readonly #appendListeners = new Set<() => void>()
  readonly #lease: Lease
  readonly #proposals: EtcdProposals
  #sweeper: NodeJS.Timeout | undefined
  #closed = false

  constructor(c: EtcdCoordinator, o: EtcdLogStoreOptions) {
    this.#c = c
    this.#segmentEntries = o.segmentEntries ?? 1000
    this.#lease = new Lease(c, o.nodeId, () => this.#head)
    this.shared = {
      sync: () => this.#sync(),
      onAppend: (fn) => {
        this.#appendListeners.add(fn)
        return () => this.#appendListeners.delete(fn)
      },
      leafHash: (v) => this.#leaves[v - 1],
      proposals: (this.#proposals = new EtcdProposals(c)),
      signer: this.#lease,
    }
  }

  /** The genesis stored in etcd, if a node created the log already. */
  async storedGenesis(): Promise<Genesis | undefined> {
    const text = await this.#c.call('load', () => this.#c.kv.get(K.genesis).string())
    return text === null ? undefined : (JSON.parse(text) as Genesis)
  }

  async open(o: OpenOptions): Promise<RecoveredLog> {
    this.#check()
    let genesis = await this.storedGenesis()
    if (genesis === undefined) {
      if (o.genesis === undefined) throw new ConfigError('signers: a new registry log needs a genesis signer set (config "signers")', { details: { path: 'signers' } })
      const g = o.genesis
      const { genesisHash } = await import('@ron/registry')
      // The first node creates the log; a node racing it adopts the one that won.
      await this.#c.call('load', () =>
        this.#c.kv
          .if(K.genesis, 'Create', '==', 0)
          .then(
            this.#c.kv.put(K.genesis).value(canonicalJson(g as unknown as JsonValue)),
            this.#c.kv.put(K.head).value(headJson({ version: 0, hash: genesisHash(g) })),
            this.#c.kv.put(K.checkpointSize).value(pad(0)),
          )
          .commit(),
      )
      genesis = await this.storedGenesis()
      if (genesis === undefined) throw new IntegrityFailedError('etcd lost the registry genesis it just stored')
    }
    await this.#load()
    const notable: LogEntry[] = []
    for (const [v, bytes] of this.#entries) {
      const e = JSON.parse(Buffer.from(bytes).toString('utf8')) as LogEntry
      if (Buffer.compare(o.leafHash(bytes, genesis), this.#leaves[v - 1] ?? Buffer.alloc(0)) !== 0) {
        throw new IntegrityFailedError(`registry entry ${v} in etcd does not match its leaf hash`, { details: { version: v } })
      }
      if (isNotable(e, bytes.length)) notable.push(e)
    }
    notable.sort((a, b) => a.version - b.version)
    this.#watch()
    this.#lease.start()
    // The lease holder removes expired proposals (one node at a time: the others skip).
    this.#sweeper = setInterval(() => {
      if (this.#lease.holding()) this.#proposals.sweep(this.#c.clock.now()).catch((err: unknown) => this.#c.logger.warn({ err }, 'could not remove expired proposals this round'))
    }, SWEEP_MS)
    this.#sweeper.unref()
    return {
      genesis,
      head: { ...this.#head },
      leafHashes: this.#leaves.slice(0, this.#head.version),
      oldest: this.#oldest,
      checkpoints: [...this.#checkpoints],
      notable,
      recoveries: {},
    }
  }

  /** Reads every key of the log at one revision (paged), into memory. */
  async #load(): Promise<void> {
    const kv = this.#c.kv
    const kvs: IKeyValue[] = []
    let start = R
    let revision: string | undefined
    for (;;) {
      const from = start
      const rev = revision
      const res = await this.#c.call('load', () => {
        const q = kv.getAll().inRange({ start: from, end: 'registry0' }).limit(500)
        return (rev === undefined ? q : q.revision(rev)).exec()
      })
      revision ??= res.header.revision
      kvs.push(...res.kvs)
      if (!res.more || res.kvs.length === 0) break
      start = `${relKey(this.#c, res.kvs.at(-1)!.key)}\0`
    }
    this.#revision = revision
    this.#entries.clear()
    this.#leaves.length = 0
    this.#checkpoints = []
    this.#apply(kvs.map((kv) => ({ type: 'Put', kv })))
    this.#oldest = this.#entries.size === 0 ? this.#head.version + 1 : Math.min(...this.#entries.keys())
    if (this.#leaves.length < this.#head.version || this.#leaves.slice(0, this.#head.version).some((l) => l === undefined)) {
      throw new IntegrityFailedError(`the registry log in etcd has HEAD ${this.#head.version} but not every leaf hash`, { details: { head: this.#head.version } })
    }
  }

  /** Follows the prefix from the loaded revision on; a watch that lost its place reloads. */
  #watch(): void {
    const kv = this.#c.kv
    void kv
      .watch()
      .prefix(R)
      .startRevision(String(Number(this.#revision) + 1))
      .create()
      .then(
        (w) => {
          if (this.#closed) {
            void w.cancel()
            return
          }
          this.#watcher = w
          w.on('data', (res: IWatchResponse) => this.#onWatch(res))
          w.on('error', (err) => {
            this.#c.logger.warn({ err }, 'registry watch lost its place in etcd: reloading the log')
            this.#c.metrics.sink.inc('etcd_watch_resyncs_total', { area: 'registry' })
            void w.cancel()
            this.#watcher = undefined
            this.#resync()
          })
        },
        (err: unknown) => {
          this.#c.logger.warn({ err }, 'cannot watch the registry log in etcd yet: retrying')
          setTimeout(() => this.#closed || this.#watch(), 1000).unref()
        },
      )
  }

  #resync(): void {
    if (this.#closed) return
    this.#load().then(
      () => {
        this.#watch()
        this.#notify()
      },
      () => setTimeout(() => this.#resync(), 1000).unref(),
    )
  }

  #onWatch(res: IWatchResponse): void {
    if (this.#closed) return
    this.#c.metrics.sink.inc('etcd_watch_events_total', { area: 'registry' }, res.events.length)
    const before = this.#head.version
    this.#apply(res.events.map((e) => ({ type: e.type, kv: e.kv })))
    if (this.#head.version > before) this.#notify()
  }

  #notify(): void {
    for (const fn of this.#appendListeners) fn()
  }

  /** Applies changes (from a load, a sync or the watch) in order; idempotent. */
  #apply(changes: Array<{ type: string; kv: IKeyValue }>): void {
    let head: Head | undefined
    for (const { type, kv } of changes) {
      const key = relKey(this.#c, kv.key)
      const put = type === 'Put' || type === 'put'
      if (key.startsWith(K.entries)) {
        const v = Number(key.slice(K.entries.length))
        if (put) this.#putEntry(v, kv.value)
        else {
          this.#entries.delete(v)
          this.#oldest = Math.max(this.#oldest, v + 1)
        }
      } else if (key.startsWith(K.leaves)) {
        if (put) this.#leaves[Number(key.slice(K.leaves.length)) - 1] = new Uint8Array(kv.value)
      } else if (key.startsWith(K.payloads)) {
        const b3 = key.slice(K.payloads.length)
        if (put) {
          this.#payloads.set(b3, kv.value.toString('utf8'))
          for (const [v, bytes] of this.#waiting) this.#putEntry(v, bytes)
        } else this.#payloads.delete(b3)
      } else if (key === K.head && put) {
        const h = JSON.parse(kv.value.toString('utf8')) as Head
        if (head === undefined || h.version > head.version) head = h
      } else if (key.startsWith(K.checkpoints) && put) {
        const cp = JSON.parse(kv.value.toString('utf8')) as StoredCheckpoint
        if (!this.#checkpoints.some((c) => c.treeSize === cp.treeSize)) {
          this.#checkpoints.push(cp)
          this.#checkpoints.sort((a, b) => a.treeSize - b.treeSize)
        }
      } else if (key === K.checkpoint && put) {
        this.#lease.published(JSON.parse(kv.value.toString('utf8')) as PublishedCheckpoint)
      } else if (key === K.signer) {
        this.#lease.holderChanged(put ? kv.value.toString('utf8') : undefined)
      }
    }
    if (head !== undefined && head.version >= this.#head.version) this.#head = head
  }

  /** Holds entry `v` (its whole canonical bytes: a large one gets its payload back). */
  #putEntry(v: number, stored: Buffer | Uint8Array): void {
    const bytes = new Uint8Array(stored)
    if (bytes.length <= MAX_BUNDLE_LEAF) {
      const text = Buffer.from(bytes).toString('utf8')
      if (text.includes('"payload":') || !text.includes('"payloadB3":')) {
        this.#entries.set(v, bytes)
        this.#waiting.delete(v)
        return
      }
      // The entry without its payload: put the payload back (canonical JSON sorts members).
      const e = JSON.parse(text) as Record<string, JsonValue>
      const payload = this.#payloads.get(e['payloadB3'] as string)
      if (payload === undefined) {
        this.#waiting.set(v, bytes)
        return
      }
      e['payload'] = JSON.parse(payload) as JsonValue
      this.#entries.set(v, canonicalBytes(e))
      this.#waiting.delete(v)
      return
    }
    this.#entries.set(v, bytes)
  }

  async #sync(): Promise<Head> {
    this.#check()
    const text = await this.#c.call('sync', () => this.#c.kv.get(K.head).string())
    if (text === null) throw new IntegrityFailedError('the registry HEAD is missing from etcd')
    const head = JSON.parse(text) as Head
    if (head.version > this.#head.version) {
      // Read what the watch has not delivered yet (the watch delivers it again: idempotent).
      const from = this.#head.version + 1
      const kvs: IKeyValue[] = []
      for (const prefix of [K.entries, K.leaves]) {
        const res = await this.#c.call('sync', () => this.#c.kv.getAll().inRange({ start: `${prefix}${pad(from)}`, end: `${prefix}${pad(head.version + 1)}` }).exec())
        kvs.push(...res.kvs)
      }
      // Payloads of large entries among them.
      for (const kv of kvs) {
        const key = relKey(this.#c, kv.key)
        if (!key.startsWith(K.entries) || kv.value.length > MAX_BUNDLE_LEAF) continue
        const text = kv.value.toString('utf8')
        if (text.includes('"payload":')) continue
        const b3 = (JSON.parse(text) as { payloadB3?: string }).payloadB3
        if (b3 === undefined || this.#payloads.has(b3)) continue
        const p = await this.#c.call('sync', () => this.#c.kv.get(`${K.payloads}${b3}`).string())
        if (p !== null) this.#payloads.set(b3, p)
      }
      const before = this.#head.version
      this.#apply([...kvs.map((kv) => ({ type: 'Put', kv })), { type: 'Put', kv: { key: Buffer.from(K.head), value: Buffer.from(text) } as IKeyValue }])
      if (this.#head.version > before) this.#notify()
    }
    return { ...this.#head }
  }

  head(): Head {
    return { ...this.#head }
  }

  async compareAndAppend(expected: Head, e: Parameters<LogStore['compareAndAppend']>[1], leafHash: Uint8Array): Promise<boolean> {
    this.#check()
    const v = e.entry.version
    let stored: Uint8Array = e.bytes
    if (e.bytes.length > MAX_BUNDLE_LEAF) {
      // Under etcd's request limit: the payload goes under its own key first (content-addressed,
      // so writing it twice is harmless), the entry without it in the transaction.
      const payload = canonicalJson(e.entry.payload)
      await this.#c.call('append', () => this.#c.kv.put(`${K.payloads}${e.entry.payloadB3}`).value(payload).exec())
      const rest = { ...(e.entry as unknown as Record<string, JsonValue>) }
      delete rest['payload']
      stored = canonicalBytes(rest)
      this.#payloads.set(e.entry.payloadB3, payload)
    }
    const next: Head = { version: v, hash: e.hash }
    const r = await this.#c.call('append', () =>
      this.#c.kv
        .if(K.head, 'Value', '==', headJson(expected))
        .then(
          this.#c.kv.put(`${K.entries}${pad(v)}`).value(Buffer.from(stored)),
          this.#c.kv.put(`${K.leaves}${pad(v)}`).value(Buffer.from(leafHash)),
          this.#c.kv.put(K.head).value(headJson(next)),
        )
        .commit(),
    )
    if (!r.succeeded) return false
    if (this.#head.version < v) {
      this.#entries.set(v, e.bytes)
      this.#leaves[v - 1] = leafHash
      this.#head = next
    }
    return true
  }

  read(version: number): Promise<Uint8Array | undefined> {
    return Promise.resolve(this.#entries.get(version))
  }

  oldest(): number {
    return this.#oldest
  }

  async appendCheckpoint(cp: StoredCheckpoint): Promise<void> {
    this.#check()
    await this.#c.call('checkpoint', () => this.#c.kv.put(`${K.checkpoints}${pad(cp.treeSize)}`).value(JSON.stringify(cp)).exec())
    if (!this.#checkpoints.some((c) => c.treeSize === cp.treeSize)) {
      this.#checkpoints.push(cp)
      this.#checkpoints.sort((a, b) => a.treeSize - b.treeSize)
    }
  }

  checkpoints(): readonly StoredCheckpoint[] {
    return this.#checkpoints
  }

  segments(): readonly SegmentInfo[] {
    const out: SegmentInfo[] = []
    const size = this.#segmentEntries
    for (let first = this.#oldest; first <= this.#head.version; first = Math.ceil(first / size) * size + 1) {
      const last = Math.min(Math.ceil(first / size) * size, this.#head.version)
      let bytes = 0
      for (let v = first; v <= last; v++) bytes += this.#entries.get(v)?.length ?? 0
      out.push({ first, last, bytes, firstCommittedAt: this.#committedAt(first), lastCommittedAt: this.#committedAt(last) })
    }
    return out
  }

  #committedAt(v: number): number {
    const b = this.#entries.get(v)
    return b === undefined ? 0 : (JSON.parse(Buffer.from(b).toString('utf8')) as LogEntry).committedAt
  }

  sizeBytes(): number {
    let n = this.#leaves.length * 32
    for (const e of this.#entries.values()) n += e.length
    return n
  }

  async prune(through: number): Promise<SegmentInfo[]> {
    this.#check()
    const removed: SegmentInfo[] = []
    for (const s of this.segments().slice(0, -1)) {
      if (s.last > through) break
      const large: string[] = []
      for (let v = s.first; v <= s.last; v++) {
        const b = this.#entries.get(v)
        if (b !== undefined && b.length > MAX_BUNDLE_LEAF) large.push((JSON.parse(Buffer.from(b).toString('utf8')) as LogEntry).payloadB3)
      }
      // Leaf hashes stay: the tree needs them. Idempotent: every node's retention may run it.
      await this.#c.call('prune', () => this.#c.kv.delete().inRange({ start: `${K.entries}${pad(s.first)}`, end: `${K.entries}${pad(s.last + 1)}` }).exec())
      for (const b3 of large) await this.#c.call('prune', () => this.#c.kv.delete().key(`${K.payloads}${b3}`).exec())
      for (let v = s.first; v <= s.last; v++) this.#entries.delete(v)
      this.#oldest = s.last + 1
      removed.push(s)
    }
    return removed
  }

  async probe(): Promise<void> {
    this.#check()
    if (!(await this.#c.probe())) {
      const { unavailable } = await import('./etcd.js')
      throw unavailable(new Error('no quorum'))
    }
  }

  /** True once `close()` was called (false on an object that only inherits from a store). */
  get closed(): boolean {
    return #closed in this && this.#closed
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper)
    this.#appendListeners.clear()
    await this.#watcher?.cancel().catch(() => undefined)
    // Hands the signer lease over at once instead of after its TTL.
    await this.#lease.close()
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('registry log store is closed')
  }
}

/**
 * The checkpoint signer lease: `registry/signer` holds the node id of the holder, attached to an
 * etcd lease with the configured TTL that the holder keeps alive. When the holder dies the lease
 * expires, etcd deletes the key, every node sees the delete and campaigns again; the first
 * transaction wins.
 */
class Lease implements CheckpointLease {
  readonly #c: EtcdCoordinator
  readonly #nodeId: string
  readonly #head: () => Head
  #holding = false
  #holder: string | undefined
  #latest: PublishedCheckpoint | undefined
  #lease: ReturnType<EtcdCoordinator['kv']['lease']> | undefined
  #campaigning = false
  #timer: NodeJS.Timeout | undefined
  #closed = false
  readonly #listeners = new Set<() => void>()

  constructor(c: EtcdCoordinator, nodeId: string, head: () => Head) {
    this.#c = c
    this.#nodeId = nodeId
    this.#head = head
    c.signerStatus = () => ({ holder: this.#holder, self: this.#holding })
  }

  start(): void {
    this.#campaign()
  }

  holding(): boolean {
    return this.#holding
  }

  latest(): PublishedCheckpoint | undefined {
    return this.#latest
  }

  onChange(fn: () => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  async publish(cp: PublishedCheckpoint): Promise<boolean> {
    if (!this.#holding) return false
    const r = await this.#c.call('checkpoint', () =>
      this.#c.kv
        .if(K.signer, 'Value', '==', this.#nodeId)
        .and(K.checkpointSize, 'Value', '<', pad(cp.treeSize))
        .then(this.#c.kv.put(K.checkpoint).value(JSON.stringify(cp)), this.#c.kv.put(K.checkpointSize).value(pad(cp.treeSize)))
        .commit(),
    )
    if (r.succeeded && (this.#latest === undefined || this.#latest.treeSize < cp.treeSize)) this.#latest = cp
    return r.succeeded
  }

  /** A checkpoint published by a holder (from the watch). */
  published(cp: PublishedCheckpoint): void {
    if (this.#latest !== undefined && this.#latest.treeSize >= cp.treeSize) return
    this.#latest = cp
    this.#emit()
  }

  /** The `signer` key changed (from the watch): a delete means the lease is free. */
  holderChanged(holder: string | undefined): void {
    this.#holder = holder
    if (holder !== this.#nodeId && this.#holding) this.#lost('the signer key names another node')
    if (holder === undefined) this.#campaign()
  }

  #emit(): void {
    for (const fn of this.#listeners) {
      try {
        fn()
      } catch (err) {
        this.#c.logger.error({ err }, 'signer lease listener failed')
      }
    }
  }

  #lost(why: string): void {
    if (!this.#holding) return
    this.#holding = false
    this.#c.metrics.sink.set('etcd_signer_lease_held', undefined, 0)
    this.#c.logger.warn({ why }, 'lost the registry checkpoint signer lease')
    const l = this.#lease
    this.#lease = undefined
    void l?.revoke().catch(() => undefined)
    this.#emit()
    this.#campaign()
  }

  /** Tries to take the lease (again in a second while etcd is unreachable or it is held elsewhere without a watch event). */
  #campaign(): void {
    if (this.#closed || this.#holding || this.#campaigning) return
    this.#campaigning = true
    this.#tryOnce()
      .catch((err: unknown) => this.#c.logger.debug?.({ err }, 'signer lease campaign failed'))
      .finally(() => {
        this.#campaigning = false
        if (this.#closed || this.#holding) return
        if (this.#timer !== undefined) clearTimeout(this.#timer)
        // The watch tells when the key goes; the timer covers a missed event or an outage.
        this.#timer = setTimeout(() => this.#campaign(), this.#holder === undefined ? 1000 : this.#c.leaseTtlSec * 1000)
        this.#timer.unref()
      })
  }

  async #tryOnce(): Promise<void> {
    const c = this.#c
    const lease = c.kv.lease(c.leaseTtlSec, { autoKeepAlive: true })
    let id: string
    try {
      id = await c.call('lease', () => lease.grant())
    } catch (e) {
      await lease.revoke().catch(() => undefined)
      throw e
    }
    const r = await c
      .call('lease', () => c.kv.if(K.signer, 'Create', '==', 0).then(c.kv.put(K.signer).value(this.#nodeId).lease(id)).else(c.kv.get(K.signer)).commit())
      .catch(async (e: unknown) => {
        await lease.revoke().catch(() => undefined)
        throw e
      })
    if (!r.succeeded || this.#closed) {
      const kv = r.responses[0]?.response_range?.kvs?.[0]
      if (kv !== undefined) this.#holder = kv.value.toString('utf8')
      await lease.revoke().catch(() => undefined)
      return
    }
    this.#lease = lease
    this.#holding = true
    this.#holder = this.#nodeId
    lease.on('lost', () => {
      if (this.#lease === lease) this.#lost('etcd lease lost')
    })
    c.metrics.sink.set('etcd_signer_lease_held', undefined, 1)
    c.metrics.sink.inc('etcd_signer_lease_acquired_total')
    c.logger.info({ head: this.#head().version }, 'acquired the registry checkpoint signer lease: this node signs checkpoints')
    this.#emit()
  }

  async close(): Promise<void> {
    this.#closed = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#listeners.clear()
    this.#holding = false
    const l = this.#lease
    this.#lease = undefined
    // Revoking the lease deletes `signer`: another node takes over without waiting for the TTL.
    await l?.revoke().catch(() => undefined)
  }
}

/**
 * Creates the registry log store on etcd. `storedGenesis()` tells whether a node of the cluster
 * created the log already.
 */
export function createEtcdLogStore(c: EtcdCoordinator, o: EtcdLogStoreOptions): LogStore & { storedGenesis(): Promise<Genesis | undefined> } {
  return new EtcdLogStore(c, o)
}
