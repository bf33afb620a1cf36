/**
 * The repair planner (seed svc-storage: "periodic inventory diff, produces repair plans into
 * `repair_tx`"). Each tick diffs what should exist against what does and produces an explainable
 * plan; lost data (corrupt or missing local copies, objects down to their last copy) goes before
 * rebalancing. Items are try-sent into the bounded `repair` queue: when it is full, non-urgent items
 * are shed (`repair_skipped_total{reason="full"}`) and urgent ones are deferred to the next tick.
 *
 * @module
 */

import { isRonError } from '@ron/core'
import type { Address, BoundedQueue, Logger, MetricsSink, Transport } from '@ron/core'
import type { BlobStore } from './store/types.js'
import { bearerHeaders, type TokenFor } from './peer-auth.js'

/** What a repair item does. */
export type RepairAction = 'fetch' | 'push' | 'replace-corrupt'

/** `urgent`: data is lost or down to its last copy; `rebalance`: restoring `rf` with copies left. */
export type RepairPriority = 'urgent' | 'rebalance'

/** One step of a repair plan. */
export interface RepairItem {
  address: Address
  action: RepairAction
  /** Node(s) the bytes come from, best first (this node for pushes). */
  from: string[]
  /** Node that receives the copy. */
  to: string
  /** Human-readable explanation. */
  reason: string
  priority: RepairPriority
}

/** An explainable repair plan. */
export interface RepairPlan {
  node: string
  /** Clock time the plan was computed (ms), or null when no plan was computed yet. */
  computedAt: number | null
  dryRun: boolean
  /** Items in execution order: urgent first. */
  items: RepairItem[]
  /** Objects that cannot be repaired from anywhere right now, with the reason. */
  unrepairable: { address: Address; reason: string }[]
  /** Peers that did not answer during planning. */
  unreachable: string[]
  /** Local objects examined. */
  objects: number
  /** Items accepted by the repair queue, shed (non-urgent, queue full), deferred (urgent, queue full), or already queued. */
  enqueued: number
  skipped: number
  deferred: number
  alreadyQueued: number
}

/** Repair state of one object, shown by `GET /o/:addr/status`. */
export interface RepairStatus {
  state: 'suspect' | 'queued' | 'running' | 'failed' | 'done'
  action?: RepairAction
  at: number
  error?: string
}

const STATE_LIMIT = 4096

/**
 * What a peer said about one object: `has` (200), `none` (404), `bad` (422: its copy fails
 * verification, so it has no good copy), `unknown` (429/503 or any other answer: busy or
 * failing for this object, ask again next tick) or `down` (a transport failure: the peer is
 * treated as unreachable for the rest of the tick).
 */
export type PeerProbe = 'has' | 'none' | 'bad' | 'unknown' | 'down'

/** Shared bookkeeping between the read path (marks), the planner and the workers. */
export class RepairState {
  readonly #suspects = new Set<Address>()
  readonly #status = new Map<Address, RepairStatus>()
  readonly #inflight = new Set<string>()
  #idle: Array<() => void> = []

  /** Marks `address` as corrupt locally: the next planner tick schedules an urgent repair. */
  markSuspect(address: Address, now: number): void {
    this.#suspects.add(address)
    this.set(address, { state: 'suspect', at: now })
  }

  /**
   * Forgets everything known about `address`: its suspect mark and its repair status. Called when
   * the copy was repaired or verified good, when it is gone, and by `DELETE /o/:addr` (inside the
   * delete's per-address lock) so that a deleted corrupt object is not "repaired" back and its
   * status answers 404.
   */
  clearSuspect(address: Address): void {
    this.#suspects.delete(address)
    this.#status.delete(address)
  }

  /** True when `address` is marked corrupt. */
  isSuspect(address: Address): boolean {
    return this.#suspects.has(address)
  }

  /** Objects marked corrupt. */
  suspects(): Address[] {
    return [...this.#suspects]
  }

  /** Repair status of `address`, if any. */
  get(address: Address): RepairStatus | undefined {
    return this.#status.get(address)
  }

  /** Records a status (bounded: the oldest entries are forgotten). */
  set(address: Address, s: RepairStatus): void {
    this.#status.delete(address)
    this.#status.set(address, s)
    if (this.#status.size > STATE_LIMIT) {
      const oldest = this.#status.keys().next().value
      if (oldest !== undefined) this.#status.delete(oldest)
    }
  }

  /** True when an identical item is queued or running. */
  inflight(item: RepairItem): boolean {
    return this.#inflight.has(itemKey(item))
  }

  /** Records that `item` was queued. */
  begin(item: RepairItem): void {
    this.#inflight.add(itemKey(item))
  }

  /** Records that `item` finished (either way). */
  end(item: RepairItem): void {
    this.#inflight.delete(itemKey(item))
    if (this.#inflight.size === 0) {
      const waiters = this.#idle
      this.#idle = []
      for (const w of waiters) w()
    }
  }

  /** Items queued or running. */
  get pending(): number {
    return this.#inflight.size
  }

  /** Resolves when no repair item is queued or running. */
  idle(): Promise<void> {
    if (this.#inflight.size === 0) return Promise.resolve()
    return new Promise<void>((resolve) => this.#idle.push(resolve))
  }
}

function itemKey(i: RepairItem): string {
  return `${i.action}|${i.address}|${i.to}`
}

/** Dependencies of {@link RepairPlanner}. */
export interface RepairPlannerOptions {
  nodeId: string
  peers: string[]
  rf: number
  store: BlobStore
  transport: Transport
  /** The bearer token of a probe (scope `storage:replicate`). */
  token: TokenFor
  probeTimeoutMs: number
  /** The full rendezvous ranking of all nodes for an address. */
  ranking(address: Address): string[]
  pinned(): Address[]
  state: RepairState
  queue: BoundedQueue<RepairItem>
  metrics: MetricsSink
  logger: Logger
  now(): number
}

/** Computes repair plans and feeds the repair queue. */
export class RepairPlanner {
  readonly #o: RepairPlannerOptions
  #last: RepairPlan

  constructor(o: RepairPlannerOptions) {
    this.#o = o
    this.#last = emptyPlan(o.nodeId)
  }

  /** The plan of the last (non-dry-run) tick. */
  get lastPlan(): RepairPlan {
    return this.#last
  }

  /**
   * Computes a plan; unless `dryRun`, try-sends its items into the repair queue.
   * @throws `CanceledError` when `signal` aborts.
   */
  async plan(signal: AbortSignal, dryRun = false): Promise<RepairPlan> {
    const o = this.#o
    const plan: RepairPlan = { ...emptyPlan(o.nodeId), computedAt: o.now(), dryRun }
    const down = new Set<string>()
    const probe = async (peer: string, address: Address): Promise<PeerProbe> => {
      if (down.has(peer)) return 'down'
      const r = await this.#head(peer, address, signal)
      if (r === 'down') down.add(peer)
      return r
    }
    const urgent: RepairItem[] = []
    const rebalance: RepairItem[] = []

    // 1. Local copies known to be corrupt (a read failed verification): replace from a peer.
    for (const address of o.state.suspects()) {
      signal.throwIfAborted()
      const v = await o.store.verify(address, signal)
      if (v.ok || v.reason === 'missing') {
        // Verified good, or gone (deleted, or lost: a pinned object is fetched back by step 2).
        o.state.clearSuspect(address)
        continue
      }
      const { sources, note } = await this.#holders(address, probe)
      const reason = v.reason ?? `chunks [${v.badChunks.join(',')}] fail verification`
      if (sources.length === 0) plan.unrepairable.push({ address, reason: `local copy corrupt (${reason}) and no peer has a good copy${note}` })
      else urgent.push({ address, action: 'replace-corrupt', from: sources, to: o.nodeId, reason: `local copy corrupt: ${reason}`, priority: 'urgent' })
    }

    // 2. Pinned objects missing locally: fetch them back.
    for (const address of o.pinned()) {
      signal.throwIfAborted()
      if ((await o.store.stat(address)) !== undefined) continue
      const { sources, note } = await this.#holders(address, probe)
      if (sources.length === 0) plan.unrepairable.push({ address, reason: `pinned but missing locally and no peer has a good copy${note}` })
      else urgent.push({ address, action: 'fetch', from: sources, to: o.nodeId, reason: 'pinned but missing locally', priority: 'urgent' })
    }

    // 3. Every local object: each reachable placement node must hold a copy.
    if (o.peers.length > 0) {
      for await (const address of o.store.list(signal)) {
        plan.objects++
        if (o.state.isSuspect(address)) continue
        const want: string[] = []
        const missing: { node: string; bad: boolean }[] = []
        let copies = 0
        for (const node of o.ranking(address)) {
          if (want.length >= o.rf) break
          if (node === o.nodeId) {
            want.push(node)
            continue
          }
          const has = await probe(node, address)
          if (has === 'down') continue // gone: the next node in the ranking takes its place
          // Busy or failing for this object: it keeps its place; nothing is pushed elsewhere.
          want.push(node)
          if (has === 'has') copies++
          else if (has === 'none' || has === 'bad') missing.push({ node, bad: has === 'bad' })
        }
        const local = 1
        const total = copies + local
        for (const { node: to, bad } of missing) {
          const lastCopy = total <= 1
          const item: RepairItem = {
            address,
            action: 'push',
            from: [o.nodeId],
            to,
            reason: `${to} is a placement node without a ${bad ? 'good copy (its copy fails verification)' : 'copy'} (${total} of ${o.rf} copies${lastCopy ? '; this is the last copy' : ''})`,
            priority: lastCopy ? 'urgent' : 'rebalance',
          }
          ;(lastCopy ? urgent : rebalance).push(item)
        }
      }
    }

    plan.items = [...urgent, ...rebalance]
    plan.unreachable = [...down]
    if (!dryRun) {
      this.#enqueue(plan)
      this.#last = plan
    }
    return plan
  }

  #enqueue(plan: RepairPlan): void {
    const o = this.#o
    for (const item of plan.items) {
      if (o.state.inflight(item)) {
        plan.alreadyQueued++
        continue
      }
      try {
        o.queue.trySend(item)
        o.state.begin(item)
        o.state.set(item.address, { state: 'queued', action: item.action, at: o.now() })
        plan.enqueued++
      } catch (e) {
        if (!isRonError(e, 'Busy')) throw e
        if (item.priority === 'urgent') {
          // Lost data is never shed: it stays marked and is planned again next tick.
          plan.deferred++
        } else {
          plan.skipped++
          o.metrics.inc('repair_skipped_total', { reason: 'full' })
        }
      }
    }
  }

  /**
   * Peers holding a good copy of `address`, in ranking order, and a note naming the peers that
   * could not tell (busy, failing or unreachable) for the reasons of unrepairable items.
   */
  async #holders(address: Address, probe: (peer: string, a: Address) => Promise<PeerProbe>): Promise<{ sources: string[]; note: string }> {
    const sources: string[] = []
    const unsure: string[] = []
    for (const node of this.#o.ranking(address)) {
      if (node === this.#o.nodeId) continue
      const r = await probe(node, address)
      if (r === 'has') sources.push(node)
      else if (r === 'unknown' || r === 'down') unsure.push(`${node} ${r === 'down' ? 'unreachable' : 'busy or failing'}`)
    }
    return { sources, note: unsure.length === 0 ? '' : ` (${unsure.join(', ')}; retried next tick)` }
  }

  /**
   * HEAD on a peer. Only a transport failure (the request threw: not ready, timeout, connection
   * refused) means `down`; any HTTP answer is about this object only.
   */
  async #head(peer: string, address: Address, signal: AbortSignal): Promise<PeerProbe> {
    let status: number
    try {
      const headers = await bearerHeaders(this.#o.token, signal)
      const res = await this.#o.transport.request(peer, {
        method: 'HEAD',
        path: `/o/${address}`,
        headers,
        signal,
        timeoutMs: this.#o.probeTimeoutMs,
      })
      status = res.status
      await res.dump().catch(() => undefined)
    } catch (e) {
      signal.throwIfAborted()
      this.#o.logger.debug({ err: e, peer }, 'peer probe failed')
      return 'down'
    }
    return probeOf(status)
  }
}

/** Classifies a peer's answer to `HEAD /o/:addr`. */
export function probeOf(status: number): Exclude<PeerProbe, 'down'> {
  if (status === 200) return 'has'
  if (status === 404) return 'none'
  if (status === 422) return 'bad'
  return 'unknown'
}

function emptyPlan(node: string): RepairPlan {
  return {
    node,
    computedAt: null,
    dryRun: false,
    items: [],
    unrepairable: [],
    unreachable: [],
    objects: 0,
    enqueued: 0,
    skipped: 0,
    deferred: 0,
    alreadyQueued: 0,
  }
}
