/**
 * A node's peers (SPEC.md §6b): other nodes' admin URLs, from whose `/status` their node id and
 * service URLs are learnt, and from whose `/keys` their issuer keys are read (accepted by storage
 * for `storage:replicate` only). What was learnt is kept in `peers.json`, so a node that restarts
 * while a peer is down still places copies on it consistently. The {@link NodeTransport} routes a
 * peer's node id to its storage URL over HTTP and every other name in-process.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import type { KeyObject } from 'node:crypto'
import {
  HttpTransport,
  MemoryTransport,
  remoteKeySource,
  type KeySource,
  type Logger,
  type RemoteKeySource,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '@ron/core'
import { writeSecret } from './keys.js'

/** What a node knows about one peer. */
export interface PeerRecord {
  /** The peer's admin URL, as configured. */
  admin: string
  /** Its node id, once learnt. */
  nodeId?: string
  /** Its services' URLs, once learnt. */
  services: Record<string, string>
  /** When its `/status` last answered (ms), 0 if never. */
  seenAt: number
  /** Why the last attempt failed, if it did. */
  error?: string
}

/** Options of {@link PeerDirectory}. */
export interface PeerDirectoryOptions {
  /** Peers' admin URLs. */
  admins: readonly string[]
  /** Where learnt peers are kept (undefined: nowhere, amnesia). */
  file: string | undefined
  /** This node's id (a peer listing itself is ignored). */
  selfId: string
  /** HTTP transport for `/status` and `/keys`. */
  http: HttpTransport
  logger: Logger
  /** Refresh period. @default 2000 */
  intervalMs?: number
  now?: () => number
}

/** Normalises an admin URL (no trailing slash). */
export function normalizeUrl(url: string): string {
  return new URL(url).href.replace(/\/+$/, '')
}

/** The peers of a node: discovery, persistence, key sources. */
export class PeerDirectory {
  readonly #o: PeerDirectoryOptions
  readonly #peers = new Map<string, PeerRecord>()
  readonly #keySources = new Map<string, RemoteKeySource>()
  readonly #abort = new AbortController()
  #timer: NodeJS.Timeout | undefined
  /** Called when a peer's node id or service URLs change. */
  onChange: (() => void) | undefined

  constructor(options: PeerDirectoryOptions) {
    this.#o = options
    for (const a of options.admins) this.#peers.set(normalizeUrl(a), { admin: normalizeUrl(a), services: {}, seenAt: 0 })
  }

  /** Loads what earlier runs learnt (`peers.json`); peers no longer configured are ignored. */
  async load(): Promise<void> {
    if (this.#o.file === undefined) return
    let saved: PeerRecord[]
    try {
      saved = (JSON.parse(await readFile(this.#o.file, 'utf8')) as { peers?: PeerRecord[] }).peers ?? []
    } catch {
      return
    }
    for (const p of saved) {
      const cur = this.#peers.get(p.admin)
      if (cur === undefined || typeof p.nodeId !== 'string' || p.nodeId === this.#o.selfId) continue
      cur.nodeId = p.nodeId
      cur.services = typeof p.services === 'object' && p.services !== null ? { ...p.services } : {}
    }
  }

  /** Every configured peer. */
  list(): PeerRecord[] {
    return [...this.#peers.values()].map((p) => ({ ...p, services: { ...p.services } }))
  }

  /** Node ids of the peers whose storage URL is known. */
  storagePeers(): string[] {
    return [...this.#peers.values()].flatMap((p) => (p.nodeId !== undefined && p.services['storage'] !== undefined ? [p.nodeId] : []))
  }

  /** The URL of `service` on the peer with node id `nodeId`. */
  urlOf(nodeId: string, service = 'storage'): string | undefined {
    for (const p of this.#peers.values()) if (p.nodeId === nodeId) return p.services[service]
    return undefined
  }

  /** Asks every peer's `/status` once (in parallel, each bounded by `timeoutMs`). */
  async refresh(timeoutMs = 2000): Promise<void> {
    let changed = false
    await Promise.all(
      [...this.#peers.values()].map(async (p) => {
        try {
          const res = await this.#o.http.request(p.admin, { method: 'GET', path: '/status', timeoutMs, signal: this.#abort.signal, headers: { accept: 'application/json' } })
          if (res.status !== 200) {
            await res.dump()
            throw new Error(`/status answered ${res.status}`)
          }
          const body = await res.json<{ nodeId?: unknown; services?: Record<string, { url?: unknown }> }>()
          if (typeof body.nodeId !== 'string') throw new Error('/status has no nodeId (not a ron-node admin URL?)')
          if (body.nodeId === this.#o.selfId) throw new Error('this is the node itself')
          const services: Record<string, string> = {}
          for (const [name, s] of Object.entries(body.services ?? {})) if (typeof s.url === 'string') services[name] = s.url
          if (p.nodeId !== body.nodeId || JSON.stringify(p.services) !== JSON.stringify(services)) changed = true
          p.nodeId = body.nodeId
          p.services = services
          p.seenAt = this.#o.now?.() ?? Date.now()
          delete p.error
        } catch (e) {
          p.error = e instanceof Error ? e.message : String(e)
        }
      }),
    )
    if (changed) {
      await this.#save()
      this.#o.logger.info({ peers: this.list().map((p) => ({ admin: p.admin, nodeId: p.nodeId, storage: p.services['storage'] })) }, 'peers updated')
      this.onChange?.()
    }
  }

  /** Refreshes every `intervalMs` in the background until {@link close}. */
  start(): void {
    if (this.#peers.size === 0 || this.#timer !== undefined) return
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        void this.refresh().finally(() => {
          if (!this.#abort.signal.aborted) tick()
        })
      }, this.#o.intervalMs ?? 2000)
      this.#timer.unref()
    }
    tick()
  }

  /**
   * The peers' issuer keys (each peer's admin `/keys`, fetched on an unknown `kid` with a
   * cooldown): give it to storage as `peerKeys`, which accepts them for `storage:replicate` only.
   */
  keySource(): KeySource {
    return {
      getKey: async (kid: string, signal?: AbortSignal): Promise<KeyObject | undefined> => {
        for (const p of this.#peers.values()) {
          let src = this.#keySources.get(p.admin)
          if (src === undefined) {
            src = remoteKeySource({ transport: this.#o.http, target: p.admin, path: '/keys', cooldownMs: 1000, timeoutMs: 2000 })
            this.#keySources.set(p.admin, src)
          }
          try {
            const key = await src.getKey(kid, signal)
            if (key !== undefined) return key
          } catch {
            // That peer is unreachable: try the others.
          }
        }
        return undefined
      },
    }
  }

  async #save(): Promise<void> {
    if (this.#o.file === undefined) return
    try {
      await writeSecret(this.#o.file, `${JSON.stringify({ peers: this.list().map(({ error: _e, ...p }) => p) }, null, 2)}\n`)
    } catch (e) {
      this.#o.logger.warn({ err: e }, 'cannot save peers.json')
    }
  }

  /** Stops the background refresh. */
  close(): void {
    this.#abort.abort()
    if (this.#timer !== undefined) clearTimeout(this.#timer)
  }
}

/**
 * The transport of a node's services: a peer's node id goes to its storage URL over HTTP, an
 * `http(s)://` URL goes over HTTP as is, and every other name to the services mounted in-process.
 */
export class NodeTransport implements Transport {
  readonly memory: MemoryTransport
  readonly http: HttpTransport
  #peers: PeerDirectory | undefined

  constructor(memory: MemoryTransport, http: HttpTransport) {
    this.memory = memory
    this.http = http
  }

  /** Routes peers' node ids through `peers`. */
  usePeers(peers: PeerDirectory): void {
    this.#peers = peers
  }

  request(target: string, req: TransportRequest): Promise<TransportResponse> {
    const peerUrl = this.#peers?.urlOf(target)
    if (peerUrl !== undefined) return this.http.request(peerUrl, req)
    if (/^https?:\/\//.test(target)) return this.http.request(target, req)
    return this.memory.request(target, req)
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.memory.close(), this.http.close()])
  }
}
