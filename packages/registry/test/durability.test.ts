import { open, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { memoryRequest } from '@ron/core/testing'
import { createRegistryService } from '../src/service.js'
import type { LogStore } from '../src/store/types.js'
import { createMemoryStore } from '../src/store/index.js'
import { ALL_SCOPES, harness, payload, setOf, tempDir, type Harness } from './helpers.js'

let h: Harness | undefined
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  await h?.close()
  h = undefined
  for (const c of cleanups.splice(0)) await c()
})

async function commitN(x: Harness, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const p = await x.client.propose(payload(x.svc.head().version + 1))
    for (const k of x.keys.slice(0, 2)) await x.client.approveWith(p.proposalId, k)
    await x.client.commit(p.proposalId)
  }
}

describe('durability', () => {
  it('a crash mid-append (torn record) is recovered on restart without losing an acknowledged commit', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    h = await harness({ dataDir: t.dir })
    await commitN(h, 5)
    const acked = h.svc.head()
    const keys = h.keys
    await h.close()
    const seg = join(t.dir, (await readdir(t.dir)).filter((n) => n.startsWith('seg-')).sort().at(-1)!)
    const fh = await open(seg, 'a')
    await fh.write(Buffer.from([0, 0, 2, 0, 1, 2, 3, 4, 123, 34, 118]))
    await fh.close()
    h = undefined
    const again = await createRegistryService({ dataDir: t.dir, origin: 'test.ron/registry', signers: setOf(keys, 2) })
    try {
      expect(again.head()).toEqual(acked)
      expect(await again.metricsText()).toMatch(/registry_recoveries_total\{kind="torn_tail",service="registry"\} 1/)
    } finally {
      await again.close()
    }
  })

  it('refuses a config that contradicts the existing log (signers, log key)', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    h = await harness({ dataDir: t.dir })
    const keys = h.keys
    await h.close()
    h = undefined
    await expect(createRegistryService({ dataDir: t.dir, origin: 'test.ron/registry', signers: setOf(keys, 1) })).rejects.toMatchObject({ code: 'Malformed', details: { path: 'signers' } })
    await writeFile(join(t.dir, 'other.key'), '')
    await expect(createRegistryService({ dataDir: t.dir, origin: 'test.ron/registry', logKeyFile: join(t.dir, 'fresh.key') })).rejects.toMatchObject({ details: { path: 'logKeyFile' } })
    await expect(createRegistryService({})).rejects.toMatchObject({ details: { path: 'signers' } })
  })

  it('the deep verifier detects a flipped byte: writes turn unready, reads stay up, the metric rises', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    h = await harness({ dataDir: t.dir })
    await commitN(h, 4)
    expect((await h.svc.verify()).ok).toBe(true)
    const seg = join(t.dir, (await readdir(t.dir)).filter((n) => n.startsWith('seg-')).sort()[0]!)
    const buf = await readFile(seg)
    buf[buf.length - 20]! ^= 0x04
    await writeFile(seg, buf)
    const report = await h.svc.verify()
    expect(report.ok).toBe(false)
    expect(report.problems.join('\n')).toMatch(/version 4/)
    expect(h.svc.health()).toMatchObject({ ready: true, writeReady: false, paths: { write: false, read: true } })
    expect(await h.svc.metricsText()).toMatch(/registry_integrity_failures_total\{service="registry"\} [1-9]/)
    expect((await h.client.head()).version).toBe(4)
    await expect(h.client.propose(payload(9))).rejects.toMatchObject({ code: 'NotReady', status: 503 })
  })

  it('a slow disk turns writes unready first (reads stay up) until a probe passes', async () => {
    const slow = createMemoryStore()
    let delay = 0
    const wrapped: LogStore = Object.assign(Object.create(slow) as LogStore, {
      open: slow.open.bind(slow),
      head: slow.head.bind(slow),
      read: slow.read.bind(slow),
      oldest: slow.oldest.bind(slow),
      appendCheckpoint: slow.appendCheckpoint.bind(slow),
      checkpoints: slow.checkpoints.bind(slow),
      segments: slow.segments.bind(slow),
      sizeBytes: slow.sizeBytes.bind(slow),
      prune: slow.prune.bind(slow),
      probe: slow.probe.bind(slow),
      close: slow.close.bind(slow),
      async compareAndAppend(...args: Parameters<LogStore['compareAndAppend']>) {
        await h!.clock.advance(delay)
        return slow.compareAndAppend(...args)
      },
    })
    h = await harness({ store: wrapped, writeReadiness: { slowCommitMs: 100, probeIntervalMs: 1000 } })
    delay = 500
    await commitN(h, 1)
    expect(h.svc.health()).toMatchObject({ ready: true, writeReady: false })
    expect((await h.client.head()).version).toBe(1)
    delay = 0
    await h.clock.advance(1000)
    await h.clock.advance(1000)
    await h.clock.advance(1000)
    expect(h.svc.health()).toMatchObject({ ready: true, writeReady: true })
  })
})

describe('JSON fuzzing of the write routes', () => {
  it('never answers 5xx and never corrupts the log; oversized bodies get 413', async () => {
    h = await harness()
    const x = h
    await commitN(x, 1)
    const token = x.issuer.mint({ scope: ALL_SCOPES })
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record({ payload: fc.jsonValue(), baseVersion: fc.oneof(fc.integer(), fc.string()) }, { requiredKeys: [] }),
      fc.record({ payload: fc.record({ schemaVersion: fc.constantFrom(1, 2, '1'), items: fc.array(fc.record({ kind: fc.constantFrom('service', 'policy', 'signer-set', 'issuer-keys', 'x'), name: fc.string() }, { requiredKeys: [] })) }, { requiredKeys: [] }) }),
      fc.record({ signerId: fc.string(), sig: fc.string() }, { requiredKeys: [] }),
      fc.string().map((s) => ({ raw: s })),
    )
    const paths = ['/registry/proposals', '/registry/approvals/p-x', '/registry/commit/p-x', '/registry/supersede']
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), body, async (path, b) => {
        const raw = typeof b === 'object' && b !== null && 'raw' in b ? String((b as { raw: unknown }).raw) : JSON.stringify(b)
        const res = await memoryRequest(x.svc, { method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: raw })
        await res.dump()
        expect(res.status, `${path} ${raw.slice(0, 100)}`).toBeLessThan(500)
        expect([200, 201, 202, 400, 404, 409, 413, 422]).toContain(res.status)
      }),
      { seed: 2024, numRuns: 300 },
    )
    expect(x.svc.head().version).toBe(1)
    expect((await x.svc.verify()).ok).toBe(true)
    // An oversized body is refused with 413, not parsed.
    const big = await memoryRequest(x.svc, { method: 'POST', path: '/registry/proposals', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: `{"payload":"${'a'.repeat(2 * 1024 * 1024)}"}` })
    await big.dump()
    expect(big.status).toBe(413)
  })
})
