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
import type { PeerProbe, RepairItem, RepairPlan, RepairState } from './repair-state.js'

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
  /**
   * Sleeps on the service clock (aborts with `signal`). Used once per peer and tick to wait out
   * an open circuit breaker (at most {@link BREAKER_WAIT_MAX_MS}), so a peer that just came back
   * is probed on the first tick after it is back rather than skipped as down until the next.
   */
  sleep(ms: number, signal: AbortSignal): Promise<void>
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
    const waited = new Set<string>()
    const probe = async (peer: string, address: Address): Promise<PeerProbe> => {
      if (down.has(peer)) return 'down'
      let r = await this.#head(peer, address, signal)
      if (typeof r === 'object' && !waited.has(peer)) {
        // The transport's breaker is still open from when the peer was gone: wait its cooldown
        // out once, then ask again (a half-open probe), instead of writing the peer off.
        waited.add(peer)
        await o.sleep(Math.min(r.retryAfterMs, BREAKER_WAIT_MAX_MS), signal)
        r = await this.#head(peer, address, signal)
      }
      const p = typeof r === 'object' ? 'down' : r
      if (p === 'down') down.add(peer)
      return p
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
  async #head(peer: string, address: Address, signal: AbortSignal): Promise<PeerProbe | { retryAfterMs: number }> {
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
      if (isRonError(e, 'BreakerOpen')) return { retryAfterMs: Math.max(0, e.retryAfterMs ?? 0) }
      return 'down'
    }
    return probeOf(status)
  }
}

/** Longest wait for a peer's open breaker within one planner tick. */
export const BREAKER_WAIT_MAX_MS = 5000

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
