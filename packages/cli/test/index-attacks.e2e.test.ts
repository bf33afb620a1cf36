/**
 * Issue 20's index and interop findings attacked against real `ron-node` processes on loopback
 * (SPEC.md §5 "Peers", §6a "Announcements belong to their node", "Signed name records"):
 * announcement poisoning with a node's own service token and with an admin-minted one, SSRF from
 * the announcement (or a peer's answer) to interop's anonymous `GET /o/:addr`, and a lying peer
 * index answering names homed on another node.
 *
 * One cluster serves every case: node A (the node under attack), node B (a real node, home of
 * `victim.bank`, reached through a slow link so that A always asks the liar first), and L, a fake
 * peer index (`fake-peer.ts`) that A pins like any peer and whose node key is enrolled with A's
 * passport — so the test, holding L's key, gets L's service tokens exactly as a joined node does.
 * A listener on an internal port records every request that reaches it; it must get none.
 */

import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { HttpTransport, SERVICE_CALL_SCOPES, addressOf, generateIssuerKey, newNodeId, nodeIdentityFromKey, type NodeIdentity } from '@ron/core'
import { createPassportClient, remotePassportMinter } from '@ron/passport'
import { signNameRecord, type SignedNameRecord } from '@ron/index'
import { placement } from '@ron/storage'
import { startFakePeer, type FakePeer } from './fake-peer.js'
import { assertBuilt, firstJsonLine, freeBases, killAll, spawnCli, type Proc } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
}

interface Node {
  proc: Proc
  s: Summary
  admin: string
}

/** Every request that reached the internal listener. */
const hits: string[] = []
let internal: Server
let internalUrl: string
let liar: FakePeer
let liarId: string
let liarIdentity: NodeIdentity
/** How many times the liar was asked for each key (decoded). */
const asked = new Map<string, number>()
/** What the liar answers for each key (anything else: 404). */
const lies = new Map<string, unknown>()
let link: { url: string; close(): Promise<void> }
let a: Node
let b: Node
let liarToken: string
let root: string
const http = new HttpTransport({ breaker: false })

/** A relay to B's admin and index that delays index answers: a far-away node, always slower than the liar. */
async function slowLink(admin: string, index: string, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  let self = ''
  const server = createServer((req, res) => {
    void (async () => {
      const path = req.url ?? '/'
      try {
        const chunks: Buffer[] = []
        for await (const c of req) chunks.push(c as Buffer)
        const headers: Record<string, string> = {}
        for (const h of ['accept', 'content-type', 'authorization', 'x-ron-peer', 'if-match']) {
          const v = req.headers[h]
          if (typeof v === 'string') headers[h] = v
        }
        const toAdmin = path === '/status' || path === '/keys'
        if (path.startsWith('/resolve/')) await delay(delayMs)
        const r = await fetch(`${toAdmin ? admin : index}${path}`, { method: req.method ?? 'GET', headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) })
        let text = await r.text()
        if (path === '/status' && r.status === 200) {
          // B's index is reached through this link; its other services directly.
          const status = JSON.parse(text) as { services: Record<string, { url: string }> }
          status.services['index'] = { ...status.services['index']!, url: self }
          text = JSON.stringify(status)
        }
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(text)
      } catch {
        res.writeHead(502).end()
      }
    })()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  self = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: self,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/** Bounded poll: the first value `check` returns that is not undefined (at most attempts × 50 ms). */
async function eventually<T>(check: () => Promise<T | undefined>, attempts = 300): Promise<T | undefined> {
  for (let i = 0; i < attempts; i++) {
    const v = await check()
    if (v !== undefined) return v
    await delay(50)
  }
  return undefined
}

interface Answer {
  status: number
  body: Record<string, unknown> & { error?: { code: string; details: Record<string, unknown> } }
}

async function call(url: string, method: string, token: string | undefined, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': typeof body === 'string' || body instanceof Uint8Array ? 'application/octet-stream' : 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : body instanceof Uint8Array ? new Uint8Array(body) : JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) }
}

/** A counter's value in a node's `/metrics` (the admin listener's merged exposition). */
async function counter(node: Node, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${node.admin}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
  if (line === undefined) throw new Error(`no ${name} ${JSON.stringify(labels)} in ${node.admin}/metrics`)
  return Number(line.split(' ').pop())
}

const adminToken = async (n: Node): Promise<string> => (await readFile(n.s.tokenFile, 'utf8')).trim()

/** Stores `bytes` on a node's storage (its admin token); its storage announces them to its own index. */
async function store(n: Node, bytes: Uint8Array | string): Promise<string> {
  const r = await call(`${n.s.services['storage']}/o`, 'PUT', await adminToken(n), bytes)
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300)
  return r.body['address'] as string
}

/** A manifest stored on `n` for `text`, with its content stored there too. */
async function manifestOn(n: Node, text: string): Promise<{ address: string; manifest: { content: string; size: number; type: string } }> {
  const content = await store(n, text)
  const manifest = { content, size: Buffer.byteLength(text), type: 'text/html' }
  return { address: await store(n, JSON.stringify(manifest)), manifest }
}

/** A peer index's answer for `name` binding a manifest of the liar's own making (self-consistent: its text hashes to its address). */
function forgedAnswer(name: string, label: string, record?: (manifestAddress: string) => unknown): unknown {
  const manifest = { content: addressOf(new TextEncoder().encode(label)), size: label.length, type: 'text/html' }
  const manifestText = JSON.stringify(manifest)
  const manifestAddress = addressOf(new TextEncoder().encode(manifestText))
  const r = record?.(manifestAddress)
  return { key: name, manifestAddress, manifest, manifestText, ...(r === undefined ? {} : { record: r }), providers: [], source: 'local', ttlSec: 10 }
}

const sign = (identity: NodeIdentity, name: string, manifestAddress: string | null, seq: number, node = identity.id): SignedNameRecord =>
  signNameRecord(identity, { name, manifestAddress: manifestAddress as `b3:${string}` | null, seq, node, signedAt: Date.now() })

beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-index-attacks-'))
  internal = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`)
    res.writeHead(200, { 'content-type': 'text/plain' }).end('internal secret')
  })
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r))
  internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`

  // The liar: a pinned peer that advertises an index only (so storage never places on it).
  liarId = newNodeId()
  const liarKey = generateIssuerKey()
  liarIdentity = nodeIdentityFromKey(liarId, liarKey)
  liar = await startFakePeer((url) => ({ name: 'ron-node', nodeId: liarId, nodeKey: liarIdentity.publicKey, version: '0', services: { index: { url } } }))
  liar.answer = (method, path) => {
    if (method !== 'GET' || !path.startsWith('/resolve/')) return undefined
    const key = decodeURIComponent(path.slice('/resolve/'.length))
    asked.set(key, (asked.get(key) ?? 0) + 1)
    const lie = lies.get(key)
    return lie === undefined ? { status: 404, json: { error: { code: 'NotFound', message: 'not here', retryable: false, corr_id: 'x', details: {} } } } : { status: 200, json: lie }
  }

  const [baseA, baseB] = await freeBases(2)
  const adminA = `http://127.0.0.1:${baseA}`
  link = await slowLink(`http://127.0.0.1:${baseB}`, `http://127.0.0.1:${baseB! + 4}`, 150)
  // A asks one peer at a time, the fastest first (the liar), the next as soon as an answer is refused.
  const config = join(root, 'a.json')
  await writeFile(config, JSON.stringify({ index: { peers: { alpha: 1, beta: 1, hedgeMs: 10_000 } } }))
  const start = (name: string, base: number, args: string[]): Proc =>
    spawnCli(['start', '--json', '--log-level', 'warn', '--drain-deadline', '500ms', '--port-base', String(base), '--data-dir', join(root, name), '--rf', '1', ...args])
  const pa = start('a', baseA!, ['--config', config, '--peers', `${liar.url},${link.url}`])
  const pb = start('b', baseB!, ['--peers', adminA])
  const [sa, sb] = await Promise.all([firstJsonLine<Summary>(pa, 60_000), firstJsonLine<Summary>(pb, 60_000)])
  a = { proc: pa, s: sa, admin: sa.admin }
  b = { proc: pb, s: sb, admin: sb.admin }
  // Each pinned the other (A: B through the link) and A pinned the liar.
  const pinned = await eventually(async () => {
    const peers = ((await (await fetch(`${a.admin}/status`)).json()) as { peers: { admin: string; state: string; nodeId?: string }[] }).peers
    return peers.filter((p) => p.state === 'pinned').length === 2 ? peers : undefined
  })
  expect(pinned?.map((p) => p.nodeId).sort()).toEqual([liarId, sb.nodeId].sort())
  expect(await eventually(async () => (((await (await fetch(`${b.admin}/status`)).json()) as { peers: { state: string }[] }).peers[0]?.state === 'pinned' ? true : undefined))).toBe(true)

  // The liar's node key is enrolled with A's passport (as `ron-node join` does): it holds real
  // service tokens of A's cluster, `sub: node:<liar>`.
  await createPassportClient(http, { target: sa.services['passport']!, token: await adminToken(a) }).enrolNode({
    nodeId: liarId,
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x: liarIdentity.publicKey },
    scopes: [...SERVICE_CALL_SCOPES],
  })
  liarToken = await remotePassportMinter(http, { nodeId: liarId, nodeKey: liarKey, target: sa.services['passport']! }).mint({ aud: 'index', scope: ['index:announce'], ttlSec: 600 })
}, 90_000)

afterEach(() => {
  // The nodes are shared by the tests of this file; only a crash would end them early.
  expect(a.proc.child.exitCode).toBeNull()
  expect(b.proc.child.exitCode).toBeNull()
})

afterAll(async () => {
  await killAll()
  await Promise.all([liar?.close(), link?.close(), new Promise<void>((r) => (internal === undefined ? r() : internal.close(() => r()))), http.close()])
  await rm(root, { recursive: true, force: true })
})

describe('announcement poisoning against a real ron-node', () => {
  it('a node’s own service token announces only for its node, at a URL it advertises; an admin-minted one for no node; nothing refused is kept or fetched', async () => {
    const index = a.s.services['index']!
    const announce = (token: string, address: string, node: string, endpoint: string): Promise<Answer> => call(`${index}/providers`, 'POST', token, { address, node, endpoint, ttlSec: 600 })
    const bStorage = b.s.services['storage']!
    const aStorage = a.s.services['storage']!
    const secret = `${internalUrl}/secret`
    // Content A holds: its storage announced it to its index under A's id, at A's storage URL.
    const bytes = randomBytes(2048)
    const held = await store(a, bytes)
    // An address nobody provides is a 404 NotFound: no providers.
    const providers = async (address: string): Promise<Array<{ node: string; endpoint: string }>> => {
      const r = await call(`${index}/providers/${address}?fresh=1`, 'GET', undefined)
      if (r.status === 404) return []
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      // The score decays with a record's age (1 → 0.999 between two reads): compare who and where.
      return (r.body['providers'] as Array<{ node: string; endpoint: string }>).map(({ node, endpoint }) => ({ node, endpoint }))
    }
    expect(await eventually(async () => ((await providers(held)).length > 0 ? true : undefined))).toBe(true)
    const genuine = await providers(held)
    expect(genuine).toEqual([expect.objectContaining({ node: a.s.nodeId, endpoint: aStorage })])
    const nowhere = addressOf(randomBytes(64))

    const before = {
      not_own_node: await counter(a, 'index_announcements_refused_total', { reason: 'not_own_node' }),
      unknown_endpoint: await counter(a, 'index_announcements_refused_total', { reason: 'unknown_endpoint' }),
      bad_endpoint: await counter(a, 'index_announcements_refused_total', { reason: 'bad_endpoint' }),
    }
    const refusals: Array<[string, string, string, number, string]> = [
      // For another node: its record cannot be replaced, nor one added in its name.
      [held, a.s.nodeId, secret, 403, 'not_own_node'],
      [held, a.s.nodeId, aStorage, 403, 'not_own_node'],
      [held, b.s.nodeId, bStorage, 403, 'not_own_node'],
      // For itself, at a URL it does not advertise: an internal address, another node's storage,
      // this node's storage, the metadata service.
      [held, liarId, secret, 403, 'unknown_endpoint'],
      [nowhere, liarId, secret, 403, 'unknown_endpoint'],
      [held, liarId, bStorage, 403, 'unknown_endpoint'],
      [held, liarId, aStorage, 403, 'unknown_endpoint'],
      [nowhere, liarId, 'http://169.254.169.254/latest/meta-data', 403, 'unknown_endpoint'],
      // Not an http(s) URL: refused outright on a node (it has a directory).
      [held, liarId, 'javascript:alert(1)', 400, 'bad_endpoint'],
      [held, liarId, 'storage', 400, 'bad_endpoint'],
      [held, liarId, `${liar.url}?x=1`, 400, 'bad_endpoint'],
    ]
    for (const [address, node, endpoint, status, reason] of refusals) {
      const r = await announce(liarToken, address, node, endpoint)
      expect([r.status, r.body.error?.details['reason']], `${node} ${endpoint}`).toEqual([status, reason])
    }
    // A token the admin minted with index:announce has no node: it announces for none. And no one
    // can have a token minted in a node's name.
    const admin = await adminToken(a)
    const minted = await call(`${a.s.services['passport']}/v1/passport/issue`, 'POST', admin, { sub: 'mallory', aud: ['index'], scope: ['index:announce'], ttlSec: 600 })
    expect(minted.status).toBe(200)
    for (const node of [a.s.nodeId, liarId]) {
      const r = await announce(minted.body['token'] as string, held, node, node === liarId ? liar.url : aStorage)
      expect([r.status, r.body.error?.details['reason']]).toEqual([403, 'not_own_node'])
    }
    const asNode = await call(`${a.s.services['passport']}/v1/passport/issue`, 'POST', admin, { sub: `node:${b.s.nodeId}`, aud: ['index'], scope: ['index:announce'], ttlSec: 600 })
    expect(asNode.status).toBe(403)
    // Each refusal counted, by reason, on the real process.
    expect(await counter(a, 'index_announcements_refused_total', { reason: 'not_own_node' })).toBe(before.not_own_node + 5)
    expect(await counter(a, 'index_announcements_refused_total', { reason: 'unknown_endpoint' })).toBe(before.unknown_endpoint + 5)
    expect(await counter(a, 'index_announcements_refused_total', { reason: 'bad_endpoint' })).toBe(before.bad_endpoint + 3)

    // Nothing refused was recorded: A's record is as its storage announced it.
    expect(await providers(held)).toEqual(genuine)
    expect(await providers(nowhere)).toEqual([])
    // The liar's own announcement, at the URL it advertises, is accepted — beside A's record, not over it.
    const own = await announce(liarToken, held, liarId, liar.url)
    expect(own.status).toBe(200)
    const after = await providers(held)
    expect(after).toHaveLength(2)
    expect(after).toContainEqual(expect.objectContaining({ node: a.s.nodeId, endpoint: aStorage }))
    expect(after).toContainEqual(expect.objectContaining({ node: liarId, endpoint: liar.url }))

    // Interop's anonymous reads of both addresses: the held one is served (verified), the other is
    // not found; the internal listener was never contacted, and the liar's URL — a known node's
    // index, not its storage — was never read from either.
    const read = await fetch(`${a.s.services['interop']}/o/${held}`)
    expect(read.status).toBe(200)
    expect(read.headers.get('x-content-type-options')).toBe('nosniff')
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true)
    const missing = await fetch(`${a.s.services['interop']}/o/${nowhere}`)
    expect(missing.status).toBe(404)
    await missing.body?.cancel()
    expect(hits).toEqual([])
    expect(liar.received.filter((r) => r.path.startsWith('/o/'))).toEqual([])
  }, 60_000)
})

describe('SSRF through interop, end to end', () => {
  it('a peer answer naming internal URLs reaches no reader and hides no genuine provider; reads go only to known nodes’ storage', async () => {
    const interop = a.s.services['interop']!
    const index = a.s.services['index']!
    // Content only B holds: A learns its provider from B's index (through the link).
    // (Placement by node id, rf 1: bytes whose one place is B, so B alone holds them.)
    let onB = randomBytes(4096)
    while (placement(addressOf(onB), [a.s.nodeId, b.s.nodeId], 1)[0] !== b.s.nodeId) onB = randomBytes(4096)
    const z = await store(b, onB)
    // A content address nobody holds.
    const y = addressOf(randomBytes(64))
    const madeUp = (key: string): unknown => ({
      key,
      providers: [
        { node: liarId, endpoint: `${internalUrl}/secret`, score: 1 },
        { node: b.s.nodeId, endpoint: `${internalUrl}/as-b`, score: 1 },
        { node: a.s.nodeId, endpoint: `${internalUrl}/as-a`, score: 1 },
        { node: newNodeId(), endpoint: internalUrl, score: 1 },
        { node: b.s.nodeId, endpoint: 'storage', score: 1 },
        { node: liarId, endpoint: 'javascript:alert(1)', score: 1 },
      ],
      source: 'local',
      ttlSec: 10,
    })
    lies.set(y, madeUp(y))
    lies.set(z, madeUp(z))
    const rejected = await counter(a, 'rejected_total', { service: 'index', reason: 'provider_unknown_endpoint' })

    // Index's own answers carry none of it: Y is unknown, Z's provider is B at its storage URL.
    const ry = await call(`${index}/resolve/${y}?fresh=1`, 'GET', undefined)
    expect(ry.status).toBe(404)
    const rz = await call(`${index}/resolve/${z}?fresh=1`, 'GET', undefined)
    expect(rz.status).toBe(200)
    const listed = rz.body['providers'] as Array<{ node: string; endpoint: string }>
    expect(listed).toContainEqual(expect.objectContaining({ node: b.s.nodeId, endpoint: b.s.services['storage'] }))
    // (Repair may since have placed a copy on A: each node is listed at its own storage URL, nothing else.)
    for (const p of listed) expect(p.endpoint).toBe(p.node === a.s.nodeId ? a.s.services['storage'] : b.s.services['storage'])
    expect(asked.get(y)).toBeGreaterThanOrEqual(1)
    expect(asked.get(z)).toBeGreaterThanOrEqual(1)
    expect(await counter(a, 'rejected_total', { service: 'index', reason: 'provider_unknown_endpoint' })).toBe(rejected + 12)

    // Interop's anonymous reads, through A's index: Y is not found, Z is read from B's storage.
    const readY = await fetch(`${interop}/o/${y}`)
    expect(readY.status).toBe(404)
    await readY.body?.cancel()
    const readZ = await fetch(`${interop}/o/${z}`)
    expect(readZ.status).toBe(200)
    expect(readZ.headers.get('content-type')).toBe('application/octet-stream')
    expect(Buffer.from(await readZ.arrayBuffer()).equals(onB)).toBe(true)
    expect(hits).toEqual([])
  }, 60_000)
})

describe('a lying peer index against a real ron-node', () => {
  it('its answers for victim.bank (homed on B) are refused, counted and never cached: A serves B’s signed record', async () => {
    const index = a.s.services['index']!
    const name = 'victim.bank'
    const resolve = async (fresh: boolean): Promise<Answer> => call(`${index}/resolve/${name}${fresh ? '?fresh=1' : ''}`, 'GET', undefined)
    const rejected = (reason: string): Promise<number> => counter(a, 'rejected_total', { service: 'index', reason })

    // Before anyone binds it, the liar's unsigned, self-consistent answer makes nothing of it.
    lies.set(name, forgedAnswer(name, '<form action=https://evil.example>'))
    const unsigned0 = await rejected('name_unsigned')
    expect((await resolve(true)).status).toBe(404)
    expect(await rejected('name_unsigned')).toBe(unsigned0 + 1)
    expect((await resolve(false)).status).toBe(404)
    expect(asked.get(name)).toBeGreaterThanOrEqual(1)

    // B (its home) binds it, twice: seq 1, then seq 2.
    const tokenB = await adminToken(b)
    const first = await manifestOn(b, '<h1>the bank, v1</h1>')
    const second = await manifestOn(b, '<h1>the bank, v2</h1>')
    expect((await call(`${b.s.services['index']}/names/${name}`, 'PUT', tokenB, { manifestAddress: first.address })).body).toMatchObject({ seq: 1 })
    // B's signed answer for seq 1, as a peer would receive it (kept to replay later).
    const old = (await call(`${b.s.services['index']}/resolve/${name}`, 'GET', undefined, undefined, { 'x-ron-peer': '1' })).body
    expect(old).toMatchObject({ manifestAddress: first.address, record: { node: b.s.nodeId, seq: 1 } })
    expect((await call(`${b.s.services['index']}/names/${name}`, 'PUT', tokenB, { manifestAddress: second.address })).body).toMatchObject({ seq: 2 })

    const stranger = nodeIdentityFromKey(newNodeId(), generateIssuerKey())
    const attacks: Array<[string, unknown]> = [
      // No record: the attack as it was (served as source: peer, and cached).
      ['name_unsigned', forgedAnswer(name, 'phish 1')],
      // Signed by the liar's own (pinned) key, claiming B as the home.
      ['name_bad_signature', forgedAnswer(name, 'phish 2', (m) => sign(liarIdentity, name, m, 99, b.s.nodeId))],
      // Signed by a node nobody pinned.
      ['name_unknown_home', forgedAnswer(name, 'phish 3', (m) => sign(stranger, name, m, 99))],
      // B's genuine record, with the liar's manifest.
      ['name_bad_signature', forgedAnswer(name, 'phish 4', () => old['record'])],
      // B's genuine seq-1 answer, replayed whole after seq 2.
      ['name_stale', old],
    ]
    for (const [reason, lie] of attacks) {
      lies.set(name, lie)
      const was = await rejected(reason)
      const askedBefore = asked.get(name) ?? 0
      const r = await resolve(true)
      expect(r.status, reason).toBe(200)
      expect(r.body, reason).toMatchObject({ manifestAddress: second.address, manifest: second.manifest, source: 'peer', record: { node: b.s.nodeId, seq: 2 } })
      // The liar was asked (first) and its answer refused, counted under its reason.
      expect(asked.get(name), reason).toBe(askedBefore + 1)
      expect(await rejected(reason), reason).toBe(was + 1)
    }
    // Nothing the liar said was cached: the cached answer is B's.
    expect((await resolve(false)).body).toMatchObject({ manifestAddress: second.address, source: 'cache', record: { node: b.s.nodeId, seq: 2 } })
  }, 60_000)

  it('a name homed on A is never replaced by a peer’s record, not even after its delete; a write of a name homed elsewhere is 409 with details.home', async () => {
    const index = a.s.services['index']!
    const tokenA = await adminToken(a)
    const tokenB = await adminToken(b)
    // A binds two names (it is their home).
    const site = await manifestOn(a, '<h1>A’s own</h1>')
    for (const name of ['home-a.site', 'kept-a.site']) {
      const w = await call(`${index}/names/${name}`, 'PUT', tokenA, { manifestAddress: site.address })
      expect(w.status, JSON.stringify(w.body)).toBe(200)
    }
    // (Creating a name asks the peers once whether it is homed elsewhere.)
    const askedBefore = asked.get('home-a.site') ?? 0
    // The liar holds a record for home-a.site that verifies — signed by its own pinned key, seq 99.
    lies.set('home-a.site', forgedAnswer('home-a.site', 'takeover', (m) => sign(liarIdentity, 'home-a.site', m, 99)))
    const r = await call(`${index}/resolve/home-a.site?fresh=1`, 'GET', undefined)
    expect(r.body).toMatchObject({ manifestAddress: site.address, source: 'local', record: { node: a.s.nodeId, seq: 1 } })
    // Deleted at its home: the tombstone answers; the peers are not asked.
    expect((await call(`${index}/names/home-a.site`, 'DELETE', tokenA)).status).toBe(200)
    const gone = await call(`${index}/resolve/home-a.site?fresh=1`, 'GET', undefined)
    expect(gone).toMatchObject({ status: 404, body: { error: { details: { reason: 'deleted', record: { node: a.s.nodeId, manifestAddress: null, seq: 2 } } } } })
    expect(asked.get('home-a.site') ?? 0).toBe(askedBefore)

    // B may not write or delete a name homed on A: 409 naming A (its admin URL, as B pinned it).
    const onB = await manifestOn(b, '<h1>B’s attempt</h1>')
    for (const [method, body] of [['PUT', { manifestAddress: onB.address }], ['DELETE', undefined]] as const) {
      const w = await call(`${b.s.services['index']}/names/kept-a.site`, method, tokenB, body)
      expect([w.status, w.body.error?.code, w.body.error?.details], method).toEqual([409, 'Conflict', { name: 'kept-a.site', reason: 'home_elsewhere', node: a.s.nodeId, home: a.admin }])
    }
    // Nor A a name homed on B (home: B's admin URL as A pinned it).
    const w = await call(`${index}/names/victim.bank`, 'PUT', tokenA, { manifestAddress: site.address })
    expect([w.status, w.body.error?.details]).toEqual([409, { name: 'victim.bank', reason: 'home_elsewhere', node: b.s.nodeId, home: link.url }])
    // Both names still resolve to their home's binding.
    expect((await call(`${b.s.services['index']}/resolve/kept-a.site?fresh=1`, 'GET', undefined)).body).toMatchObject({ manifestAddress: site.address, record: { node: a.s.nodeId } })

    // What listing a peer still trusts it with (docs/security.md): a name nobody else holds, bound
    // by a pinned peer under its own key, is believed.
    lies.set('free.site', forgedAnswer('free.site', 'the liar’s own', (m) => sign(liarIdentity, 'free.site', m, 1)))
    expect((await call(`${index}/resolve/free.site?fresh=1`, 'GET', undefined)).body).toMatchObject({ source: 'peer', record: { node: liarId } })
  }, 60_000)
})

describe('a known node’s storage serving content through interop', () => {
  it('its content type never reaches a reader (octet-stream, nosniff), bytes that do not match the address are never served whole, and its redirects are not followed', async () => {
    // Node C lists one peer, H: a pinned node whose storage is the fake peer itself, whose key C's
    // passport enrolled — so H announces what it holds, as a joined node does.
    const hId = newNodeId()
    const hKey = generateIssuerKey()
    const hIdentity = nodeIdentityFromKey(hId, hKey)
    const hostile = await startFakePeer((url) => ({ name: 'ron-node', nodeId: hId, nodeKey: hIdentity.publicKey, version: '0', services: { storage: { url } } }))
    try {
      const page = new TextEncoder().encode('<script>document.cookie</script>')
      const pageAddress = addressOf(page)
      const claimed = randomBytes(512)
      const claimedAddress = addressOf(claimed)
      const movedAddress = addressOf(randomBytes(64))
      hostile.answer = (method, path) => {
        if (path === `/o/${pageAddress}`) return { status: 200, body: page, headers: { 'content-type': 'text/html; charset=utf-8' } }
        // Other bytes than the address names (same length): a tampered copy.
        if (path === `/o/${claimedAddress}`) return { status: 200, body: randomBytes(512), headers: { 'content-type': 'text/html' } }
        // A redirect to an internal URL: never followed.
        if (path === `/o/${movedAddress}`) return { status: 302, body: '', headers: { location: `${internalUrl}/moved` } }
        return undefined
      }
      const proc = spawnCli(['start', '--json', '--log-level', 'warn', '--drain-deadline', '500ms', '--port-base', '0', '--data-dir', join(root, 'c'), '--rf', '1', '--peers', hostile.url])
      const c: Node = { proc, s: await firstJsonLine<Summary>(proc, 60_000), admin: '' }
      c.admin = c.s.admin
      expect(await eventually(async () => (((await (await fetch(`${c.admin}/status`)).json()) as { peers: { state: string }[] }).peers[0]?.state === 'pinned' ? true : undefined))).toBe(true)
      await createPassportClient(http, { target: c.s.services['passport']!, token: await adminToken(c) }).enrolNode({
        nodeId: hId,
        publicJwk: { kty: 'OKP', crv: 'Ed25519', x: hIdentity.publicKey },
        scopes: [...SERVICE_CALL_SCOPES],
      })
      const hToken = await remotePassportMinter(http, { nodeId: hId, nodeKey: hKey, target: c.s.services['passport']! }).mint({ aud: 'index', scope: ['index:announce'], ttlSec: 600 })
      for (const address of [pageAddress, claimedAddress, movedAddress]) {
        const r = await call(`${c.s.services['index']}/providers`, 'POST', hToken, { address, node: hId, endpoint: hostile.url, ttlSec: 600 })
        expect(r.status, JSON.stringify(r.body)).toBe(200)
      }

      // The page is read from H (C's storage does not hold it) and served as bytes, not as HTML.
      const read = await fetch(`${c.s.services['interop']}/o/${pageAddress}`)
      expect(read.status).toBe(200)
      expect(read.headers.get('content-type')).toBe('application/octet-stream')
      expect(read.headers.get('x-content-type-options')).toBe('nosniff')
      expect(Buffer.from(await read.arrayBuffer()).equals(page)).toBe(true)
      expect(hostile.received.filter((r) => r.path === `/o/${pageAddress}`).length).toBeGreaterThanOrEqual(1)
      // The tampered copy is never delivered whole: the connection is cut before its last bytes
      // (before any, for one chunk), or it is refused.
      const got = await fetch(`${c.s.services['interop']}/o/${claimedAddress}`).then(
        async (r) => (r.status === 200 ? r.arrayBuffer().then(() => 'whole', () => 'cut') : `status ${r.status}`),
        () => 'cut',
      )
      expect(got).toMatch(/^(cut|status (404|502|503))$/)
      // The redirect is not followed: nothing reaches the internal listener, the object is not found.
      const moved = await fetch(`${c.s.services['interop']}/o/${movedAddress}`)
      expect(moved.status).toBe(404)
      await moved.body?.cancel()
      expect(hostile.received.filter((r) => r.path === `/o/${movedAddress}`).length).toBeGreaterThanOrEqual(1)
      expect(hits).toEqual([])
      expect(hostile.received.filter((r) => r.path === `/o/${claimedAddress}`).length).toBeGreaterThanOrEqual(1)
      expect(c.proc.child.exitCode).toBeNull()
    } finally {
      await hostile.close()
    }
  }, 90_000)
})
