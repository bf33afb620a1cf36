import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { concurrencyDocProblems, seededRandom } from '@ron/core/testing'
import { DEFAULT_UPSTREAM_RETRY, createInteropService, interopTopology, parseInteropConfig, upstreamBackoff } from '../src/index.js'

describe('interop topology', () => {
  it('docs/CONCURRENCY.md contains exactly the tables of describe() with default options', async () => {
    const doc = await readFile(new URL('../docs/CONCURRENCY.md', import.meta.url), 'utf8')
    const svc = await createInteropService()
    try {
      expect(concurrencyDocProblems(doc, svc.describe())).toEqual([])
      expect(svc.describe()).toEqual(interopTopology(parseInteropConfig({})))
    } finally {
      await svc.close()
    }
  })

  it('follows the options: capacities and pool sizes per the seed', () => {
    const t = interopTopology(parseInteropConfig({ workQueue: 3, workers: 2, audit: { queue: 7 } }))
    const ch = Object.fromEntries(t.channels.map((c) => [c.name, c]))
    expect(ch.work).toMatchObject({ kind: 'mpsc', capacity: 3, overflow: 'reject-new', pool: { concurrency: 2 } })
    expect(ch.audit).toMatchObject({ kind: 'mpsc', capacity: 7, overflow: 'drop-oldest' })
    expect(ch.events).toMatchObject({ kind: 'broadcast', capacity: 1024, overflow: 'drop-oldest' })
  })
})

describe('interop metrics', () => {
  it('a fresh /metrics shows every interop metric at zero', async () => {
    const svc = await createInteropService()
    try {
      const text = await svc.metricsText()
      for (const line of [
        'webhook_verify_total{provider="github",result="ok",service="interop"} 0',
        'webhook_verify_total{provider="standard",result="stale_timestamp",service="interop"} 0',
        'audit_drop_total{service="interop"} 0',
        'audit_emitted_total{service="interop"} 0',
        'brownout_active{component="webhooks",service="interop"} 0',
        'brownout_active{component="uploads",service="interop"} 0',
        'rejected_total{reason="BACKPRESSURE",service="interop"} 0',
        'io_timeouts_total{op="webhook.ack",service="interop"} 0',
        'backoff_retries_total{op="storage.put",service="interop"} 0',
        'tasks_aborted_total{kind="work-worker",service="interop"} 0',
        'tasks_panicked_total{kind="audit-sink",service="interop"} 0',
        'queue_dropped_total{queue="audit",service="interop"} 0',
        'bus_lagged_total{topic="events",service="interop"} 0',
      ]) {
        expect(text).toContain(line)
      }
      for (const re of [/queue_depth\{[^}]*queue="work"[^}]*\} 0/, /queue_depth\{[^}]*queue="audit"[^}]*\} 0/, /breaker_state\{[^}]*target="storage\/write"[^}]*\} 0/, /breaker_open_total\{[^}]*target="index\/read"[^}]*\} 0/, /upstream_rpc_seconds_count\{[^}]*\} 0/]) {
        expect(text).toMatch(re)
      }
      // No service token source: every delivery and upload would get no_service_token, so their
      // paths (and writes) are unready; reads are not.
      expect(svc.health()).toMatchObject({ live: true, ready: true, writeReady: false, paths: { webhooks: false, uploads: false, reads: true } })
      expect(svc.health().missing).toContain('service_token')
    } finally {
      await svc.close()
    }
  })
})

describe('interop config', () => {
  it('fills the documented defaults', () => {
    expect(parseInteropConfig({})).toMatchObject({
      id: 'interop',
      workQueue: 512,
      workers: 16,
      webhooks: { toleranceSec: 300, ackDeadlineMs: 2000, maxBodyBytes: 1024 * 1024, dedupe: { ttlMs: 600_000 } },
      uploads: { capabilityTtlSec: 60, chunkBytes: 65_536 },
      audit: { sink: 'memory', queue: 512 },
      brownout: { enabled: true, errorRatio: 0.01, errorWindowMs: 300_000, upstreamP95Ms: 500, queueRatio: 0.8 },
      rateLimit: { rps: 500, burst: 250 },
      retry: { tries: 3, baseMinMs: 50, baseMaxMs: 100, factor: 4, capMs: 2000 },
      drainDeadlineMs: 3000,
    })
    expect(parseInteropConfig({ webhooks: { ackDeadlineMs: '1.5s', maxBodyBytes: '64KiB' } }).webhooks).toMatchObject({ ackDeadlineMs: 1500, maxBodyBytes: 65_536 })
  })

  it('refuses unknown keys and bad values, naming the field', () => {
    expect(() => parseInteropConfig({ workQeue: 1 })).toThrow(/workQeue: unknown key/)
    expect(() => parseInteropConfig({ uploads: { capabilityTtlSec: 600 } })).toThrow(/uploads\.capabilityTtlSec/)
    expect(() => parseInteropConfig({ apiKeys: [{ client: 'a', keyHash: 'plaintext' }] })).toThrow(/apiKeys\.0\.keyHash/)
    expect(() => parseInteropConfig({ webhooks: { providers: { standard: { secrets: ['whsec_!!'] } } } })).toThrow(/webhooks\.providers\.standard\.secrets\.0/)
    expect(() => parseInteropConfig({ webhooks: { providers: { github: { secrets: [] } } } })).toThrow(/webhooks\.providers\.github\.secrets/)
  })

  it('reload refuses what cannot change live and keeps the old snapshot', async () => {
    const svc = await createInteropService({ webhooks: { providers: { github: { secrets: ['a'] } } } })
    try {
      await expect(svc.reload({ workQueue: 5 })).rejects.toMatchObject({ code: 'Malformed' })
      await expect(svc.reload({ webhooks: { toleranceSec: -1 } })).rejects.toMatchObject({ code: 'Malformed' })
      expect(svc.config().workQueue).toBe(512)
      await svc.reload({ rateLimit: false })
      expect(svc.config().rateLimit).toBe(false)
    } finally {
      await svc.close()
    }
  })
})

describe('upstream retry schedule', () => {
  it('backs off 50–100 → 200–400 → 800–1600 ms, capped at 2 s', () => {
    const r = seededRandom(1)
    for (let i = 0; i < 100; i++) {
      const [a, b, c] = [1, 2, 3].map((n) => upstreamBackoff(n, DEFAULT_UPSTREAM_RETRY, r))
      expect(a).toBeGreaterThanOrEqual(50)
      expect(a).toBeLessThanOrEqual(100)
      expect(b).toBeGreaterThanOrEqual(200)
      expect(b).toBeLessThanOrEqual(400)
      expect(c).toBeGreaterThanOrEqual(800)
      expect(c).toBeLessThanOrEqual(1600)
      expect(upstreamBackoff(5, DEFAULT_UPSTREAM_RETRY, r)).toBeLessThanOrEqual(2000)
    }
  })
})
