import { afterEach, describe, expect, it } from 'vitest'
import { treeHasher, verifyConsistency, verifyInclusion } from '../src/merkle.js'
import { verifyCheckpoint } from '../src/checkpoint.js'
import { RegistryLog } from '../src/log.js'
import { payloadB3 } from '../src/descriptors.js'
import { createSegmentStore } from '../src/store/index.js'
import { approve, genesisFor, harness, payload, setOf, signers, tempDir, type Harness } from './helpers.js'
import { logView } from '../src/log-view.js'

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

describe('background tasks on virtual time', () => {
  it('the Checkpointor signs every checkpointIntervalMs and Retention prunes by age after it', async () => {
    h = await harness({ checkpointIntervalMs: 60_000, segmentEntries: 2, retention: { maxAgeMs: 3_600_000 } })
    await commitN(h, 5)
    expect(logView(h.svc).store.checkpoints()).toHaveLength(0)
    await h.clock.advance(60_000)
    const cps = logView(h.svc).store.checkpoints()
    expect(cps.map((c) => c.treeSize)).toEqual([5])
    expect(verifyCheckpoint(cps[0]!.note, h.svc.logKey).treeSize).toBe(5)
    // Young entries stay although covered.
    expect(logView(h.svc).oldest()).toBe(1)
    await h.clock.advance(3_600_000)
    await commitN(h, 1)
    await h.clock.advance(60_000) // next checkpoint → retention: segments [1,2] and [3,4] are old and covered
    expect(logView(h.svc).oldest()).toBe(5)
    expect(logView(h.svc).store.checkpoints().map((c) => c.treeSize)).toEqual([5, 6])
    expect(await h.svc.metricsText()).toMatch(/registry_checkpoints_total\{service="registry"\} 2/)
  })

  it('a reload of checkpointIntervalMs takes effect for the next checkpoint', async () => {
    h = await harness({ checkpointIntervalMs: 600_000 })
    await commitN(h, 1)
    await h.svc.reload({ checkpointIntervalMs: 1000 })
    await h.clock.advance(1000)
    expect(logView(h.svc).store.checkpoints().map((c) => c.treeSize)).toEqual([1])
  })
})

describe('SHA-256 tree mode end to end', () => {
  it('proofs from the service verify with the RFC 6962 SHA-256 hasher', async () => {
    h = await harness({ treeHash: 'sha256' })
    await commitN(h, 5)
    const head = await h.client.head()
    expect(head.treeHash).toBe('sha256')
    const H = treeHasher('sha256')
    for (let v = 1; v <= 5; v++) {
      const ip = await h.client.inclusionProof(v)
      expect(verifyInclusion(H, v - 1, 5, Buffer.from(ip.leafHash, 'hex'), ip.proof.map((x) => Buffer.from(x, 'hex')), Buffer.from(head.root, 'hex'))).toBe(true)
      expect(verifyInclusion(treeHasher('blake3'), v - 1, 5, Buffer.from(ip.leafHash, 'hex'), ip.proof.map((x) => Buffer.from(x, 'hex')), Buffer.from(head.root, 'hex'))).toBe(false)
    }
    const cp = await h.client.consistencyProof(2, 5)
    expect(verifyConsistency(H, 2, 5, cp.proof.map((x) => Buffer.from(x, 'hex')), Buffer.from(cp.fromRoot, 'hex'), Buffer.from(cp.toRoot, 'hex'))).toBe(true)
    expect((await h.svc.verify()).ok).toBe(true)
  })
})

describe('segment rollover by bytes', () => {
  it('starts a new segment when the current one reaches segmentBytes', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const keys = signers(3)
    const log = await RegistryLog.open(createSegmentStore({ dir: t.dir, segmentBytes: 1500 }), genesisFor(setOf(keys, 2)))
    for (let i = 0; i < 8; i++) {
      const head = log.head()
      const p = payload(i)
      await log.append(head, p, approve(keys.slice(0, 2), head.version, payloadB3(p)), i)
    }
    const segs = log.store.segments()
    expect(segs.length).toBeGreaterThan(2)
    for (const s of segs.slice(0, -1)) expect(s.bytes).toBeGreaterThanOrEqual(1500)
    expect(segs.at(-1)!.last).toBe(8)
    await log.store.close()
  })
})
