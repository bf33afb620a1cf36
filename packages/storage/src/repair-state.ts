/**
 * Repair state, apart from the planner that reads it: the repair item and plan types, and
 * {@link RepairState} (suspect marks, per-address status, in-flight items) shared by the planner,
 * the workers and the routes.
 *
 * @module
 */

import type { Address } from '@ron/core'

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

