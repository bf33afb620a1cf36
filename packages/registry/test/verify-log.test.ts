import { readFile, readdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { VirtualClock } from '@ron/core/testing'
import { createRegistryService } from '../src/service.js'
import { verifyLog } from '../src/verify-log.js'
import { initRegistrySigner } from '../src/keys.js'
import { approve, ORIGIN, payload, setOf, signers, tempDir } from './helpers.js'
import { logView } from '../src/log-view.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

describe('verifyLog (offline fsck)', () => {
  it('passes a healthy log with a rotation and checkpoints, and finds a tampered record', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const keys = signers(3)
    const next = signers(2, 'n')
    const { createTestIssuer, memoryNetwork } = await import('@ron/core/testing')
    const { createRegistryClient } = await import('../src/client.js')
    const issuer = createTestIssuer()
    const svc = await createRegistryService({ dataDir: t.dir, origin: ORIGIN, signers: setOf(keys, 2), segmentEntries: 3, drainReadWindowMs: 0, auth: { keys: issuer.keys }, clock: new VirtualClock(1000) })
    const transport = memoryNetwork({ registry: svc })
    const client = createRegistryClient(transport, { token: issuer.mint({ scope: ['registry:propose', 'registry:approve', 'registry:commit'] }) })
    const commit = async (p: ReturnType<typeof payload>, by: typeof keys): Promise<void> => {
      const r = await client.propose(p)
      for (const a of approve(by, r.baseVersion, r.payloadB3)) await client.approve(r.proposalId, a)
      await client.commit(r.proposalId)
    }
    for (let i = 1; i <= 4; i++) await commit(payload(i), keys.slice(0, 2))
    await commit({ schemaVersion: 1, items: [{ kind: 'signer-set', ...setOf(next, 2) }] }, [...keys.slice(1, 3), ...next])
    for (let i = 6; i <= 8; i++) await commit(payload(i), next)
    await svc.checkpoint()
    await svc.close()
    await transport.close()

    const report = await verifyLog(t.dir)
    expect(report).toMatchObject({ ok: true, head: 8, oldest: 1, entries: 8, checkpoints: 1, origin: ORIGIN, problems: [] })

    // Rewrite version 2's record: new bytes with a correct checksum (a deliberate forgery).
    const seg = join(t.dir, (await readdir(t.dir)).filter((n) => n.startsWith('seg-')).sort()[0]!)
    const buf = await readFile(seg)
    const len1 = buf.readUInt32BE(0)
    const off2 = 8 + len1
    const len2 = buf.readUInt32BE(off2)
    const rec = Buffer.from(buf.subarray(off2 + 8, off2 + 8 + len2).toString('utf8').replace('node-2', 'node-9'))
    expect(rec.length).toBe(len2)
    rec.copy(buf, off2 + 8)
    buf.writeUInt32BE(crc32(rec), off2 + 4)
    await writeFile(seg, buf)
    const bad = await verifyLog(t.dir)
    expect(bad.ok).toBe(false)
    // (leaves.bin of the recent segments is re-derived from the records, so the forged leaf
    // shows up as a checkpoint whose signed root no longer matches the tree.)
    expect(bad.problems.join('\n')).toMatch(/checkpoint 8: root differs from the tree/)
    expect(bad.problems.join('\n')).toMatch(/version 2: payloadB3 does not match/)
    expect(bad.problems.join('\n')).toMatch(/version 3: prev does not link/)
  })

  it('verifies a pruned log: the signer set in force comes from the covering checkpoint', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const keys = signers(3)
    const next = signers(2, 'n')
    const { createTestIssuer, memoryNetwork } = await import('@ron/core/testing')
    const { createRegistryClient } = await import('../src/client.js')
    const issuer = createTestIssuer()
    const svc = await createRegistryService({ dataDir: t.dir, origin: ORIGIN, signers: setOf(keys, 2), segmentEntries: 2, retention: { maxEntries: 1 }, drainReadWindowMs: 0, auth: { keys: issuer.keys }, clock: new VirtualClock(1000) })
    const transport = memoryNetwork({ registry: svc })
    const client = createRegistryClient(transport, { token: issuer.mint({ scope: ['registry:propose', 'registry:approve', 'registry:commit'] }) })
    const commit = async (p: ReturnType<typeof payload>, by: typeof keys): Promise<void> => {
      const r = await client.propose(p)
      for (const a of approve(by, r.baseVersion, r.payloadB3)) await client.approve(r.proposalId, a)
      await client.commit(r.proposalId)
    }
    await commit({ schemaVersion: 1, items: [{ kind: 'signer-set', ...setOf(next, 2) }] }, [...keys.slice(0, 2), ...next])
    for (let i = 2; i <= 6; i++) await commit(payload(i), next)
    await svc.checkpoint()
    await commit(payload(7), next)
    await svc.prune()
    expect(logView(svc).oldest()).toBe(7) // [1,2], [3,4], [5,6] covered by the checkpoint of size 6
    await svc.close()
    await transport.close()
    const report = await verifyLog(t.dir)
    expect(report).toMatchObject({ ok: true, head: 7, oldest: 7, entries: 1, problems: [] })
  })

  it('never writes: a torn tail is a warning, not a repair', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    const { signers: set } = await initRegistrySigner(t.dir, 'node-a')
    const svc = await createRegistryService({ dataDir: t.dir, signers: set })
    await svc.close()
    const seg = join(t.dir, 'seg-00000000000000000001.log')
    await writeFile(seg, Buffer.from([0, 0, 0, 50, 1, 2]))
    const report = await verifyLog(t.dir)
    expect(report.warnings.join()).toMatch(/torn_tail/)
    expect((await stat(seg)).size).toBe(6)
  })

  it('refuses a directory without a log', async () => {
    const t = await tempDir()
    cleanups.push(t.cleanup)
    await expect(verifyLog(t.dir)).rejects.toMatchObject({ code: 'Malformed' })
  })
})
