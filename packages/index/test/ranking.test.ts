import { describe, expect, it } from 'vitest'
import { rank, scoreFromPeer, scoreLocal } from '../src/ranking.js'

describe('provider ranking', () => {
  it('scores local records by freshness: a fresh announcement scores 1, a nearly expired one about 0.5', () => {
    const s = scoreLocal(
      [
        { node: 'old', endpoint: 'e1', announcedAt: 0, expiresAt: 100_000 },
        { node: 'new', endpoint: 'e2', announcedAt: 90_000, expiresAt: 190_000 },
      ],
      95_000,
    )
    expect(s).toEqual([
      { node: 'old', endpoint: 'e1', score: 0.525 },
      { node: 'new', endpoint: 'e2', score: 0.975 },
    ])
  })

  it('scales providers reported by a peer by its health and observed latency', () => {
    const p = [{ node: 'a', endpoint: 'e', score: 1 }]
    expect(scoreFromPeer(p, 1, undefined)[0]!.score).toBe(1)
    expect(scoreFromPeer(p, 1, 100)[0]!.score).toBe(0.5)
    expect(scoreFromPeer(p, 0.5, 0)[0]!.score).toBe(0.5)
    expect(scoreFromPeer(p, 0.5, 300)[0]!.score).toBe(0.125)
  })

  it('merges lists keeping the best score per node, best first, ties by node id, up to the limit', () => {
    const r = rank(
      [
        [
          { node: 'b', endpoint: 'b1', score: 0.5 },
          { node: 'a', endpoint: 'a1', score: 0.5 },
        ],
        [
          { node: 'b', endpoint: 'b2', score: 0.9 },
          { node: 'c', endpoint: 'c1', score: 0.1 },
        ],
      ],
      2,
    )
    expect(r).toEqual([
      { node: 'b', endpoint: 'b2', score: 0.9 },
      { node: 'a', endpoint: 'a1', score: 0.5 },
    ])
  })
})
