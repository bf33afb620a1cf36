import { afterEach, describe, expect, it } from 'vitest'
import { ALL_SCOPES, harness, payload, type Harness } from './helpers.js'
import { memoryRequest } from '@ron/core/testing'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const busyLines = (text: string): Map<string, number> =>
  new Map(
    text
      .split('\n')
      .filter((l) => l.startsWith('busy_rejections_total{'))
      .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]),
  )

describe('busy_rejections_total', () => {
  it('a full proposals queue counts its 429 on a line that was registered at zero at startup', async () => {
    h = await harness({ queues: { proposals: 1 } })
    const x = h
    const atStart = busyLines(await x.svc.metricsText())
    const token = x.issuer.mint({ scope: ALL_SCOPES })
    // Sent in one turn: the Committer takes at most one, the queue holds one, the rest are refused.
    const sends = Array.from({ length: 4 }, (_, i) =>
      memoryRequest(x.svc, { method: 'POST', path: '/registry/proposals', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ payload: payload(i) }) }),
    )
    const statuses = await Promise.all(sends.map(async (p) => (await p).status))
    const refused = statuses.filter((s) => s === 429).length
    expect(refused).toBeGreaterThan(0)
    const after = busyLines(await x.svc.metricsText())
    const moved = [...after].filter(([k, v]) => v !== (atStart.get(k) ?? 0))
    expect(moved.map(([, v]) => v)).toEqual([refused])
    expect(atStart.has(moved[0]![0]), `${moved[0]![0]} not registered at startup: ${[...atStart.keys()].join(', ')}`).toBe(true)
  })

  it('lists the queue and lag lines at zero at startup (a fresh /metrics shows them)', async () => {
    h = await harness()
    const text = await h.svc.metricsText()
    for (const line of [
      'queue_depth{queue="proposals",service="registry"} 0',
      'queue_depth{queue="approvals",service="registry"} 0',
      'queue_depth{queue="retention_cmd",service="registry"} 0',
      'bus_lagged_total{topic="committed",service="registry"} 0',
      'bus_lagged_total{topic="stream",service="registry"} 0',
    ]) {
      expect(text.split('\n'), line).toContain(line)
    }
  })
})
