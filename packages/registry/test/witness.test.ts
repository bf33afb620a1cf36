/**
 * Witnesses (C2SP tlog-witness, tlog-cosignature): a log pushes each checkpoint to the witnesses
 * it lists and serves their cosignatures; a node witnessing another log cosigns only what a
 * consistency proof shows extends what it cosigned before. Real HTTP between the services.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { serve, systemClock, type RonServer } from '@ron/core'
import { createTestIssuer, metricValue, mountTmpfs } from '@ron/core/testing'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { formatCheckpoint, generateLogKey, noteSigner, signNote, signatureLine, treeHashLine } from '../src/checkpoint.js'
import { cosigner, parseCosignerKey, verifyCosignature } from '../src/cosignature.js'
import { MerkleTree, sha256TreeHasher } from '../src/merkle.js'
import { createRegistryService, type RegistryService } from '../src/service.js'
import { createRegistryClient } from '../src/client.js'
import type { RegistryServiceConfig } from '../src/config.js'
import { ALL_SCOPES, approve, payload, setOf, signers, tempDir } from './helpers.js'
import { memoryNetwork } from '@ron/core/testing'

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

interface Node {
  svc: RegistryService
  url: string
  commit(n?: number): Promise<void>
}

async function node(config: RegistryServiceConfig = {}, keys = signers(1)): Promise<Node> {
  const issuer = createTestIssuer()
  const svc = await createRegistryService({ signers: setOf(keys, 1), auth: { keys: issuer.keys }, clock: systemClock, ...config })
  const server: RonServer = await serve(svc, { port: 0 })
  const client = createRegistryClient(memoryNetwork({ registry: svc }), { token: issuer.mint({ scope: ALL_SCOPES }) })
  cleanup.push(async () => {
    await server.close()
    await svc.close()
  })
  return {
    svc,
    url: server.url,
    async commit(n = 1) {
      for (let i = 0; i < n; i++) {
        const p = await client.propose(payload(svc.head().version + 1))
        await client.commit(p.proposalId, { approvals: approve(keys, p.baseVersion, p.payloadB3, svc.origin) })
      }
    },
  }
}

function endpoint(w: Node): { name: string; url: string; key: string } {
  return { name: parseCosignerKey(w.svc.witnessKey).name, url: `${w.url}/registry/witness`, key: w.svc.witnessKey }
}

async function addCheckpoint(w: Node, body: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${w.url}/registry/witness/add-checkpoint`, { method: 'POST', body })
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() }
}

describe('a log and its witnesses', () => {
  it('each new checkpoint goes to every witness with a consistency proof and is served with their cosignatures', async () => {
    const log = await node()
    const [w1, w2] = [await node(), await node()]
    for (const w of [w1, w2]) await w.svc.reload({ witness: { logs: [{ origin: log.svc.origin, key: log.svc.logKey }] } })
    await log.svc.reload({ witnesses: [endpoint(w1), endpoint(w2)] })
    for (let round = 1; round <= 3; round++) {
      await log.commit(2)
      await vi.waitFor(() => expect(log.svc.witnesses().map((w) => w.cosignedSize)).toEqual([2 * round, 2 * round]), { timeout: 5000, interval: 20 })
      const note = log.svc.signedCheckpoint()
      for (const w of [w1, w2]) expect(verifyCosignature(note, w.svc.witnessKey)?.timestamp).toBeGreaterThan(1_600_000_000)
      expect(note.startsWith(`${log.svc.origin}\n${2 * round}\n`)).toBe(true)
      // GET /registry/checkpoint serves the same note.
      expect(await (await fetch(`${log.url}/registry/checkpoint`)).text()).toBe(note)
    }
    const text = await log.svc.metricsText()
    expect(metricValue(text, 'registry_witness_requests_total', { witness: endpoint(w1).name, result: 'cosigned' })).toBeGreaterThanOrEqual(3)
    expect(metricValue(await w1.svc.metricsText(), 'registry_witness_checkpoints_total', { result: 'cosigned' })).toBeGreaterThanOrEqual(3)
    // The witness's monitoring URL serves what it cosigned last.
    const originHash = (await import('node:crypto')).createHash('sha256').update(log.svc.origin).digest('hex')
    const monitored = await (await fetch(`${w1.url}/registry/witness/${originHash}/checkpoint`)).text()
    expect(verifyCosignature(monitored, w1.svc.witnessKey)).toBeDefined()
  })

  it('a dead witness delays nobody, and a witness answering a bad cosignature is not believed', async () => {
    const log = await node()
    const good = await node()
    await good.svc.reload({ witness: { logs: [{ origin: log.svc.origin, key: log.svc.logKey }] } })
    // A "witness" answering a cosignature line made with the right name and key id but a wrong signature.
    const liar = cosigner('liar.example/w', generateLogKey())
    const fake: Server = createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(signatureLine(liar.name, liar.keyId, Buffer.alloc(72, 7))))
    })
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r))
    cleanup.push(() => new Promise((r) => fake.close(() => r())))
    const fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`
    await log.svc.reload({
      witnessTimeoutMs: 500,
      witnesses: [{ name: 'dead.example/w', url: 'http://127.0.0.1:9/registry/witness', key: cosigner('dead.example/w', generateLogKey()).verifierKey }, { name: liar.name, url: fakeUrl, key: liar.verifierKey }, endpoint(good)],
    })
    await log.commit()
    await vi.waitFor(() => expect(verifyCosignature(log.svc.signedCheckpoint(), good.svc.witnessKey)).toBeDefined(), { timeout: 5000, interval: 20 })
    await vi.waitFor(async () => expect(metricValue(await log.svc.metricsText(), 'registry_witness_requests_total', { witness: liar.name, result: 'invalid' })).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 20 })
    expect(verifyCosignature(log.svc.signedCheckpoint(), liar.verifierKey)).toBeUndefined()
    await vi.waitFor(() => expect(log.svc.witnesses().find((w) => w.name === 'dead.example/w')?.error).toBeDefined(), { timeout: 5000, interval: 20 })
    expect(metricValue(await log.svc.metricsText(), 'registry_witness_requests_total', { witness: 'dead.example/w', result: 'unreachable' })).toBeGreaterThanOrEqual(1)
  })

  it('after the log restarts it learns the size a witness knows (409) and proves consistency from there', async () => {
    const t = await tempDir()
    cleanup.push(() => t.cleanup())
    const w = await node()
    const logKey = generateLogKey()
    const keys = signers(1)
    let log = await node({ dataDir: t.dir, origin: 'restart.test/log', logKey }, keys)
    await w.svc.reload({ witness: { logs: [{ origin: log.svc.origin, key: log.svc.logKey }] } })
    await log.svc.reload({ witnesses: [endpoint(w)] })
    await log.commit(3)
    await vi.waitFor(() => expect(log.svc.witnesses()[0]?.cosignedSize).toBe(3), { timeout: 5000, interval: 20 })
    await log.svc.close()
    log = await node({ dataDir: t.dir, logKey, witnesses: [endpoint(w)] }, keys)
    await vi.waitFor(() => expect(verifyCosignature(log.svc.signedCheckpoint(), w.svc.witnessKey)).toBeDefined(), { timeout: 5000, interval: 20 })
    const text = await log.svc.metricsText()
    expect(metricValue(text, 'registry_witness_requests_total', { witness: endpoint(w).name, result: 'conflict' })).toBeGreaterThanOrEqual(1)
  })
})

describe('the witness side (add-checkpoint)', () => {
  const ORIGIN = 'split.test/log'
  const logKey = generateLogKey()
  const signer = noteSigner(ORIGIN, logKey)
  const hasher = sha256TreeHasher
  const treeOf = (n: number, salt = ''): MerkleTree => {
    const t = new MerkleTree(hasher)
    for (let i = 0; i < n; i++) t.appendData(Buffer.from(`${salt}leaf ${i}`))
    return t
  }
  const cp = (t: MerkleTree, size = t.size, treeHash: 'sha256' | 'blake3' = 'sha256', origin = ORIGIN): string =>
    signNote(formatCheckpoint({ origin, treeSize: size, rootHash: t.root(size), extensions: [treeHashLine(treeHash)] }), signer)
  const body = (old: number, proof: Uint8Array[], note: string): string => `old ${old}\n${proof.map((p) => `${Buffer.from(p).toString('base64')}\n`).join('')}\n${note}`

  it('cosigns only what extends what it cosigned; answers 404, 403, 400, 409 and 422 as C2SP says', async () => {
    const t = await tempDir()
    cleanup.push(() => t.cleanup())
    const witnessKey = generateLogKey()
    const config = { dataDir: t.dir, witnessKey, witness: { name: 'w.test/1', logs: [{ origin: ORIGIN, key: signer.verifierKey }] } }
    const wKeys = signers(1)
    let w = await node(config, wKeys)
    const tree = treeOf(10)

    expect((await addCheckpoint(w, body(0, [], cp(tree, 4, 'sha256', 'unknown.test/log')))).status).toBe(404)
    const impostor = noteSigner(ORIGIN, generateLogKey())
    const forged = signNote(formatCheckpoint({ origin: ORIGIN, treeSize: 4, rootHash: tree.root(4), extensions: [treeHashLine('sha256')] }), impostor)
    expect((await addCheckpoint(w, body(0, [], forged))).status).toBe(403) // (another key of the same name: ignored, so none)
    // A valid log signature beside a failing one by the same key: the note is malformed (403).
    const good = cp(tree, 4)
    const bad = `${good}${signatureLine(signer.name, signer.keyId, Buffer.alloc(64, 1))}`
    expect((await addCheckpoint(w, body(0, [], bad))).status).toBe(403)
    expect((await addCheckpoint(w, body(5, [], good))).status).toBe(400) // old > size
    expect((await addCheckpoint(w, 'old 0\nnot base64!\n\n' + good)).status).toBe(400)
    expect((await addCheckpoint(w, good)).status).toBe(400)
    expect((await addCheckpoint(w, body(0, [tree.root(1)], good))).status).toBe(422) // a proof from 0

    const first = await addCheckpoint(w, body(0, [], good))
    expect(first.status).toBe(200)
    expect(verifyCosignature(good + first.text, w.svc.witnessKey)).toMatchObject({ name: 'w.test/1' })

    // The log's view moved on: the witness says which size it knows.
    const stale = await addCheckpoint(w, body(0, [], cp(tree, 6)))
    expect(stale).toMatchObject({ status: 409, type: 'text/x.tlog.size', text: '4\n' })
    // A split view: a different tree of size 6 signed by the log's key, with a proof from 4 that
    // cannot hold, and a different root at the same size 4.
    const fork = treeOf(10, 'fork ')
    expect((await addCheckpoint(w, body(4, fork.consistencyProof(4, 6), cp(fork, 6)))).status).toBe(422)
    expect((await addCheckpoint(w, body(4, [], cp(fork, 4)))).status).toBe(422)
    // Switching the stated tree hash is inconsistent with the past too.
    expect((await addCheckpoint(w, body(4, tree.consistencyProof(4, 6), cp(tree, 6, 'blake3')))).status).toBe(422)
    // The true extension is cosigned.
    const next = await addCheckpoint(w, body(4, tree.consistencyProof(4, 6), cp(tree, 6)))
    expect(next.status).toBe(200)

    // The state is durable: after a restart the witness still knows size 6.
    await cleanup.pop()!()
    w = await node(config, wKeys)
    expect(await addCheckpoint(w, body(4, tree.consistencyProof(4, 8), cp(tree, 8)))).toMatchObject({ status: 409, text: '6\n' })
    expect((await addCheckpoint(w, body(6, tree.consistencyProof(6, 8), cp(tree, 8)))).status).toBe(200)
    const text = await w.svc.metricsText()
    for (const [result, n] of [['cosigned', 1], ['conflict', 1]] as const) expect(metricValue(text, 'registry_witness_checkpoints_total', { result })).toBeGreaterThanOrEqual(n)
  })

  it('a full disk or an unreadable state is a 503 and cosigns nothing; freed, it goes on from what it knew', async () => {
    const tmp = await mountTmpfs(1024 * 1024)
    const t = tmp === undefined ? await tempDir() : undefined
    cleanup.push(async () => {
      await tmp?.close()
      await t?.cleanup()
    })
    const dir = tmp?.path ?? t!.dir
    const config = { dataDir: dir, witness: { logs: [{ origin: ORIGIN, key: signer.verifierKey }] } }
    const keys = signers(1)
    const w = await node(config, keys)
    const tree = treeOf(10)
    expect((await addCheckpoint(w, body(0, [], cp(tree, 3)))).status).toBe(200)
    if (tmp !== undefined) {
      await tmp.fill()
      const full = await addCheckpoint(w, body(3, tree.consistencyProof(3, 5), cp(tree, 5)))
      expect(full.status).toBe(503)
      expect(JSON.parse(full.text)).toMatchObject({ error: { code: 'NotReady', details: { reason: 'disk_full' } } })
      await tmp.unfill()
      expect((await addCheckpoint(w, body(3, tree.consistencyProof(3, 5), cp(tree, 5)))).status).toBe(200)
    }
    // A state file that cannot be read is never taken for an empty one.
    await cleanup.pop()!()
    await writeFile(join(dir, 'witness-state.json'), '{"logs": {"split.test/log": {"size": 5,')
    const w2 = await node(config, keys)
    const broken = await addCheckpoint(w2, body(0, [], cp(tree, 7)))
    expect(broken.status).toBe(503)
    expect(JSON.parse(broken.text)).toMatchObject({ error: { code: 'NotReady', details: { reason: 'io_error' } } })
  })

  it('a size-0 checkpoint must carry the empty root', async () => {
    const w = await node({ witness: { logs: [{ origin: ORIGIN, key: signer.verifierKey }] } })
    const t = treeOf(1)
    const wrong = signNote(formatCheckpoint({ origin: ORIGIN, treeSize: 0, rootHash: t.root(1), extensions: [treeHashLine('sha256')] }), signer)
    expect((await addCheckpoint(w, body(0, [], wrong))).status).toBe(422)
    expect((await addCheckpoint(w, body(0, [], cp(t, 0)))).status).toBe(200)
  })

  it('a witness must not hold the log key: its own log is refused at start and on reload', async () => {
    const keys = signers(1)
    const logKey2 = generateLogKey()
    const own = noteSigner('own.test/log', logKey2)
    await expect(createRegistryService({ origin: 'own.test/log', logKey: logKey2, signers: setOf(keys, 1), witness: { logs: [{ origin: 'own.test/log', key: own.verifierKey }] } })).rejects.toMatchObject({
      name: 'ConfigError',
      details: { path: 'witness.logs.0' },
    })
    await expect(createRegistryService({ origin: 'own.test/log', logKey: logKey2, witnessKey: logKey2, signers: setOf(keys, 1) })).rejects.toMatchObject({ details: { path: 'witnessKeyFile' } })
    const n = await node({ origin: 'own.test/log', logKey: logKey2 })
    await expect(n.svc.reload({ witness: { logs: [{ origin: 'other.test/log', key: own.verifierKey }] } })).rejects.toMatchObject({ details: { path: 'witness.logs.0' } })
    expect(n.svc.witnessKey).toMatch(/^own\.test\/log\/witness\+[0-9a-f]{8}\+/)
  })
})
