/**
 * Passport's shared state on etcd (SPEC §6c): a {@link PassportClusterStore}. Keys under
 * `<prefix>passport/` (ids URI-encoded):
 *
 * | key | value |
 * |---|---|
 * | `revocations/<jti>` | `{jti, exp, revokedAt, cascade}`: written before the revocation answers |
 * | `links/<prf>/<jti>` | `{exp}`: `jti` was minted from `prf`; created only while `prf` is not revoked |
 * | `nodes/<nodeId>` | an enrolment (`{nodeId, publicJwk, scopes, audiences, enrolledAt}`) |
 * | `keys/<nodeId>` | that node's key set (public JWKs with kid, epoch, status) |
 *
 * Private keys never go into etcd. Every node watches the prefix, so a revocation stored by one
 * node is applied by every other within the watch's delay (milliseconds on a LAN).
 *
 * @module
 */

import type { ClusterLink, ClusterRevocation, EnrolledNode, PassportClusterListener, PassportClusterState, PassportClusterStore } from '@ron/passport'
import type { IKeyValue, IWatchResponse, Watcher } from 'etcd3'
import { relKey, type EtcdCoordinator } from './etcd.js'

const P = 'passport/'
const K = { revocations: `${P}revocations/`, links: `${P}links/`, nodes: `${P}nodes/`, keys: `${P}keys/` }
const enc = encodeURIComponent
/** Operations per transaction (etcd's default `--max-txn-ops` is 128). */
const TXN_OPS = 100

/** Passport's cluster state on etcd. */
class EtcdPassportStore implements PassportClusterStore {
  readonly nodeId: string
  readonly #c: EtcdCoordinator
  #revision = '0'
  #watcher: Watcher | undefined
  #listener: PassportClusterListener | undefined
  #closed = false

  constructor(c: EtcdCoordinator, nodeId: string) {
    this.#c = c
    this.nodeId = nodeId
  }

  async load(): Promise<PassportClusterState> {
    const kvs: IKeyValue[] = []
    let start = P
    let revision: string | undefined
    for (;;) {
      const from = start
      const rev = revision
      const res = await this.#c.call('load', () => {
        const q = this.#c.kv.getAll().inRange({ start: from, end: 'passport0' }).limit(1000)
        return (rev === undefined ? q : q.revision(rev)).exec()
      })
      revision ??= res.header.revision
      kvs.push(...res.kvs)
      if (!res.more || res.kvs.length === 0) break
      start = `${relKey(this.#c, res.kvs.at(-1)!.key)}\0`
    }
    this.#revision = revision
    const state: PassportClusterState = { revocations: [], links: [], nodes: [], keySets: [] }
    for (const kv of kvs) this.#decode(kv, state)
    return state
  }

  /** Adds what `kv` holds to `state`. */
  #decode(kv: IKeyValue, state: PassportClusterState): void {
    const key = relKey(this.#c, kv.key)
    try {
      const v = JSON.parse(kv.value.toString('utf8')) as unknown
      if (key.startsWith(K.revocations)) state.revocations.push(v as ClusterRevocation)
      else if (key.startsWith(K.links)) {
        const [prf, jti] = key.slice(K.links.length).split('/').map(decodeURIComponent)
        if (prf !== undefined && jti !== undefined) state.links.push({ jti, prf, exp: (v as { exp: number }).exp })
      } else if (key.startsWith(K.nodes)) state.nodes.push(v as EnrolledNode)
      else if (key.startsWith(K.keys)) state.keySets.push({ node: decodeURIComponent(key.slice(K.keys.length)), keys: v as unknown[] })
    } catch (err) {
      this.#c.logger.warn({ key, err }, 'ignoring a malformed passport key in etcd')
    }
  }

  async #putAll(op: 'revoke' | 'link', puts: Array<[string, string]>): Promise<void> {
    const kv = this.#c.kv
    for (let i = 0; i < puts.length; i += TXN_OPS) {
      const chunk = puts.slice(i, i + TXN_OPS)
      // One transaction per chunk (a compare that always holds: a version is never negative).
      await this.#c.call(op, () =>
        kv
          .if(chunk[0]![0], 'Version', '>', -1)
          .then(...chunk.map(([k, v]) => kv.put(k).value(v)))
          .commit(),
      )
    }
  }

  async revoke(items: readonly ClusterRevocation[], cascade: boolean): Promise<ClusterRevocation[]> {
    if (items.length === 0) return []
    await this.#putAll('revoke', items.map((i) => [`${K.revocations}${enc(i.jti)}`, JSON.stringify(i)]))
    if (!cascade) return []
    // Level by level: every id of a level is stored before its children are read, and no node can
    // link a child under a stored id, so each read is complete.
    const seen = new Set(items.map((i) => i.jti))
    const extra: ClusterRevocation[] = []
    let frontier = items.map((i) => i.jti)
    const now = this.#c.clock.now()
    while (frontier.length > 0) {
      const next: ClusterRevocation[] = []
      for (const id of frontier) {
        const res = await this.#c.call('revoke', () => this.#c.kv.getAll().prefix(`${K.links}${enc(id)}/`).exec())
        for (const kv of res.kvs) {
          const jti = decodeURIComponent(relKey(this.#c, kv.key).slice(`${K.links}${enc(id)}/`.length))
          if (seen.has(jti)) continue
          seen.add(jti)
          next.push({ jti, exp: (JSON.parse(kv.value.toString('utf8')) as { exp: number }).exp, revokedAt: now, cascade: true })
        }
      }
      if (next.length > 0) await this.#putAll('revoke', next.map((i) => [`${K.revocations}${enc(i.jti)}`, JSON.stringify(i)]))
      extra.push(...next)
      frontier = next.map((i) => i.jti)
    }
    return extra
  }

  async link(l: ClusterLink): Promise<boolean> {
    const kv = this.#c.kv
    const r = await this.#c.call('link', () =>
      kv
        .if(`${K.revocations}${enc(l.prf)}`, 'Create', '==', 0)
        .then(kv.put(`${K.links}${enc(l.prf)}/${enc(l.jti)}`).value(JSON.stringify({ exp: l.exp })))
        .commit(),
    )
    return r.succeeded
  }

  async enrol(node: EnrolledNode): Promise<void> {
    await this.#c.call('enrol', () => this.#c.kv.put(`${K.nodes}${enc(node.nodeId)}`).value(JSON.stringify(node)).exec())
  }

  async publishKeys(keys: readonly unknown[]): Promise<void> {
    await this.#c.call('keys', () => this.#c.kv.put(`${K.keys}${enc(this.nodeId)}`).value(JSON.stringify(keys)).exec())
  }

  watch(listener: PassportClusterListener): () => void {
    this.#listener = listener
    this.#start()
    return () => {
      this.#closed = true
      this.#listener = undefined
      void this.#watcher?.cancel().catch(() => undefined)
    }
  }

  #start(): void {
    if (this.#closed) return
    this.#c.kv
      .watch()
      .prefix(P)
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
            // Lost its place (compaction): reload everything and follow from there.
            this.#c.logger.warn({ err }, 'passport watch lost its place in etcd: reloading')
            this.#c.metrics.sink.inc('etcd_watch_resyncs_total', { area: 'passport' })
            void w.cancel()
            this.#resync()
          })
        },
        (err: unknown) => {
          this.#c.logger.warn({ err }, 'cannot watch passport state in etcd yet: retrying')
          setTimeout(() => this.#start(), 1000).unref()
        },
      )
  }

  #resync(): void {
    if (this.#closed) return
    this.load().then(
      (state) => {
        this.#deliver(state)
        this.#start()
      },
      () => setTimeout(() => this.#resync(), 1000).unref(),
    )
  }

  #onWatch(res: IWatchResponse): void {
    const state: PassportClusterState = { revocations: [], links: [], nodes: [], keySets: [] }
    for (const ev of res.events) {
      if (ev.type === 'Put') this.#decode(ev.kv, state)
      else if (relKey(this.#c, ev.kv.key).startsWith(K.keys)) this.#listener?.keys(decodeURIComponent(relKey(this.#c, ev.kv.key).slice(K.keys.length)), undefined)
    }
    this.#c.metrics.sink.inc('etcd_watch_events_total', { area: 'passport' }, res.events.length)
    this.#deliver(state)
  }

  #deliver(state: PassportClusterState): void {
    const l = this.#listener
    if (l === undefined) return
    // Links first: a revocation arriving with its subtree's links covers them.
    if (state.links.length > 0) l.linked(state.links)
    if (state.revocations.length > 0) l.revoked(state.revocations)
    for (const n of state.nodes) l.enrolled(n)
    for (const k of state.keySets) l.keys(k.node, k.keys)
  }
}

/** Creates passport's cluster state on etcd for node `nodeId`. */
export function createEtcdPassportStore(c: EtcdCoordinator, nodeId: string): PassportClusterStore {
  return new EtcdPassportStore(c, nodeId)
}
