import { afterEach, describe, expect, it } from 'vitest'
import { blake3, isRonError, serve, toAddress } from '@ron/core'
import { createRegistryClient } from '../src/client.js'
import { signApproval } from '../src/signers.js'
import { verifyInclusion, treeHasher, verifyConsistency } from '../src/merkle.js'
import { verifyCheckpoint } from '../src/checkpoint.js'
import { ORIGIN, harness, payload, setOf, signers, type Harness } from './helpers.js'
import { logView } from '../src/log-view.js'

let h: Harness
afterEach(async () => {
  await h?.close()
})

async function rejectCode(p: Promise<unknown>): Promise<{ code: string; status: number; details: Record<string, unknown> }> {
  try {
    await p
  } catch (e) {
    if (isRonError(e)) return { code: e.code, status: e.status, details: e.details }
    throw e
  }
  throw new Error('expected a rejection')
}

describe('propose → approve → commit', () => {
  it('2-of-3 happy path: entry, HEAD, chain, inclusion proof and checkpoint all agree', async () => {
    h = await harness()
    const [a, b] = h.keys as [NonNullable<(typeof h.keys)[0]>, NonNullable<(typeof h.keys)[0]>]
    const p = await h.client.propose(payload(1))
    expect(p).toMatchObject({ baseVersion: 0, payloadB3: expect.stringMatching(/^b3:/) as string })
    expect(p.expiresAt).toBe(h.clock.now() + 600_000)
    expect(await h.client.approveWith(p.proposalId, a)).toMatchObject({ approvals: 1, quorum: { m: 2, n: 3 }, ready: false })
    expect(await h.client.approveWith(p.proposalId, b)).toMatchObject({ approvals: 2, ready: true })
    const c = await h.client.commit(p.proposalId)
    expect(c).toMatchObject({ version: 1, payloadB3: p.payloadB3, committedAt: h.clock.now(), treeSize: 1 })
    const head = await h.client.head()
    expect(head).toMatchObject({ version: 1, hash: c.hash, payloadB3: p.payloadB3, treeSize: 1, root: c.root, origin: ORIGIN })
    const e = await h.client.get(1)
    expect(e).toMatchObject({ version: 1, payloadB3: p.payloadB3, prev: logView(h.svc).genesisHash })
    expect(e.approvals.map((x) => x.signerId)).toEqual(['s1', 's2'])

    const p2 = await h.client.propose(payload(2))
    expect(p2.baseVersion).toBe(1)
    await h.client.approveWith(p2.proposalId, a)
    await h.client.approveWith(p2.proposalId, b)
    const c2 = await h.client.commit(p2.proposalId)
    expect((await h.client.get(2)).prev).toBe(c.hash)

    const hasher = treeHasher(head.treeHash)
    const ip = await h.client.inclusionProof(1)
    expect(verifyInclusion(hasher, 0, 2, Buffer.from(ip.leafHash, 'hex'), ip.proof.map((x) => Buffer.from(x, 'hex')), Buffer.from(c2.root, 'hex'))).toBe(true)
    const cp = await h.client.consistencyProof(1, 2)
    expect(verifyConsistency(hasher, 1, 2, cp.proof.map((x) => Buffer.from(x, 'hex')), Buffer.from(c.root, 'hex'), Buffer.from(c2.root, 'hex'))).toBe(true)
    const note = await h.client.checkpoint()
    expect(verifyCheckpoint(note, head.logKey)).toMatchObject({ origin: ORIGIN, treeSize: 2 })
  })

  it('a retried commit returns the same entry; the log holds one entry', async () => {
    h = await harness()
    const p = await h.client.propose(payload(1))
    for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
    const first = await h.client.commit(p.proposalId)
    const again = await h.client.commit(p.proposalId)
    expect(again).toEqual(first)
    expect(h.svc.head().version).toBe(1)
    // Proposing the same payload on the same base gives the same proposal back.
    const p2 = await h.client.propose(payload(2))
    expect((await h.client.propose(payload(2))).proposalId).toBe(p2.proposalId)
  })

  it('duplicate approval → 409 DuplicateApproval; approval by a key outside the set or a bad signature → 422 InvalidSignature', async () => {
    h = await harness()
    const p = await h.client.propose(payload(1))
    await h.client.approveWith(p.proposalId, h.keys[0]!)
    expect(await rejectCode(h.client.approveWith(p.proposalId, h.keys[0]!))).toMatchObject({ code: 'DuplicateApproval', status: 409 })
    const outsider = signers(1, 'x')[0]!
    expect(await rejectCode(h.client.approveWith(p.proposalId, outsider))).toMatchObject({ code: 'InvalidSignature', status: 422, details: { reason: 'unknown_signer' } })
    // s2's id with the outsider's signature.
    const forged = { ...signApproval(outsider, { origin: ORIGIN, baseVersion: 0, payloadB3: p.payloadB3 }), signerId: 's2' }
    expect(await rejectCode(h.client.approve(p.proposalId, forged))).toMatchObject({ code: 'InvalidSignature', details: { reason: 'bad_signature' } })
    // A genuine signature for another log (origin) or another base does not transfer.
    const otherLog = signApproval(h.keys[1]!, { origin: 'other.ron/registry', baseVersion: 0, payloadB3: p.payloadB3 })
    expect(await rejectCode(h.client.approve(p.proposalId, otherLog))).toMatchObject({ code: 'InvalidSignature' })
    const otherBase = signApproval(h.keys[1]!, { origin: ORIGIN, baseVersion: 1, payloadB3: p.payloadB3 })
    expect(await rejectCode(h.client.approve(p.proposalId, otherBase))).toMatchObject({ code: 'InvalidSignature' })
    expect(await rejectCode(h.client.commit(p.proposalId))).toMatchObject({ code: 'QuorumNotMet', status: 422, details: { have: 1, m: 2, n: 3 } })
    expect(h.svc.head().version).toBe(0)
  })

  it('HEAD moved since the proposal → 409 ChainMismatch and commit_cas_fail_total', async () => {
    h = await harness()
    const p1 = await h.client.propose(payload(1))
    const p2 = await h.client.propose(payload(2))
    for (const p of [p1, p2]) for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
    await h.client.commit(p2.proposalId)
    expect(await rejectCode(h.client.commit(p1.proposalId))).toMatchObject({ code: 'ChainMismatch', status: 409, details: { baseVersion: 0, head: 1 } })
    expect(await h.svc.metricsText()).toMatch(/commit_cas_fail_total\{service="registry"\} 1/)
    expect(await rejectCode(h.client.propose(payload(3), { baseVersion: 0 }))).toMatchObject({ code: 'ChainMismatch' })
  })

  it('rejects malformed bodies naming the field, and unknown descriptor kinds', async () => {
    h = await harness()
    expect(await rejectCode(h.client.propose({ schemaVersion: 1, items: [{ kind: 'mystery' }] } as never))).toMatchObject({ code: 'Malformed', status: 400 })
    expect(await rejectCode(h.client.propose({ ...payload(1), meta: { supersedes: { version: 1, reason: 'x' } } }))).toMatchObject({
      code: 'Malformed',
      details: { field: 'payload.meta.supersedes' },
    })
    expect(await rejectCode(h.client.approve('p-nope', { signerId: 's1', sig: 'short' }))).toMatchObject({ code: 'Malformed' })
    expect(await rejectCode(h.client.approve('p-nope', signApproval(h.keys[0]!, { origin: ORIGIN, baseVersion: 0, payloadB3: 'b3:00' })))).toMatchObject({ code: 'NotFound' })
    expect(await rejectCode(h.client.get(0))).toMatchObject({ code: 'Malformed' })
    expect(await rejectCode(h.client.get(5))).toMatchObject({ code: 'NotFound' })
  })

  it('refuses with 400 a signature that verifies only when decoded leniently (the Committer does not test the pattern again)', async () => {
    h = await harness()
    const p = await h.client.propose(payload(1))
    const good = signApproval(h.keys[0]!, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 })
    // The same 64 bytes in standard base64 ('+' and '/'), or with a stray character: Node's
    // base64url decoder accepts both, so only the pattern check keeps such a string out of the log.
    const std = Buffer.from(good.sig, 'base64url').toString('base64').replace(/=+$/, '')
    const lenient = [std, `${good.sig.slice(0, 85)}.${good.sig.slice(85)}`]
    expect(lenient.some((s) => s !== good.sig && Buffer.from(s, 'base64url').equals(Buffer.from(good.sig, 'base64url')))).toBe(true)
    for (const sig of lenient.filter((s) => s !== good.sig)) {
      expect(await rejectCode(h.client.approve(p.proposalId, { signerId: good.signerId, sig }))).toMatchObject({ code: 'Malformed', status: 400 })
      expect(await rejectCode(h.client.commit(p.proposalId, { approvals: [{ signerId: good.signerId, sig }] }))).toMatchObject({ code: 'Malformed', status: 400 })
    }
    expect((await h.client.approve(p.proposalId, good)).approvals).toBe(1)
  })

  it('write routes need a token with the scope; reads are public', async () => {
    h = await harness()
    const anon = createRegistryClient(h.transport)
    expect(await rejectCode(anon.propose(payload(1)))).toMatchObject({ code: 'Unauthorized' })
    const proposer = createRegistryClient(h.transport, { token: h.issuer.mint({ scope: 'registry:propose' }) })
    const p = await proposer.propose(payload(1))
    expect(await rejectCode(proposer.approveWith(p.proposalId, h.keys[0]!))).toMatchObject({ code: 'Forbidden' })
    expect(await rejectCode(proposer.supersede(1, 'x'))).toMatchObject({ code: 'Forbidden' })
    expect((await anon.head()).version).toBe(0)
  })

  it('expired proposals are removed', async () => {
    h = await harness({ proposalTtlMs: 1000 })
    const p = await h.client.propose(payload(1))
    await h.clock.advance(1001)
    expect(await rejectCode(h.client.proposal(p.proposalId))).toMatchObject({ code: 'NotFound' })
    expect(await h.svc.metricsText()).toMatch(/registry_proposals_expired_total\{service="registry"\} 1/)
  })
})

describe('signer-set rotation (TUF rule: both thresholds)', () => {
  const rotate = (keys: typeof h.keys, threshold: number) => ({ schemaVersion: 1 as const, items: [{ kind: 'signer-set' as const, ...setOf(keys, threshold) }] })

  it('an attacker key cannot install itself with one current signer', async () => {
    h = await harness()
    const evil = signers(1, 'evil')
    const p = await h.client.propose(rotate(evil, 1))
    await h.client.approveWith(p.proposalId, evil[0]!) // accepted: a key of the proposed set
    await h.client.approveWith(p.proposalId, h.keys[0]!)
    expect(await rejectCode(h.client.commit(p.proposalId))).toMatchObject({ code: 'QuorumNotMet', details: { have: 1, m: 2 } })
  })

  it('the current quorum alone cannot install keys that did not approve (proof of possession)', async () => {
    h = await harness()
    const next = signers(3, 'n')
    const p = await h.client.propose(rotate(next, 2))
    for (const k of h.keys.slice(0, 3)) await h.client.approveWith(p.proposalId, k)
    await h.client.approveWith(p.proposalId, next[0]!)
    expect(await rejectCode(h.client.commit(p.proposalId))).toMatchObject({ code: 'QuorumNotMet', details: { next: { have: 1, m: 2 } } })
  })

  it('a rotation with both thresholds commits; revoked keys then fail and the new keys work', async () => {
    h = await harness()
    const next = signers(3, 'n')
    const p = await h.client.propose(rotate(next, 2))
    for (const k of [...h.keys.slice(0, 2), ...next.slice(0, 2)]) await h.client.approveWith(p.proposalId, k)
    await h.client.commit(p.proposalId)
    expect((await h.client.head()).signers.signers.map((s) => s.id)).toEqual(['n1', 'n2', 'n3'])
    const q = await h.client.propose(payload(2))
    expect(await rejectCode(h.client.approveWith(q.proposalId, h.keys[0]!))).toMatchObject({ code: 'InvalidSignature', details: { reason: 'unknown_signer' } })
    for (const k of next.slice(1, 3)) await h.client.approveWith(q.proposalId, k)
    expect((await h.client.commit(q.proposalId)).version).toBe(2)
  })
})

describe('supersede', () => {
  it('is a quorum-approved record that marks a version with a reason, without rewriting it', async () => {
    h = await harness()
    const p = await h.client.propose(payload(1))
    for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
    await h.client.commit(p.proposalId)
    const before = await h.client.get(1)
    const s = await h.client.supersede(1, 'wrong endpoint')
    expect(await rejectCode(h.client.commit(s.proposalId))).toMatchObject({ code: 'QuorumNotMet' })
    for (const k of h.keys.slice(0, 2)) await h.client.approveWith(s.proposalId, k)
    expect((await h.client.commit(s.proposalId)).version).toBe(2)
    const after = await h.client.get(1)
    expect(after).toMatchObject({ ...before, supersededBy: { version: 2, reason: 'wrong endpoint' } })
    expect((await h.client.get(2)).payload).toMatchObject({ items: before.payload.items, meta: { supersedes: { version: 1, reason: 'wrong endpoint' } } })
    expect(await rejectCode(h.client.supersede(1, 'again'))).toMatchObject({ code: 'Conflict' })
  })
})

describe('retention and proofs', () => {
  it('prunes only what a checkpoint covers, never HEAD; a pruned version answers 410 naming the checkpoint; proofs still verify', async () => {
    h = await harness({ segmentEntries: 2, retention: { maxEntries: 1 } })
    const commit = async (i: number): Promise<void> => {
      const p = await h.client.propose(payload(i))
      for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
      await h.client.commit(p.proposalId)
    }
    for (let i = 1; i <= 5; i++) await commit(i)
    expect(await h.svc.prune()).toEqual([]) // no checkpoint yet: nothing before the first checkpoint goes
    const cp = await h.svc.checkpoint()
    expect(cp.treeSize).toBe(5)
    for (let i = 6; i <= 7; i++) await commit(i)
    await h.svc.prune() // (the checkpoint already asked Retention to run; this is idempotent)
    // Segments [1,2] and [3,4] are covered by the checkpoint of size 5; [5,6] is not strictly
    // covered and [7] holds HEAD, so they stay although the log is over its 1-entry limit.
    expect(logView(h.svc).store.segments().map((s) => [s.first, s.last])).toEqual([[5, 6], [7, 7]])
    expect(logView(h.svc).oldest()).toBe(5)
    expect(await h.svc.metricsText()).toMatch(/registry_pruned_segments_total\{service="registry"\} 2/)
    const gone = await rejectCode(h.client.get(3))
    expect(gone).toMatchObject({ code: 'Gone', status: 410, details: { version: 3, checkpoint: { treeSize: 5, root: cp.root } } })
    expect((await h.client.get(5)).version).toBe(5)
    const head = await h.client.head()
    const ip = await h.client.inclusionProof(2)
    expect(verifyInclusion(treeHasher(head.treeHash), 1, 7, Buffer.from(ip.leafHash, 'hex'), ip.proof.map((x) => Buffer.from(x, 'hex')), Buffer.from(head.root, 'hex'))).toBe(true)
    expect((await h.svc.verify()).ok).toBe(true)
  })
})

describe('conditional reads', () => {
  it('HEAD and entries answer 304 to a matching If-None-Match', async () => {
    h = await harness()
    const { memoryRequest } = await import('@ron/core/testing')
    const head = await memoryRequest(h.svc, { method: 'GET', path: '/registry/head' })
    const etag = head.headers['etag']!
    await head.dump()
    const again = await memoryRequest(h.svc, { method: 'GET', path: '/registry/head', headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
    await again.dump()
    const p = await h.client.propose(payload(1))
    for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
    const c = await h.client.commit(p.proposalId)
    const moved = await memoryRequest(h.svc, { method: 'GET', path: '/registry/head', headers: { 'if-none-match': etag } })
    expect(moved.status).toBe(200)
    await moved.dump()
    expect(c.version).toBe(1)
    const first = await memoryRequest(h.svc, { method: 'GET', path: '/registry/1' })
    const entryTag = first.headers['etag']!
    // The ETag is the BLAKE3 of the view's bytes (canonical JSON), not the entry hash.
    expect(entryTag).toBe(`"${toAddress(blake3(await first.bytes()))}"`)
    const e = await memoryRequest(h.svc, { method: 'GET', path: '/registry/1', headers: { 'if-none-match': entryTag } })
    expect(e.status).toBe(304)
    await e.dump()
  })

  it('currentHead() is one frozen object per HEAD: the same until a commit, a new one after', async () => {
    h = await harness()
    const log = logView(h.svc)
    const first = log.currentHead()
    expect(Object.isFrozen(first)).toBe(true)
    expect(log.currentHead()).toBe(first)
    expect(log.head()).toEqual(first)
    expect(log.head()).not.toBe(first) // head() still hands out a copy
    const p = await h.client.propose(payload(1))
    for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
    const c = await h.client.commit(p.proposalId)
    const second = log.currentHead()
    expect(second).not.toBe(first)
    expect(second).toEqual({ version: 1, hash: c.hash })
    expect(first).toEqual({ version: 0, hash: log.genesisHash }) // the old one is unchanged
  })

  it('over a real socket, HEAD read right after each commit is the new HEAD, byte for byte, and 304 follows its ETag', async () => {
    h = await harness()
    const { memoryRequest } = await import('@ron/core/testing')
    const server = await serve(h.svc, { port: 0 })
    try {
      const get = async (headers: Record<string, string> = {}): Promise<{ status: number; etag: string | null; length: string | null; body: string }> => {
        const r = await fetch(`${server.url}/registry/head`, { headers })
        return { status: r.status, etag: r.headers.get('etag'), length: r.headers.get('content-length'), body: await r.text() }
      }
      let before = await get()
      for (let i = 1; i <= 3; i++) {
        // Read (and so cache) the current HEAD's reply, commit, and read again at once.
        expect((await get({ 'if-none-match': before.etag! })).status).toBe(304)
        const p = await h.client.propose(payload(i))
        for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
        const c = await h.client.commit(p.proposalId)
        const after = await get({ 'if-none-match': before.etag! })
        expect(after.status).toBe(200)
        expect(after.etag).toBe(`"${c.hash}"`)
        expect(JSON.parse(after.body)).toMatchObject({ version: i, hash: c.hash, treeSize: i, root: c.root })
        expect(Number(after.length)).toBe(Buffer.byteLength(after.body))
        // The same bytes as the in-process view of the same HEAD (one serialisation, not two).
        const mem = await memoryRequest(h.svc, { method: 'GET', path: '/registry/head' })
        expect(Buffer.from(await mem.bytes()).toString('utf8')).toBe(after.body)
        expect((await get({ 'if-none-match': after.etag! })).status).toBe(304)
        expect((await get({ 'if-none-match': `W/${after.etag!}, "other"` })).status).toBe(304)
        before = after
      }
    } finally {
      await server.close()
    }
  })
})

describe('a commit carrying its approvals', () => {
  it('records the approvals and commits in one request; a retry returns the same entry', async () => {
    h = await harness()
    const p = await h.client.propose(payload(1))
    const approvals = h.keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
    const c = await h.client.commit(p.proposalId, { approvals })
    expect(c).toMatchObject({ version: 1, payloadB3: p.payloadB3, treeSize: 1 })
    expect((await h.client.get(1)).approvals.map((a) => a.signerId)).toEqual(['s1', 's2'])
    expect(await h.client.commit(p.proposalId, { approvals })).toEqual(c)
    expect(await h.client.commit(p.proposalId)).toEqual(c)
  })

  it('skips an approval already recorded, refuses a different one by the same signer (409) and a bad signature (422), and commits nothing then', async () => {
    h = await harness()
    const [a, b, c] = h.keys as [NonNullable<(typeof h.keys)[0]>, NonNullable<(typeof h.keys)[0]>, NonNullable<(typeof h.keys)[0]>]
    const p = await h.client.propose(payload(1))
    const subject = { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }
    await h.client.approve(p.proposalId, signApproval(a, subject))
    // Signed by c's key but claiming to be b: does not verify.
    const forged = { signerId: 's2', sig: signApproval(c, subject).sig }
    expect(await rejectCode(h.client.commit(p.proposalId, { approvals: [signApproval(a, subject), forged] }))).toMatchObject({ code: 'InvalidSignature', status: 422 })
    // A second, different signature by s1 over another subject is a duplicate approval.
    const other = signApproval(a, { ...subject, payloadB3: `b3:${'00'.repeat(32)}` })
    expect(await rejectCode(h.client.commit(p.proposalId, { approvals: [other] }))).toMatchObject({ code: 'DuplicateApproval', status: 409 })
    expect(h.svc.head().version).toBe(0)
    // One approval short: recorded, then QuorumNotMet.
    const q = await h.client.propose(payload(2))
    expect(await rejectCode(h.client.commit(q.proposalId, { approvals: [signApproval(b, { ...subject, payloadB3: q.payloadB3 })] }))).toMatchObject({ code: 'QuorumNotMet' })
    expect((await h.client.proposal(q.proposalId)).approvals).toEqual([{ signerId: 's2' }])
    // The recorded one plus a new one commit.
    const done = await h.client.commit(p.proposalId, { approvals: [signApproval(a, subject), signApproval(b, subject)] })
    expect(done.version).toBe(1)
  })

  it('needs registry:approve besides registry:commit when it carries approvals; the body is strict', async () => {
    h = await harness()
    const p = await h.client.propose(payload(1))
    const approvals = h.keys.slice(0, 2).map((k) => signApproval(k, { origin: ORIGIN, baseVersion: p.baseVersion, payloadB3: p.payloadB3 }))
    const committer = createRegistryClient(h.transport, { token: h.issuer.mint({ scope: 'registry:commit' }) })
    expect(await rejectCode(committer.commit(p.proposalId, { approvals }))).toMatchObject({ code: 'Forbidden', status: 403 })
    expect((await h.client.proposal(p.proposalId)).approvals).toEqual([])
    const { memoryRequest } = await import('@ron/core/testing')
    const token = h.issuer.mint({ scope: ['registry:commit', 'registry:approve'] })
    const bad = await memoryRequest(h.svc, {
      method: 'POST',
      path: `/registry/commit/${p.proposalId}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ approvals, extra: 1 }),
    })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'Malformed' } })
    expect(h.svc.head().version).toBe(0)
    // Without approvals, a commit-only token commits as before once quorum is there.
    for (const x of approvals) await h.client.approve(p.proposalId, x)
    expect((await committer.commit(p.proposalId)).version).toBe(1)
  })
})

describe('cached HEAD reply', () => {
  it('follows every commit and every prune (oldest), and is the same bytes while neither moves', async () => {
    h = await harness({ segmentEntries: 2, retention: { maxEntries: 1 } })
    const { memoryRequest } = await import('@ron/core/testing')
    const read = async (): Promise<{ etag: string; text: string }> => {
      const r = await memoryRequest(h.svc, { method: 'GET', path: '/registry/head' })
      expect(r.status).toBe(200)
      return { etag: r.headers['etag'] as string, text: await r.text() }
    }
    const empty = await read()
    expect(JSON.parse(empty.text)).toMatchObject({ version: 0, payloadB3: null, root: logView(h.svc).rootHex(0) })
    expect(await read()).toEqual(empty)
    for (let i = 1; i <= 5; i++) {
      const p = await h.client.propose(payload(i))
      for (const k of h.keys.slice(0, 2)) await h.client.approveWith(p.proposalId, k)
      const c = await h.client.commit(p.proposalId)
      const now = await read()
      expect(now.etag).toBe(`"${c.hash}"`)
      expect(JSON.parse(now.text)).toMatchObject({ version: i, hash: c.hash, payloadB3: p.payloadB3, root: c.root, treeSize: i, oldest: 1 })
      expect(c.root).toBe(Buffer.from(logView(h.svc).tree.root(i)).toString('hex'))
    }
    const before = await read()
    await h.svc.checkpoint()
    await h.svc.prune()
    expect(logView(h.svc).oldest()).toBeGreaterThan(1)
    const after = await read()
    // Same HEAD (same ETag), but the body now names the new oldest version.
    expect(after.etag).toBe(before.etag)
    expect(JSON.parse(after.text)).toMatchObject({ version: 5, oldest: logView(h.svc).oldest() })
  })

  it('follows a reload that renames the witness key (no commit, no prune)', async () => {
    h = await harness()
    const { memoryRequest } = await import('@ron/core/testing')
    const read = async (): Promise<{ witnessKey: string }> => {
      const r = await memoryRequest(h.svc, { method: 'GET', path: '/registry/head' })
      expect(r.status).toBe(200)
      return JSON.parse(await r.text()) as { witnessKey: string }
    }
    const before = await read()
    expect(before.witnessKey).toBe(h.svc.witnessKey)
    await h.svc.reload({ witness: { name: 'witness.example/renamed', logs: [] } })
    expect(h.svc.witnessKey).not.toBe(before.witnessKey)
    expect((await read()).witnessKey).toBe(h.svc.witnessKey)
    expect(h.svc.witnessKey.startsWith('witness.example/renamed+')).toBe(true)
  })
})

describe('metrics and readiness', () => {
  it('registers every registry metric at startup', async () => {
    h = await harness()
    const text = await h.svc.metricsText()
    for (const name of [
      'commit_cas_fail_total',
      'io_timeouts_total',
      'registry_reload_success_total',
      'registry_reload_fail_total',
      'registry_updates_total',
      'audit_chain_verify_seconds',
      'registry_checkpoint_age_seconds',
      'registry_log_segments',
      'registry_storage_bytes',
      'registry_recoveries_total',
      'busy_rejections_total',
      'bus_lagged_total',
      'queue_depth',
      'config_reloads_total',
    ]) {
      expect(text, name).toContain(`# TYPE ${name}`)
    }
  })

  it('reports read and write paths; reload applies live settings and refuses immutable ones', async () => {
    h = await harness()
    expect(h.svc.health()).toMatchObject({ ready: true, writeReady: true, paths: { write: true, read: true } })
    await h.svc.reload({ proposalTtlMs: 5000 })
    const p = await h.client.propose(payload(1))
    expect(p.expiresAt).toBe(h.clock.now() + 5000)
    await expect(h.svc.reload({ origin: 'elsewhere' })).rejects.toMatchObject({ code: 'Malformed' })
    await expect(h.svc.reload({ proposalTtlMs: -1 })).rejects.toMatchObject({ code: 'Malformed' })
    expect(await h.svc.metricsText()).toMatch(/registry_reload_success_total\{source="reload",service="registry"\} 1/)
  })
})
