/**
 * `verifyTlog`: a client trusting only the log key verifies the whole log from its tiles — and
 * refuses it when anything served was altered. Also: a log created before SHA-256 and entry
 * bundles (BLAKE3, whole-entry leaves) keeps working, and `verifyLog` (fsck) verifies both kinds.
 */
import { appendFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { MemoryTransport, type Transport, type TransportRequest, type TransportResponse } from '@ron/core'
import { formatCheckpoint, generateLogKey, noteSigner, signCheckpoint, signNote, treeHashLine } from '../src/checkpoint.js'
import { createRegistryClient } from '../src/client.js'
import { cosigner } from '../src/cosignature.js'
import { payloadB3 } from '../src/descriptors.js'
import { RegistryLog } from '../src/log.js'
import { createSegmentStore } from '../src/store/segment.js'
import { verifyTlog } from '../src/tlog-client.js'
import { verifyLog } from '../src/verify-log.js'
import { ORIGIN, approve, harness, payload, setOf, signers, tempDir, type Harness } from './helpers.js'
import { logView } from '../src/log-view.js'

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

async function commit(x: Harness, p = payload(x.svc.head().version + 1)): Promise<void> {
  const pr = await x.client.propose(p)
  await x.client.commit(pr.proposalId, { approvals: approve(x.keys.slice(0, 2), pr.baseVersion, pr.payloadB3, x.svc.origin) })
}

function bytesResponse(status: number, headers: Record<string, string>, body: Uint8Array): TransportResponse {
  return {
    status,
    headers,
    body: (async function* () {
      yield body
    })(),
    bytes: () => Promise.resolve(body),
    text: () => Promise.resolve(Buffer.from(body).toString('utf8')),
    json: <T>() => Promise.resolve(JSON.parse(Buffer.from(body).toString('utf8')) as T),
    dump: () => Promise.resolve(),
  }
}

/** A transport that rewrites the body of answers whose path matches. */
function tampering(inner: Transport, match: (path: string) => boolean, change: (body: Buffer) => Buffer): Transport {
  return {
    async request(target: string, req: TransportRequest) {
      const res = await inner.request(target, req)
      if (!match(req.path) || res.status !== 200) return res
      return bytesResponse(res.status, res.headers, change(Buffer.from(await res.bytes())))
    },
    close: () => inner.close(),
  }
}

const big = { items: [{ kind: 'policy' as const, name: 'big', rules: { blob: 'y'.repeat(70_000) } }] }

describe('verifyTlog: the whole log from its tiles, trusting only the log key', () => {
  it('verifies every leaf, payloads by address, pruned ranges by their hashes, a pin, and a witness quorum', async () => {
    const h = await harness({ segmentEntries: 100, retention: { maxEntries: 200 } })
    cleanup.push(() => h.close())
    for (let i = 0; i < 150; i++) await commit(h)
    await commit(h, payload(151, big))
    for (let i = 0; i < 150; i++) await commit(h)
    const first = await verifyTlog(h.client, { logKey: h.svc.logKey })
    expect(first).toMatchObject({ origin: ORIGIN, treeSize: 301, treeHash: 'sha256', leaves: 301, pruned: 0 })
    // Retention prunes what a checkpoint covers; the tree still verifies, pruned bundles are counted.
    await h.svc.checkpoint()
    await h.svc.prune()
    expect(logView(h.svc).oldest()).toBeGreaterThan(1)
    await commit(h)
    const second = await verifyTlog(h.client, { logKey: h.svc.logKey, previous: { treeSize: first.treeSize, root: first.root } })
    expect(second).toMatchObject({ treeSize: 302, consistentWith: 301, pruned: 256, leaves: 46 })
  })

  it('refuses a tampered tile, bundle, payload or signature, a fork of a pinned tree, and a missing witness quorum', async () => {
    const h = await harness()
    cleanup.push(() => h.close())
    for (let i = 0; i < 5; i++) await commit(h)
    await commit(h, payload(6, big))
    const good = await verifyTlog(h.client, { logKey: h.svc.logKey })
    const inner = new MemoryTransport()
    inner.mount('registry', h.svc)
    const via = (t: Transport): ReturnType<typeof createRegistryClient> => createRegistryClient(t)
    const flip = (b: Buffer): Buffer => {
      const c = Buffer.from(b)
      c[c.length - 3]! ^= 1
      return c
    }
    const cases: Array<[string, Transport, RegExp]> = [
      ['a hash tile', tampering(inner, (p) => p.startsWith('/registry/tile/0/'), flip), /do not hash to the checkpoint's root/],
      ['an entry bundle', tampering(inner, (p) => p.startsWith('/registry/tile/entries/'), flip), /does not hash to its tile entry|not JSON/],
      ['a payload', tampering(inner, (p) => p.startsWith('/registry/payload/'), (b) => Buffer.from(b.toString('utf8').replace('yyy', 'yyz'))), /does not match its payloadB3/],
      ['the checkpoint', tampering(inner, (p) => p === '/registry/checkpoint', (b) => Buffer.from(b.toString('utf8').replace('\n6\n', '\n5\n'))), /checkpoint: note has an invalid signature/],
    ]
    for (const [what, t, err] of cases) await expect(verifyTlog(via(t), { logKey: h.svc.logKey }), what).rejects.toThrow(err)
    // Another key of the same name, or a pin the log does not extend (a split view).
    await expect(verifyTlog(h.client, { logKey: noteSigner(h.svc.origin, generateLogKey()).verifierKey })).rejects.toThrow(/no signature/)
    await expect(verifyTlog(h.client, { logKey: h.svc.logKey, previous: { treeSize: 3, root: Buffer.alloc(32, 1).toString('base64') } })).rejects.toThrow(/does not extend/)
    await expect(verifyTlog(h.client, { logKey: h.svc.logKey, previous: { treeSize: 9, root: good.root } })).rejects.toThrow(/shrank/)
    const w = cosigner('w.test/1', generateLogKey())
    await expect(verifyTlog(h.client, { logKey: h.svc.logKey, witnesses: [w.verifierKey], waitMs: 0 })).rejects.toThrow(/0 valid cosignatures of the 1 witnesses given, 1 needed/)
    expect((await verifyTlog(h.client, { logKey: h.svc.logKey, witnesses: [w.verifierKey], witnessQuorum: 0 })).cosignatures).toEqual([])
  })
})

describe('a log created before SHA-256 and entry bundles', () => {
  it('keeps BLAKE3 and whole-entry leaves; states its hash; serves tiles; fsck verifies it and a SHA-256 log', async () => {
    const t = await tempDir()
    cleanup.push(() => t.cleanup())
    const keys = signers(2)
    const logKey = generateLogKey()
    const signer = noteSigner(ORIGIN, logKey)
    // Written as the registry wrote logs before: no leafFormat in the genesis, BLAKE3, and a checkpoint without extension lines.
    const store = createSegmentStore({ dir: t.dir })
    const log = await RegistryLog.open(store, { origin: ORIGIN, treeHash: 'blake3', signers: setOf(keys, 2), logKey: signer.verifierKey, createdAt: 0 })
    for (let v = 1; v <= 4; v++) {
      const p = v === 3 ? payload(v, big) : payload(v)
      const head = log.head()
      await log.append(head, p, approve(keys, head.version, payloadB3(p)), 1000 + v)
    }
    const legacyLeaf = (await log.read(3)) as { bytes: Uint8Array }
    expect(legacyLeaf.bytes.length).toBeGreaterThan(65_535)
    await store.appendCheckpoint({ treeSize: 4, root: log.rootHex(), note: signCheckpoint({ origin: ORIGIN, treeSize: 4, rootHash: log.tree.root() }, signer), createdAt: 1004 })
    await store.close()
    const rootBefore = log.rootHex()

    const h = await harness({ dataDir: t.dir, origin: ORIGIN, logKey, signers: setOf(keys, 2) }, 2, 2)
    cleanup.push(() => h.close())
    h.keys.splice(0, h.keys.length, ...keys)
    expect(logView(h.svc).genesis.leafFormat).toBeUndefined()
    expect((await h.client.head()).root).toBe(rootBefore)
    await commit(h)
    expect(h.svc.signedCheckpoint()).toContain('\ntree-hash blake3\n')
    // The legacy leaf is the whole entry; too large for a bundle, it is served on its own.
    expect(Buffer.from(await h.client.leaf(3)).equals(Buffer.from(legacyLeaf.bytes))).toBe(true)
    await expect(h.client.tile('tile/entries/000.p/5')).rejects.toMatchObject({ code: 'NotImplemented' })
    const report = await verifyTlog(h.client, { logKey: h.svc.logKey })
    expect(report).toMatchObject({ treeHash: 'blake3', treeSize: 5, leaves: 5 })
    await h.svc.checkpoint()
    await h.close()
    cleanup.pop()
    const fsck = await verifyLog(t.dir)
    expect(fsck).toMatchObject({ ok: true, treeHash: 'blake3', head: 5, checkpoints: 2 })

    // A checkpoint that states another hash than the log's is a problem fsck reports.
    const lying = signNote(formatCheckpoint({ origin: ORIGIN, treeSize: 5, rootHash: Buffer.from(fsck.root, 'hex'), extensions: [treeHashLine('sha256')] }), signer)
    await appendFile(join(t.dir, 'checkpoints.jsonl'), `${JSON.stringify({ treeSize: 5, root: fsck.root, note: lying, createdAt: 2000 })}\n`)
    const bad = await verifyLog(t.dir)
    expect(bad.ok).toBe(false)
    expect(bad.problems).toEqual(['checkpoint 5: states tree hash sha256, the log uses blake3'])
  })

  it('fsck verifies a SHA-256 log with a payload carried by address', async () => {
    const t = await tempDir()
    cleanup.push(() => t.cleanup())
    const h = await harness({ dataDir: t.dir })
    await commit(h)
    await commit(h, payload(2, big))
    await commit(h)
    await h.svc.checkpoint()
    await h.close()
    expect(await verifyLog(t.dir)).toMatchObject({ ok: true, treeHash: 'sha256', head: 3, entries: 3, checkpoints: 1, problems: [] })
  })
})
