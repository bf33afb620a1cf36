/**
 * Placement: where copies of an object live. Rendezvous hashing (highest random weight): every
 * node scores `BLAKE3(address ‖ node)` and the `rf` highest-scoring nodes of the cluster (this
 * node plus its peers) hold the object. Every node computes the same set from the same
 * membership, so the repair planner of any node agrees on where copies belong, and adding a node
 * moves only about 1/n of the objects.
 *
 * @module
 */

import { blake3 } from '@ron/core'
import type { Address } from '@ron/core'

const enc = new TextEncoder()

/** The rendezvous score of `node` for `address` (higher wins). */
export function placementScore(address: Address, node: string): number {
  const h = blake3(enc.encode(`${address}\n${node}`))
  // 48 bits fit exactly in a double.
  return ((h[0]! * 256 + h[1]!) * 256 + h[2]!) * 2 ** 24 + ((h[3]! * 256 + h[4]!) * 256 + h[5]!)
}

/**
 * The `rf` nodes that should hold `address`, best first (deterministic for a given node set).
 *
 * @example
 * ```ts
 * placement('b3:…', ['storage-a', 'storage-b', 'storage-c'], 2) // e.g. ['storage-c', 'storage-a']
 * ```
 */
export function placement(address: Address, nodes: readonly string[], rf: number): string[] {
  return [...new Set(nodes)]
    .map((n) => ({ n, s: placementScore(address, n) }))
    .sort((a, b) => b.s - a.s || (a.n < b.n ? -1 : 1))
    .slice(0, rf)
    .map((x) => x.n)
}

