import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Supervisor, createServiceMetrics } from '@ron/core'
import { VirtualClock, memoryRequest } from '@ron/core/testing'
import { AuditLog, JsonlFileAuditSink, MemoryAuditSink, createInteropService, latencyBucket, parseInteropConfig, redactCapabilityId, signWebhook, type AuditEvent, type AuditSink } from '../src/index.js'

/** A sink whose writes wait until released (a stalled disk or pipe). */
class StalledSink implements AuditSink {
  readonly kind = 'stalled'
  readonly written: AuditEvent[] = []
  #release: (() => void) | undefined
  #gate: Promise<void> = new Promise((r) => (this.#release = r))
  async write(e: AuditEvent): Promise<void> {
    await this.#gate
    this.written.push(e)
  }
  release(): void {
    this.#release?.()
  }
}

const event = (i: number) => ({ kind: 'webhook' as const, provider: 'github', requestId: `r${i}`, decision: 'accept' as const, latency: '<10ms' })

describe('audit', () => {
  it('a stalled sink makes the queue drop the oldest events; the sequence gap shows it and audit_drop_total counts it', async () => {
    const clock = new VirtualClock(0)
    const metrics = createServiceMetrics({ service: 'interop' })
    const sink = new StalledSink()
    const audit = new AuditLog({ sink, capacity: 512, clock, metrics: metrics.sink })
    const sup = new Supervisor({ clock, metrics: metrics.sink })
    sup.spawn('audit-sink', (signal) => audit.run(signal))
    await clock.flush()
    for (let i = 1; i <= 600; i++) audit.emit(event(i)) // never waits, never throws
    // #1 is with the stalled sink; the queue holds the newest 512 (#89..#600); #2..#88 were dropped.
    expect(audit.depth).toBe(512)
    expect(await metrics.text()).toMatch(/audit_drop_total\{service="interop"\} 87/)
    sink.release()
    await clock.flush()
    await clock.flush()
    const seqs = sink.written.map((e) => e.seq)
    expect(seqs[0]).toBe(1)
    expect(seqs[1]).toBe(89)
    expect(seqs.at(-1)).toBe(600)
    expect(seqs.length).toBe(513)
    audit.close()
    await sup.shutdown(1000)
  })

  it('the JSONL file sink appends one line per event, mode 0600, fsynced on close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-interop-audit-'))
    try {
      const file = join(dir, 'audit.jsonl')
      const sink = new JsonlFileAuditSink(file, { clock: new VirtualClock(0), fsyncIntervalMs: 1000 })
      await sink.write({ seq: 1, at: 0, ...event(1) })
      await sink.write({ seq: 3, at: 0, ...event(3) })
      await sink.close()
      const lines = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as AuditEvent)
      expect(lines.map((e) => e.seq)).toEqual([1, 3])
      expect((await stat(file)).mode & 0o777).toBe(0o600)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('the JSONL file sink closes its file once: a write racing close() lands before it, a write after it is refused and never reopens the file, a second close() is harmless', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ron-interop-audit-'))
    try {
      const file = join(dir, 'audit.jsonl')
      const sink = new JsonlFileAuditSink(file, { clock: new VirtualClock(0), fsyncIntervalMs: 1000 })
      await sink.write({ seq: 1, at: 0, ...event(1) })
      // A write in flight when close() is called (the sink task abandoned at the drain deadline).
      const racing = sink.write({ seq: 2, at: 0, ...event(2) })
      const closing = sink.close()
      await racing
      await closing
      await expect(sink.write({ seq: 3, at: 0, ...event(3) })).rejects.toMatchObject({ code: 'Closed' })
      await sink.close()
      const lines = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as AuditEvent)
      expect(lines.map((e) => e.seq)).toEqual([1, 2])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('amnesia forbids the file sink; the file sink needs a path', async () => {
    expect(() => parseInteropConfig({ amnesia: true, audit: { sink: 'file', file: '/tmp/x' } })).toThrow(/audit\.sink: the file sink is forbidden in amnesia mode/)
    expect(() => parseInteropConfig({ audit: { sink: 'file' } })).toThrow(/audit\.file/)
    await expect(createInteropService({ amnesia: true, audit: { sink: 'file', file: '/tmp/x' } })).rejects.toMatchObject({ code: 'Malformed' })
    expect(parseInteropConfig({ amnesia: true }).audit.sink).toBe('memory')
  })

  it('the memory sink keeps the most recent events; capability ids are redacted; latency is bucketed', () => {
    const m = new MemoryAuditSink(2)
    for (let i = 1; i <= 3; i++) m.write({ seq: i, at: 0, ...event(i) })
    expect(m.events().map((e) => e.seq)).toEqual([2, 3])
    expect(redactCapabilityId('0f1e2d3c4b5a69788796')).toBe('0f1e2d…')
    expect(redactCapabilityId('abc')).toBe('…')
    expect([5, 40, 99, 300, 900, 1999, 5000].map(latencyBucket)).toEqual(['<10ms', '<50ms', '<100ms', '<500ms', '<1s', '<2s', '>=2s'])
  })
})

describe('audit sink supervision', () => {
  it('a crashing sink task is restarted with backoff; the lost event is counted and shows as a gap', async () => {
    const clock = new VirtualClock(0)
    const metrics = createServiceMetrics({ service: 'interop' })
    const written: number[] = []
    let failures = 1
    const sink: AuditSink = {
      kind: 'flaky',
      write(e) {
        if (failures-- > 0) throw new Error('disk hiccup')
        written.push(e.seq)
      },
    }
    const audit = new AuditLog({ sink, capacity: 16, clock, metrics: metrics.sink })
    const sup = new Supervisor({ clock, metrics: metrics.sink })
    sup.spawn('audit-sink', (signal) => audit.run(signal))
    for (let i = 1; i <= 3; i++) audit.emit(event(i))
    await clock.flush()
    expect(written).toEqual([])
    await clock.advance(200) // restart backoff: 100 ms base with jitter
    expect(written).toEqual([2, 3])
    const text = await metrics.text()
    expect(text).toMatch(/audit_drop_total\{service="interop"\} 1/)
    expect(text).toMatch(/tasks_panicked_total\{kind="audit-sink",service="interop"\} 1/)
    expect(sup.health().live).toBe(true)
    audit.close()
    await sup.shutdown(1000)
  })
})

describe('crash-loop escalation', () => {
  it('a sink task that keeps crashing (more than 5 restarts in 60 s) turns the service not-live and says why', async () => {
    const clock = new VirtualClock(1_750_000_000_000)
    const broken: AuditSink = {
      kind: 'broken',
      write() {
        throw new Error('sink unavailable')
      },
    }
    const svc = await createInteropService({ webhooks: { providers: { github: { secrets: ['k'] } } } }, undefined, { clock, auditSink: broken })
    try {
      const forged = signWebhook({ provider: 'github', secret: 'not-k', body: '{}' })
      for (let i = 0; i < 8 && svc.health().live; i++) {
        const res = await memoryRequest(svc, { method: forged.method, path: forged.path, headers: forged.headers, body: forged.body })
        expect(res.status).toBe(401)
        await res.dump()
        await clock.advance(5_000) // past the restart backoff (cap 5 s)
      }
      const h = svc.health()
      expect(h.live).toBe(false)
      expect(h.reason).toMatch(/audit-sink/)
      expect((await (await memoryRequest(svc, { method: 'GET', path: '/healthz' })).json<{ live: boolean }>()).live).toBe(false)
    } finally {
      const closing = svc.close()
      for (let i = 0; i < 100; i++) await clock.advance(50)
      await closing
    }
  })
})
