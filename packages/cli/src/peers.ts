/**
 * A node's peers (SPEC.md §5 "Peers", §6b): other nodes' admin URLs, from whose `/status` their
 * node id, node key and service URLs are learnt. The first contact pins `{nodeId, nodeKey}` (see
 * `pins.ts`), or the shared passport's enrolment provides it; a peer that later reports another id
 * or key is refused and logged until an operator forgets its pin. Only accepted peers are routed
 * to (`NodeTransport`), placed on by storage, asked for their issuer keys (accepted by storage for
 * `storage:replicate` only) and listed in the node directory the services get.
 *
 * What was learnt about each peer's service URLs is kept in `peers.json`, so a node that restarts
 * while a peer is down still places copies on it consistently.
 *
 * @module
 */

import { readFile } from 'node:fs/promises'
import type { KeyObject } from 'node:crypto'
import {
  HttpTransport,
  isNodeId,
  nodePublicKey,
  normalizeEndpoint,
  remoteKeySource,
  staticNodeDirectory,
  type Clock,
  type KeySource,
  type KnownNode,
  type Logger,
  type NodeDirectory,
  type RemoteKeySource,
  type Transport,
} from '@ron/core'
import { writeSecret } from './keys.js'
import type { Pin, PinSource, PinStore } from './pins.js'

/** Where a peer stands. */
export type PeerState =
  /** Never answered and nothing pinned: not used yet. */
  | 'unknown'
  /** Pinned and consistent with its pin: used. */
  | 'pinned'
  /** Answered with something this node refuses (not a node id, no key, another key than pinned): not used. */
  | 'refused'

/** What a node knows about one peer (as `/status` lists it). */
export interface PeerRecord {
  /** The peer's admin URL, as configured. */
  admin: string
  state: PeerState
  /** Its pinned node id. */
  nodeId?: string
  /** Its pinned node key (base64url raw Ed25519). */
  nodeKey?: string
  /** How the pin came about. */
  source?: PinSource
  /** When it was pinned (Unix ms). */
  pinnedAt?: number
  /** Its services' URLs, as last learnt from a `/status` consistent with its pin. */
  services: Record<string, string>
  /** When its `/status` last answered consistently (ms), 0 if never. */
  seenAt: number
  /** Why the last attempt failed or the peer is refused. */
  error?: string
}

/** The enrolled `{nodeId → nodeKey}` of the passport the node uses, or undefined when it cannot be read now. */
export type EnrolmentSource = () => Promise<ReadonlyMap<string, string> | undefined>

/** Options of {@link PeerDirectory}. */
export interface PeerDirectoryOptions {
  /** Peers' admin URLs. */
  admins: readonly string[]
  /** The pins (in the data directory, or in memory). */
  pins: PinStore
  /** Where learnt service URLs are kept (undefined: nowhere, amnesia). */
  file: string | undefined
  /** This node as the directory lists it first (its id, key, admin URL and own service URLs). */
  self: KnownNode
  /** HTTP transport for `/status` and `/keys`. */
  http: HttpTransport
  /**
   * The passport's enrolments: a peer enrolled there must report the enrolled key, and a new peer
   * is pinned only once they could be read. @default none (trust on first contact)
   */
  enrolled?: EnrolmentSource
  logger: Logger
  /** Refresh period. @default 2000 */
  intervalMs?: number
  now?: () => number
}

/** Normalises an admin URL (no trailing slash). */
export function normalizeUrl(url: string): string {
  return new URL(url).href.replace(/\/+$/, '')
}

interface Peer {
  admin: string
  /** True once it answered this run, or its pin came with service URLs from an earlier run. */
  contacted: boolean
  services: Record<string, string>
  seenAt: number
  refused?: string
  error?: string
}

/** A short form of a node key for messages. */
const short = (key: string | undefined): string => (key === undefined ? 'none' : `${key.slice(0, 10)}…`)

/** The peers of a node: discovery, pinning, persistence, key sources, the node directory. */
export class PeerDirectory {
  readonly #o: PeerDirectoryOptions
  readonly #peers = new Map<string, Peer>()
  readonly #keySources = new Map<string, RemoteKeySource>()
  readonly #abort = new AbortController()
  #timer: NodeJS.Timeout | undefined
  #directory: NodeDirectory
  /** Called when the set of accepted peers, their ids or their service URLs change. */
  onChange: (() => void) | undefined

  constructor(options: PeerDirectoryOptions) {
    this.#o = options
    for (const a of options.admins) this.#peers.set(normalizeUrl(a), { admin: normalizeUrl(a), contacted: false, services: {}, seenAt: 0 })
    this.#directory = this.#buildDirectory()
  }

  /** Loads the service URLs earlier runs learnt (`peers.json`) for peers still pinned under the same id. */
  async load(): Promise<void> {
    if (this.#o.file === undefined) return
    let saved: { admin?: unknown; nodeId?: unknown; services?: unknown }[]
    try {
      saved = (JSON.parse(await readFile(this.#o.file, 'utf8')) as { peers?: typeof saved }).peers ?? []
    } catch {
      return
    }
    for (const p of saved) {
      const cur = typeof p.admin === 'string' ? this.#peers.get(p.admin) : undefined
      const pin = cur === undefined ? undefined : this.#o.pins.get(cur.admin)
      if (cur === undefined || pin === undefined || p.nodeId !== pin.nodeId || typeof p.services !== 'object' || p.services === null) continue
      cur.services = cleanServices(p.services)
      cur.contacted = true
    }
    this.#directory = this.#buildDirectory()
  }

  /** Every configured peer, in configuration order. */
  list(): PeerRecord[] {
    return [...this.#peers.values()].map((p) => this.#record(p))
  }

  /** True once every peer answered (accepted or refused) or is known from an earlier run. */
  settled(): boolean {
    return [...this.#peers.values()].every((p) => p.contacted || p.refused !== undefined)
  }

  /** Node ids of the accepted peers whose storage URL is known, in configuration order. */
  storagePeers(): string[] {
    return this.#accepted().flatMap(({ pin, peer }) => (peer.services['storage'] === undefined ? [] : [pin.nodeId]))
  }

  /** The URLs of `service` on the accepted peers. */
  serviceUrls(service: string): string[] {
    return this.#accepted().flatMap(({ peer }) => (peer.services[service] === undefined ? [] : [peer.services[service]]))
  }

  /** The URL of `service` on the accepted peer with node id `nodeId`; undefined for anything else. */
  urlOf(nodeId: string, service = 'storage'): string | undefined {
    if (!isNodeId(nodeId)) return undefined
    for (const { pin, peer } of this.#accepted()) if (pin.nodeId === nodeId) return peer.services[service]
    return undefined
  }

  /** This node first, then the accepted peers with their pinned keys, advertised service URLs and admin URLs. */
  directory(): NodeDirectory {
    return {
      selfId: this.#o.self.id,
      get: (id) => this.#directory.get(id),
      byEndpoint: (url) => this.#directory.byEndpoint(url),
      list: () => this.#directory.list(),
    }
  }

  /**
   * Forgets the pin of the peer at `admin` (`ron-node peers forget`): its next answer is pinned
   * afresh. Resolves once the pin is gone from disk.
   * @returns false when `admin` had no pin.
   */
  async forget(admin: string): Promise<boolean> {
    const url = normalizeUrl(admin)
    const had = await this.#o.pins.forget(url)
    const peer = this.#peers.get(url)
    if (peer !== undefined) {
      const wasUsed = peer.refused === undefined && had
      peer.services = {}
      peer.contacted = false
      peer.seenAt = 0
      delete peer.refused
      delete peer.error
      this.#o.logger.warn({ peer: url }, 'peer pin forgotten by the operator; its next answer is pinned afresh')
      this.#directory = this.#buildDirectory()
      if (wasUsed) this.onChange?.()
    }
    return had
  }

  /** Asks every peer's `/status` once (in parallel, each bounded by `timeoutMs`). */
  async refresh(timeoutMs = 2000): Promise<void> {
    const before = this.#fingerprint()
    let enrolled: ReadonlyMap<string, string> | undefined | null = null
    const enrolment = async (): Promise<ReadonlyMap<string, string> | undefined> => {
      if (enrolled === null) enrolled = this.#o.enrolled === undefined ? new Map() : await this.#o.enrolled().catch(() => undefined)
      return enrolled
    }
    await Promise.all([...this.#peers.values()].map((p) => this.#refreshOne(p, timeoutMs, enrolment)))
    if (this.#fingerprint() !== before) {
      this.#directory = this.#buildDirectory()
      await this.#save()
      this.#o.logger.info({ peers: this.list().map((p) => ({ admin: p.admin, state: p.state, nodeId: p.nodeId, storage: p.services['storage'] })) }, 'peers updated')
      this.onChange?.()
    }
  }

  async #refreshOne(p: Peer, timeoutMs: number, enrolment: () => Promise<ReadonlyMap<string, string> | undefined>): Promise<void> {
    let body: { nodeId?: unknown; nodeKey?: unknown; services?: unknown }
    try {
      const res = await this.#o.http.request(p.admin, { method: 'GET', path: '/status', timeoutMs, signal: this.#abort.signal, headers: { accept: 'application/json' } })
      if (res.status !== 200) {
        await res.dump()
        throw new Error(`/status answered ${res.status}`)
      }
      body = await res.json()
      if (body === null || typeof body !== 'object') throw new Error('/status is not a JSON object (not a ron-node admin URL?)')
    } catch (e) {
      p.error = e instanceof Error ? e.message : String(e)
      return
    }
    delete p.error
    const refuse = (why: string, level: 'warn' | 'error' = 'warn'): void => {
      if (p.refused !== why) this.#o.logger[level]({ peer: p.admin, reported: { nodeId: body.nodeId, nodeKey: body.nodeKey } }, `peer refused: ${why}`)
      p.refused = why
    }
    const { nodeId, nodeKey } = body
    if (!isNodeId(nodeId)) return refuse(`its /status reports ${JSON.stringify(nodeId) ?? 'no'} as node id; a node id is n + 16 lowercase hex digits`)
    if (nodeId === this.#o.self.id) return refuse('its /status reports this node’s own id')
    if (typeof nodeKey !== 'string' || nodePublicKey(nodeKey) === undefined) return refuse('its /status reports no valid nodeKey (base64url raw Ed25519)')
    const services = cleanServices(body.services)
    const own = new Set([...Object.values(this.#o.self.services), ...(this.#o.self.admin === undefined ? [] : [this.#o.self.admin])].map((u) => normalizeEndpoint(u)))
    const stolen = Object.entries(services).find(([, url]) => own.has(url))
    if (stolen !== undefined) return refuse(`it reports this node’s own URL ${stolen[1]} as its ${stolen[0]}`)
    const enrolments = await enrolment()
    const enrolledKey = enrolments?.get(nodeId)
    if (enrolledKey !== undefined && enrolledKey !== nodeKey) {
      return refuse(`node ${nodeId} reports key ${short(nodeKey)} but is enrolled with the passport under ${short(enrolledKey)}`, 'error')
    }
    const other = this.#o.pins.byId(nodeId)
    if (other !== undefined && other.admin !== p.admin) return refuse(`node id ${nodeId} is pinned for another peer (${other.admin})`)
    const pin = this.#o.pins.get(p.admin)
    if (pin === undefined || (pin.nodeId === nodeId && pin.nodeKey !== nodeKey && enrolledKey === nodeKey)) {
      // First contact, or an operator re-enrolled this node's new key with the passport.
      if (enrolments === undefined) {
        p.error = 'cannot read the passport’s enrolments yet; the peer is pinned once they can be read'
        return
      }
      const next: Pin = { admin: p.admin, nodeId, nodeKey, pinnedAt: this.#o.now?.() ?? Date.now(), source: enrolledKey === undefined ? 'first-contact' : 'enrolment' }
      try {
        await this.#o.pins.pin(next)
      } catch (e) {
        p.error = e instanceof Error ? e.message : String(e)
        return
      }
      if (pin === undefined) this.#o.logger.info({ peer: p.admin, nodeId, nodeKey, source: next.source }, 'peer pinned')
      else this.#o.logger.warn({ peer: p.admin, nodeId, was: pin.nodeKey, now: nodeKey }, 'peer re-pinned: its new key is enrolled with the passport')
    } else if (pin.nodeId !== nodeId || pin.nodeKey !== nodeKey) {
      return refuse(
        pin.nodeId !== nodeId
          ? `its node id changed from ${pin.nodeId} to ${nodeId}; refused until an operator runs ron-node peers forget ${p.admin}`
          : `its node key changed from ${short(pin.nodeKey)} to ${short(nodeKey)}; refused until an operator runs ron-node peers forget ${p.admin}`,
        'error',
      )
    }
    if (p.refused !== undefined) this.#o.logger.info({ peer: p.admin, nodeId }, 'peer accepted again')
    delete p.refused
    p.contacted = true
    p.services = services
    p.seenAt = this.#o.now?.() ?? Date.now()
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
   * The accepted peers' issuer keys (each peer's admin `/keys`, fetched on an unknown `kid` with a
   * cooldown): give it to storage as `peerKeys`, which accepts them for `storage:replicate` only.
   * A refused or unpinned peer's keys are never asked.
   */
  keySource(): KeySource {
    return {
      getKey: async (kid: string, signal?: AbortSignal): Promise<KeyObject | undefined> => {
        for (const { peer } of this.#accepted()) {
          let src = this.#keySources.get(peer.admin)
          if (src === undefined) {
            src = remoteKeySource({ transport: this.#o.http, target: peer.admin, path: '/keys', cooldownMs: 1000, timeoutMs: 2000 })
            this.#keySources.set(peer.admin, src)
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

  /** Stops the background refresh. */
  close(): void {
    this.#abort.abort()
    if (this.#timer !== undefined) clearTimeout(this.#timer)
  }

  #accepted(): { pin: Pin; peer: Peer }[] {
    return [...this.#peers.values()].flatMap((peer) => {
      const pin = this.#o.pins.get(peer.admin)
      return pin === undefined || peer.refused !== undefined || !peer.contacted ? [] : [{ pin, peer }]
    })
  }

  #record(p: Peer): PeerRecord {
    const pin = this.#o.pins.get(p.admin)
    const state: PeerState = p.refused !== undefined ? 'refused' : pin !== undefined && p.contacted ? 'pinned' : 'unknown'
    const error = p.refused ?? p.error
    return {
      admin: p.admin,
      state,
      ...(pin === undefined ? {} : { nodeId: pin.nodeId, nodeKey: pin.nodeKey, source: pin.source, pinnedAt: pin.pinnedAt }),
      services: state === 'pinned' ? { ...p.services } : {},
      seenAt: p.seenAt,
      ...(error === undefined ? {} : { error }),
    }
  }

  /** What a change of routing depends on: the accepted peers, their ids and their service URLs. */
  #fingerprint(): string {
    return JSON.stringify(this.#accepted().map(({ pin, peer }) => [pin.admin, pin.nodeId, pin.nodeKey, peer.services]))
  }

  #buildDirectory(): NodeDirectory {
    const peers: KnownNode[] = this.#accepted().map(({ pin, peer }) => ({ id: pin.nodeId, nodeKey: pin.nodeKey, admin: pin.admin, services: { ...peer.services } }))
    return staticNodeDirectory([this.#o.self, ...peers])
  }

  async #save(): Promise<void> {
    if (this.#o.file === undefined) return
    try {
      const peers = this.#accepted().map(({ pin, peer }) => ({ admin: pin.admin, nodeId: pin.nodeId, services: peer.services, seenAt: peer.seenAt }))
      await writeSecret(this.#o.file, `${JSON.stringify({ peers }, null, 2)}\n`)
    } catch (e) {
      this.#o.logger.warn({ err: e }, 'cannot save peers.json')
    }
  }
}

/**
 * A `/status` `services` object → name → normalised http(s) URL of the services the peer runs
 * itself (a service it uses on another node, `remote: true`, is not its own; anything that is not
 * an http(s) URL is dropped).
 */
function cleanServices(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (raw === null || typeof raw !== 'object') return out
  for (const [name, s] of Object.entries(raw as Record<string, unknown>)) {
    if (s !== null && typeof s === 'object' && (s as { remote?: unknown }).remote === true) continue
    const url = typeof s === 'string' ? s : s !== null && typeof s === 'object' ? (s as { url?: unknown }).url : undefined
    const clean = typeof url === 'string' ? normalizeEndpoint(url) : undefined
    if (clean !== undefined && /^[a-z][a-z0-9-]{0,31}$/.test(name)) out[name] = clean
  }
  return out
}

/** Where passport lists the enrolled node keys, without a token (SPEC.md §5 "Peers"). */
export const NODE_KEYS_PATH = '/v1/passport/node-keys'

/**
 * The enrolments of the passport the node uses, read through `transport`'s `passport` target (the
 * node's own passport in-process, or its configured `passport.url`): `GET /v1/passport/node-keys`
 * → `{nodes: [{nodeId, nodeKey}]}`, cached for `ttlMs`. Resolves undefined while passport cannot
 * answer; a passport without the route (404, an older release) has nothing to vouch for.
 */
export function passportEnrolments(transport: Transport, clock: Pick<Clock, 'now'>, ttlMs = 5000): EnrolmentSource {
  let cached: { at: number; map: ReadonlyMap<string, string> } | undefined
  return async () => {
    if (cached !== undefined && clock.now() - cached.at < ttlMs) return cached.map
    const res = await transport.request('passport', { method: 'GET', path: NODE_KEYS_PATH, timeoutMs: 2000, headers: { accept: 'application/json' } })
    const map = new Map<string, string>()
    if (res.status === 200) {
      const body = await res.json<{ nodes?: unknown }>()
      for (const n of Array.isArray(body.nodes) ? (body.nodes as { nodeId?: unknown; nodeKey?: unknown }[]) : []) {
        if (isNodeId(n.nodeId) && typeof n.nodeKey === 'string' && nodePublicKey(n.nodeKey) !== undefined) map.set(n.nodeId, n.nodeKey)
      }
    } else {
      await res.dump()
      if (res.status !== 404) return undefined
    }
    cached = { at: clock.now(), map }
    return map
  }
}
