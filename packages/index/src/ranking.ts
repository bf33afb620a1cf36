/**
 * Provider ranking by health and observed latency. A provider record's score is
 * `freshness × health × speed`: `freshness` is `0.5 + 0.5 ×` the share of its TTL still left (1
 * just announced, 0.5 at expiry: a node that announced recently is more likely up), `health` is 1
 * for records in the local table and the health of the peer index that reported it otherwise (1
 * closed, 0.5 half-open), and `speed` is `1 / (1 + latencyMs / 100)` of that peer (1 for local
 * records). Ties break by node id, so the order is deterministic.
 *
 * @module
 */

import type { RankedProvider } from './answer.js'
import type { ProviderRecord } from './providers.js'

/** Scores live local records. */
export function scoreLocal(records: readonly ProviderRecord[], now: number): RankedProvider[] {
  return records.map((r) => {
    const life = Math.max(1, r.expiresAt - r.announcedAt)
    const freshness = Math.min(1, Math.max(0, (r.expiresAt - now) / life))
    return { node: r.node, endpoint: r.endpoint, score: round(0.5 + 0.5 * freshness) }
  })
}

/** Rescales providers reported by a peer by that peer's health and latency. */
export function scoreFromPeer(providers: readonly RankedProvider[], health: number, latencyMs: number | undefined): RankedProvider[] {
  const speed = latencyMs === undefined ? 1 : 1 / (1 + latencyMs / 100)
  return providers.map((p) => ({ node: p.node, endpoint: p.endpoint, score: round(Math.max(0.001, p.score * Math.max(0.5, health) * speed)) }))
}

/** Merges provider lists (one entry per node, best score kept), sorts best first, keeps `limit`. */
export function rank(lists: ReadonlyArray<readonly RankedProvider[]>, limit: number): RankedProvider[] {
  const best = new Map<string, RankedProvider>()
  for (const list of lists) {
    for (const p of list) {
      const cur = best.get(p.node)
      if (cur === undefined || p.score > cur.score) best.set(p.node, p)
    }
  }
  return [...best.values()].sort((a, b) => b.score - a.score || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0)).slice(0, limit)
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000
}
