/**
 * Name bindings on etcd (SPEC §6c): a {@link NameStore} every index of the cluster shares. A write
 * is a compare-and-set in an etcd transaction (on the name key's revision), so two nodes binding
 * one name concurrently cannot both win, and a node without a quorum cannot bind. Keys under
 * `<prefix>index/`:
 *
 * | key | value |
 * |---|---|
 * | `names/<name>` | `{"binding": {manifestAddress, updatedAt, record, chunks}}` or `{"tombstone": record}` |
 * | `manifests/<b3>/<i>` | the manifest's exact text in pieces of at most 512 KiB (under etcd's request limit), written before the binding |
 *
 * `record` is the signed name record of the node that wrote the binding. Every node keeps the
 * names and their manifests in memory, filled at open and kept current by a watch, so it
 * resolves every name locally and goes on resolving without a quorum. Provider records are not
 * here: they stay soft state announced to each index.
 *
 * @module
 */

import { BusyError, ClosedError, ConflictError, NotFoundError, manifestSchema, type Address } from '@ron/core'
import type { NameRecord, NameState, NameStore, WriteResult } from '@ron/index'
import type { IKeyValue, IWatchResponse, Watcher } from 'etcd3'
import { relKey, unavailable, type EtcdCoordinator } from './etcd.js'

type SignedNameRecord = NonNullable<NameRecord['record']>

const P = 'index/'
const K = { names: `${P}names/`, manifests: `${P}manifests/` }
const CHUNK = 512 * 1024
/** Compare-and-set attempts of one write before it answers 429 (another node keeps writing the name). */
const ATTEMPTS = 8

interface StoredBinding {
  manifestAddress: Address
  updatedAt: number
  record?: SignedNameRecord
  /** Pieces of the manifest text under `manifests/<b3>/`. */
  chunks: number
}
type Stored = { binding: StoredBinding } | { tombstone: SignedNameRecord }

interface Held {
  value: Stored
  /** The key's mod revision (what a compare-and-set compares). */
  mod: string
  /** The binding with its manifest, once built. */
  record?: NameRecord
}

const pieceKey = (b3: string, i: number): string => `${K.manifests}${b3}/${String(i).padStart(6, '0')}`

function conflict(name: string, expected: Address | null, actual: Address | undefined): ConflictError {
  return new ConflictError(`name '${name}' is bound to ${actual ?? 'nothing'}, not ${expected ?? 'nothing'}`, { details: { name, expected, actual: actual ?? null } })
}

/** The name store on etcd. */
class EtcdNameStore implements NameStore {
  readonly durable = true
  readonly shared = true
  readonly #c: EtcdCoordinator
  readonly #names = new Map<string, Held>()
  /** Manifest pieces by address, then index. */
  readonly #pieces = new Map<string, Map<number, string>>()
  readonly #listeners = new Set<(name: string) => void>()
  #watcher: Watcher | undefined
  #revision = '0'
  #closed = false

  constructor(c: EtcdCoordinator) {
    this.#c = c
  }

  async open(): Promise<void> {
    const kvs: IKeyValue[] = []
    let start = P
    let revision: string | undefined
    for (;;) {
      const from = start
      const rev = revision
      const res = await this.#c.call('names', () => {
        const q = this.#c.kv.getAll().inRange({ start: from, end: 'index0' }).limit(1000)
        return (rev === undefined ? q : q.revision(rev)).exec()
      })
      revision ??= res.header.revision
      kvs.push(...res.kvs)
      if (!res.more || res.kvs.length === 0) break
      start = `${relKey(this.#c, res.kvs.at(-1)!.key)}\0`
    }
    this.#revision = revision
    for (const kv of kvs) this.#apply('Put', kv)
    this.#watch()
  }

  #watch(): void {
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
          w.on('data', (res: IWatchResponse) => {
            this.#c.metrics.sink.inc('etcd_watch_events_total', { area: 'names' }, res.events.length)
            for (const ev of res.events) {
              const name = this.#apply(ev.type, ev.kv)
              if (name !== undefined) for (const fn of this.#listeners) fn(name)
            }
          })
          w.on('error', (err) => {
            this.#c.logger.warn({ err }, 'names watch lost its place in etcd: reloading')
            this.#c.metrics.sink.inc('etcd_watch_resyncs_total', { area: 'names' })
            void w.cancel()
            this.#names.clear()
            this.#pieces.clear()
            this.open().catch(() => setTimeout(() => this.#watch(), 1000).unref())
          })
        },
        () => setTimeout(() => this.#watch(), 1000).unref(),
      )
  }

  /** Applies one change; returns the name it changed, if a name. */
  #apply(type: string, kv: IKeyValue): string | undefined {
    const key = relKey(this.#c, kv.key)
    const put = type === 'Put' || type === 'put'
    if (key.startsWith(K.manifests)) {
      const [b3, i] = key.slice(K.manifests.length).split('/')
      if (b3 === undefined || i === undefined) return undefined
      if (put) {
        let m = this.#pieces.get(b3)
        if (m === undefined) this.#pieces.set(b3, (m = new Map()))
        m.set(Number(i), kv.value.toString('utf8'))
      } else this.#pieces.delete(b3)
      return undefined
    }
    if (!key.startsWith(K.names)) return undefined
    const name = key.slice(K.names.length)
    if (!put) {
      this.#names.delete(name)
      return name
    }
    try {
      this.#names.set(name, { value: JSON.parse(kv.value.toString('utf8')) as Stored, mod: kv.mod_revision })
    } catch {
      this.#c.logger.warn({ name }, 'ignoring a malformed name binding in etcd')
    }
    return name
  }

  /** The binding of a held entry with its manifest, when every piece of the manifest is here. */
  #record(h: Held): NameRecord | undefined {
    if (!('binding' in h.value)) return undefined
    if (h.record !== undefined) return h.record
    const b = h.value.binding
    const pieces = this.#pieces.get(b.manifestAddress)
    if (pieces === undefined || pieces.size < b.chunks) return undefined
    let text = ''
    for (let i = 0; i < b.chunks; i++) text += pieces.get(i) ?? ''
    const manifest = manifestSchema.safeParse(JSON.parse(text))
    if (!manifest.success) return undefined
    h.record = { manifestAddress: b.manifestAddress, manifest: manifest.data, manifestText: text, updatedAt: b.updatedAt, ...(b.record === undefined ? {} : { record: b.record }) }
    return h.record
  }

  onChange(fn: (name: string) => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  get(name: string): NameRecord | undefined {
    this.#check()
    const h = this.#names.get(name)
    return h === undefined ? undefined : this.#record(h)
  }

  tombstone(name: string): SignedNameRecord | undefined {
    this.#check()
    const v = this.#names.get(name)?.value
    return v !== undefined && 'tombstone' in v ? v.tombstone : undefined
  }

  /** The name as etcd holds it now (a linearizable read), with its manifest. */
  async #current(name: string): Promise<{ held: Held | undefined; state: NameState }> {
    const res = await this.#c.call('names', () => this.#c.kv.get(`${K.names}${name}`).exec())
    const kv = res.kvs[0]
    if (kv === undefined) return { held: undefined, state: { binding: undefined, tombstone: undefined } }
    const held: Held = { value: JSON.parse(kv.value.toString('utf8')) as Stored, mod: kv.mod_revision }
    if ('tombstone' in held.value) return { held, state: { binding: undefined, tombstone: held.value.tombstone } }
    const b = held.value.binding
    if ((this.#pieces.get(b.manifestAddress)?.size ?? 0) < b.chunks) {
      const got = await this.#c.call('names', () => this.#c.kv.getAll().prefix(`${K.manifests}${b.manifestAddress}/`).exec())
      for (const p of got.kvs) this.#apply('Put', p)
    }
    const binding = this.#record(held)
    if (binding === undefined) throw unavailable(new Error(`the manifest of '${name}' is incomplete in etcd`))
    return { held, state: { binding, tombstone: undefined } }
  }

  async #write(name: string, decide: (state: NameState) => { value: Stored; text?: string; previous: Address | null }): Promise<WriteResult> {
    this.#check()
    const kv = this.#c.kv
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { held, state } = await this.#current(name)
      const { value, text, previous } = decide(state)
      if (text !== undefined && 'binding' in value) {
        // The manifest first (content-addressed: writing it twice is harmless), in pieces under
        // etcd's request limit; the binding's transaction then names how many.
        const b3 = value.binding.manifestAddress
        if ((this.#pieces.get(b3)?.size ?? 0) < value.binding.chunks) {
          for (let i = 0; i < value.binding.chunks; i++) {
            const piece = text.slice(i * CHUNK, (i + 1) * CHUNK)
            await this.#c.call('names', () => kv.put(pieceKey(b3, i)).value(piece).exec())
          }
        }
      }
      const key = `${K.names}${name}`
      const cmp = held === undefined ? kv.if(key, 'Create', '==', 0) : kv.if(key, 'Mod', '==', held.mod)
      const r = await this.#c.call('names', () => cmp.then(kv.put(key).value(JSON.stringify(value))).commit())
      if (r.succeeded) {
        this.#apply('Put', { key: Buffer.from(`${this.#c.prefix}${key}`), value: Buffer.from(JSON.stringify(value)), mod_revision: r.header.revision } as IKeyValue)
        if (text !== undefined && 'binding' in value) {
          for (let i = 0; i < value.binding.chunks; i++) this.#apply('Put', { key: Buffer.from(`${this.#c.prefix}${pieceKey(value.binding.manifestAddress, i)}`), value: Buffer.from(text.slice(i * CHUNK, (i + 1) * CHUNK)) } as IKeyValue)
        }
        return { previous }
      }
    }
    throw new BusyError(`name '${name}' is being written by other nodes: retry`, { details: { name, reason: 'name_contended' }, retryAfterMs: 200 })
  }

  put(name: string, expected: Address | null | undefined, make: (state: NameState) => NameRecord): Promise<WriteResult> {
    return this.#write(name, (state) => {
      const actual = state.binding?.manifestAddress
      if (expected !== undefined && (actual ?? null) !== expected) throw conflict(name, expected, actual)
      const rec = make(state)
      const text = rec.manifestText ?? JSON.stringify(rec.manifest)
      return {
        value: { binding: { manifestAddress: rec.manifestAddress, updatedAt: rec.updatedAt, ...(rec.record === undefined ? {} : { record: rec.record }), chunks: Math.max(1, Math.ceil(text.length / CHUNK)) } },
        text,
        previous: actual ?? null,
      }
    })
  }

  delete(name: string, expected: Address | undefined, make: (binding: NameRecord, tombstone: SignedNameRecord | undefined) => SignedNameRecord): Promise<WriteResult> {
    return this.#write(name, (state) => {
      const actual = state.binding?.manifestAddress
      if (actual === undefined) {
        if (expected === undefined) throw new NotFoundError(`name '${name}' is not bound`, { details: { name } })
        throw conflict(name, expected, undefined)
      }
      if (expected !== undefined && expected !== actual) throw conflict(name, expected, actual)
      return { value: { tombstone: make(state.binding!, state.tombstone) }, previous: actual }
    })
  }

  migrate(): Promise<number> {
    // Records in etcd are signed by the node that wrote them; nothing to re-sign.
    return Promise.resolve(0)
  }

  async purgeTombstones(before: number): Promise<number> {
    this.#check()
    const kv = this.#c.kv
    let n = 0
    for (const [name, h] of [...this.#names]) {
      if (!('tombstone' in h.value) || h.value.tombstone.signedAt >= before) continue
      const key = `${K.names}${name}`
      // Every node's janitor may try: only the one that sees the same revision deletes.
      const r = await this.#c.call('names', () => kv.if(key, 'Mod', '==', h.mod).then(kv.delete().key(key)).commit())
      if (r.succeeded) {
        this.#names.delete(name)
        n++
      }
    }
    return n
  }

  list(prefix: string, after: string | undefined, limit: number): Array<[string, NameRecord]> {
    this.#check()
    const out: Array<[string, NameRecord]> = []
    for (const name of [...this.#names.keys()].sort()) {
      if (out.length >= limit) break
      if (!name.startsWith(prefix) || (after !== undefined && name <= after)) continue
      const r = this.get(name)
      if (r !== undefined) out.push([name, r])
    }
    return out
  }

  async probe(): Promise<void> {
    this.#check()
    if (!(await this.#c.probe())) throw unavailable(new Error('no quorum'))
  }

  count(): number {
    let n = 0
    for (const h of this.#names.values()) if ('binding' in h.value) n++
    return n
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#listeners.clear()
    await this.#watcher?.cancel().catch(() => undefined)
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('name store is closed')
  }
}

/** Opens the cluster's name store on etcd (loads every binding, then follows the prefix). */
export async function openEtcdNameStore(c: EtcdCoordinator): Promise<NameStore> {
  const s = new EtcdNameStore(c)
  await s.open()
  return s
}
