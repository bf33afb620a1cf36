/**
 * A full disk (issue 20 item 3), on a real small volume: `mountTmpfs` (root on Linux) gives a
 * tmpfs that fills up for real; where it cannot mount, the same test runs with an injected ENOSPC
 * from the store. A commit that does not fit answers 503 `NotReady` `disk_full` (never 500),
 * nothing of it stays in the log, writes turn unready (`missing` names the disk, `reason` says why), reads go on,
 * and writes come back once space is freed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { mountTmpfs, type Tmpfs } from '@ron/core/testing'
import { createSegmentStore, type LogStore } from '../src/store/index.js'
import { verifyLog } from '../src/verify-log.js'
import { approve, harness, payload, tempDir, type Harness } from './helpers.js'

let h: Harness | undefined
let volume: Tmpfs | undefined
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  await h?.close()
  h = undefined
  await volume?.close()
  volume = undefined
  for (const c of cleanups.splice(0)) await c()
})

/** A payload whose entry is larger than a page: it needs fresh space on the volume. */
function big(i: number): ReturnType<typeof payload> {
  return payload(i, { meta: { note: `${'n'.repeat(4000)}${i}` } })
}

/** Where mountTmpfs cannot mount: a segment store whose appends and probes fail with ENOSPC while `full`. */
function injectedFull(dir: string): { store: LogStore; setFull(full: boolean): void } {
  const real = createSegmentStore({ dir })
  let full = false
  const enospc = (): Error => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' })
  const store: LogStore = Object.assign(Object.create(real) as LogStore, {
    open: real.open.bind(real),
    head: real.head.bind(real),
    read: real.read.bind(real),
    oldest: real.oldest.bind(real),
    checkpoints: real.checkpoints.bind(real),
    segments: real.segments.bind(real),
    sizeBytes: real.sizeBytes.bind(real),
    prune: real.prune.bind(real),
    close: real.close.bind(real),
    compareAndAppend: (...a: Parameters<LogStore['compareAndAppend']>) => (full ? Promise.reject(enospc()) : real.compareAndAppend(...a)),
    appendCheckpoint: (cp: Parameters<LogStore['appendCheckpoint']>[0]) => (full ? Promise.reject(enospc()) : real.appendCheckpoint(cp)),
    probe: () => (full ? Promise.reject(enospc()) : real.probe()),
  })
  return { store, setFull: (f) => (full = f) }
}

describe('registry on a full disk', () => {
  it('commit answers 503 disk_full, writes turn unready, reads stay up, and writes come back when space is freed', async () => {
    volume = await mountTmpfs(1024 * 1024)
    let dir: string
    let setFull: (full: boolean) => Promise<void>
    let store: LogStore | undefined
    if (volume !== undefined) {
      dir = volume.path
      const v = volume
      setFull = (full) => (full ? v.fill() : v.unfill())
    } else {
      const t = await tempDir()
      cleanups.push(t.cleanup)
      dir = t.dir
      const inj = injectedFull(dir)
      store = inj.store
      setFull = (full) => Promise.resolve(inj.setFull(full))
    }
    h = await harness({ dataDir: dir, ...(store === undefined ? {} : { store }), writeReadiness: { slowCommitMs: 60_000, probeIntervalMs: 1000 } })
    const x = h
    const commit = async (p: ReturnType<typeof payload>): Promise<number> => {
      const r = await x.client.propose(p)
      return (await x.client.commit(r.proposalId, { approvals: approve(x.keys.slice(0, 2), r.baseVersion, r.payloadB3) })).version
    }
    expect(await commit(big(1))).toBe(1)
    expect(await commit(big(2))).toBe(2)
    await x.svc.checkpoint()

    await setFull(true)
    const p = await x.client.propose(big(3))
    const approvals = approve(x.keys.slice(0, 2), p.baseVersion, p.payloadB3)
    const refused = await x.client.commit(p.proposalId, { approvals }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(refused).toMatchObject({ status: 503, code: 'NotReady', retryable: true, details: { reason: 'disk_full' } })
    expect(x.svc.head().version).toBe(2)
    expect(x.svc.health()).toMatchObject({ live: true, ready: true, writeReady: false, paths: { write: false, read: true } })
    expect(x.svc.health().missing).toEqual(['disk'])
    expect(x.svc.health().reason).toContain('disk: disk_full')
    // Every write route sheds with the same reason; reads go on.
    await expect(x.client.propose(big(4))).rejects.toMatchObject({ status: 503, details: { reason: 'disk_full' } })
    expect(await x.client.head()).toMatchObject({ version: 2 })
    expect(await x.client.get(2)).toMatchObject({ version: 2 })
    expect(await x.client.inclusionProof(1, 2)).toMatchObject({ treeSize: 2 })

    // Space comes back: the probe passes, writes turn ready, the same proposal commits.
    await setFull(false)
    await vi.waitFor(async () => {
      await x.clock.advance(1000)
      expect(x.svc.health().writeReady).toBe(true)
    })
    expect((await x.client.commit(p.proposalId, { approvals })).version).toBe(3)
    const metrics = await x.svc.metricsText()
    expect(metrics).toMatch(/http_requests_total\{[^}]*status="503"[^}]*\} [1-9]/)
    expect(metrics).not.toMatch(/status="500"/)
    await x.close()
    h = undefined

    // Nothing of the refused attempt stays: the log reopens as it was acknowledged.
    const report = await verifyLog(dir)
    expect(report).toMatchObject({ ok: true, head: 3, entries: 3, checkpoints: 1, warnings: [] })
  })
})
