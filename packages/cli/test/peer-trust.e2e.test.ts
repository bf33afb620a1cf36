/**
 * What a listed peer can and cannot do (SPEC.md §5 "Peers", docs/security.md "A peer"), attacked
 * with fake peers (plain `node:http` servers on loopback) against the real `ron-node` binary.
 */

import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { addressOf, generateIssuerKey, newNodeId, signToken } from '@ron/core'
import { hashApiKey } from '@ron/interop'
import { claimsOf, startFakePeer, type FakePeer } from './fake-peer.js'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

interface PeerView {
  admin: string
  nodeId?: string
  nodeKey?: string
  state: string
  error?: string
}

let root: string
const fakes: FakePeer[] = []
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-peer-trust-'))
})
afterEach(async () => {
  await killAll()
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
})

async function fake(status: (url: string) => Record<string, unknown>): Promise<FakePeer> {
  const f = await startFakePeer(status)
  fakes.push(f)
  return f
}

async function start(args: string[]): Promise<{ proc: Proc; summary: Summary }> {
  const proc = spawnCli(['start', '--port-base', '0', '--json', '--log-level', 'info', '--drain-deadline', '500ms', ...args])
  return { proc, summary: await firstJsonLine<Summary>(proc, 60_000) }
}

async function peersOf(admin: string): Promise<PeerView[]> {
  return ((await (await fetch(`${admin}/status`)).json()) as { peers: PeerView[] }).peers
}

/** Bounded poll: the first value `check` returns that is not undefined (at most attempts × 50 ms). */
async function eventually<T>(check: () => Promise<T | undefined>, attempts = 300): Promise<T | undefined> {
  for (let i = 0; i < attempts; i++) {
    const v = await check()
    if (v !== undefined) return v
    await new Promise((r) => setTimeout(r, 50))
  }
  return undefined
}

/** A raw Ed25519 public key, base64url (what `/status` reports as `nodeKey`). */
const newKey = (): string => generateIssuerKey({ epoch: 1 }).publicJwk.x

describe('a peer cannot become one of this node’s services', () => {
  it('peers whose /status claims "storage" or "passport" receive no call and no token; uploads, webhooks and puts stay in-process', async () => {
    // The attack of issue 20: a listed peer reporting a service name as its node id used to get
    // this node's storage:write token (webhook receipts) and passport:issue token (uploads).
    const asStorage = await fake((url) => ({ name: 'ron-node', nodeId: 'storage', nodeKey: newKey(), version: '0', services: { storage: { url }, passport: { url }, index: { url } } }))
    const asPassport = await fake((url) => ({ name: 'ron-node', nodeId: 'passport', nodeKey: newKey(), version: '0', services: { storage: { url }, passport: { url } } }))
    const apiKey = `ronk_${randomBytes(16).toString('hex')}`
    const config = join(root, 'spoof.json')
    await writeFile(config, JSON.stringify({ interop: { apiKeys: [{ client: 'acme', keyHash: hashApiKey(apiKey) }] } }))
    const dataDir = join(root, 'spoof')
    const { summary } = await start(['--config', config, '--data-dir', dataDir, '--peers', `${asStorage.url},${asPassport.url}`])
    const storage = summary.services['storage']!

    // A webhook: interop stores its receipt through storage (storage:write service token).
    const hook = await runCli(['webhook', 'test', 'github', '--json', '--node', summary.admin, '--data-dir', dataDir])
    expect(hook.code, hook.stderr).toBe(0)
    const { receipt } = JSON.parse(hook.stdout) as { receipt: string }
    expect((await fetch(`${storage}/o/${receipt}`, { method: 'HEAD' })).status).toBe(200)

    // An upload: interop gets a capability from passport (passport:issue service token) and stores.
    const up = await fetch(`${summary.services['interop']}/put`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/octet-stream' }, body: 'uploaded through interop' })
    const upText = await up.text()
    expect(up.status, upText).toBeLessThan(300)
    const uploaded = (JSON.parse(upText) as { address: string }).address
    expect((await fetch(`${storage}/o/${uploaded}`, { method: 'HEAD' })).status).toBe(200)

    // A plain put (replication looks at peers).
    const file = join(root, 'spoof.bin')
    await writeFile(file, randomBytes(2048))
    const put = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir])
    expect(put.code, put.stderr).toBe(0)

    expect(asStorage.received).toEqual([])
    expect(asPassport.received).toEqual([])
    // Both are refused as peers, saying why.
    const peers = await peersOf(summary.admin)
    for (const f of [asStorage, asPassport]) {
      const p = peers.find((x) => x.admin === f.url)
      expect(p).toMatchObject({ state: 'refused' })
      expect(p?.nodeId).toBeUndefined()
      expect(p?.error).toMatch(/node id/)
    }
  }, 60_000)
})

describe('what a legitimate peer receives', () => {
  it('replica writes carry a token with storage:replicate only, for audience storage', async () => {
    const peer = await fake((url) => ({ name: 'ron-node', nodeId: newNodeId(), nodeKey: newKey(), version: '0', services: { storage: { url } } }))
    const dataDir = join(root, 'scoped')
    const { summary } = await start(['--data-dir', dataDir, '--peers', peer.url, '--rf', '2', '--write-quorum', '2'])
    const file = join(root, 'scoped.bin')
    await writeFile(file, randomBytes(4096))
    const put = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir])
    expect(put.code, put.stderr).toBe(0)
    const replicas = peer.received.filter((r) => r.method === 'PUT' && r.path === '/replica')
    expect(replicas.length).toBeGreaterThanOrEqual(1)
    expect(peer.received.every((r) => r.token !== undefined)).toBe(true)
    for (const r of peer.received) {
      const claims = claimsOf(r.token!)
      expect(claims.scope).toBe('storage:replicate')
      expect(claims.aud).toEqual(['storage'])
      expect(claims.sub).toBe(`node:${summary.nodeId}`)
      // Short-lived (SPEC §5: service tokens live minutes).
      expect(claims.exp! - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(600)
    }
    // And the peer is pinned by its key in the data directory.
    const pins = JSON.parse(await readFile(join(dataDir, 'pins.json'), 'utf8')) as { pins: { admin: string; nodeId: string; nodeKey: string }[] }
    expect(pins.pins).toEqual([expect.objectContaining({ admin: peer.url, nodeId: peer.status['nodeId'], nodeKey: peer.status['nodeKey'] })])
  }, 60_000)
})

describe('pinned node keys', () => {
  it('pins the first key; a peer whose key changes is refused and logged until `peers forget`; the pin survives a restart', async () => {
    const id = newNodeId()
    const [key1, key2, key3] = [newKey(), newKey(), newKey()]
    const peer = await fake((url) => ({ name: 'ron-node', nodeId: id, nodeKey: key1, version: '0', services: { storage: { url } } }))
    const dataDir = join(root, 'pinned')
    let { proc, summary } = await start(['--data-dir', dataDir, '--peers', peer.url, '--rf', '2'])
    expect(await peersOf(summary.admin)).toEqual([expect.objectContaining({ admin: peer.url, state: 'pinned', nodeId: id, nodeKey: key1, source: 'first-contact' })])

    // A reinstalled (or impersonated) peer: same id and URL, another key.
    peer.status = { ...peer.status, nodeKey: key2 }
    const refused = await eventually(async () => (await peersOf(summary.admin)).find((p) => p.state === 'refused'))
    expect(refused).toMatchObject({ admin: peer.url, nodeId: id, nodeKey: key1 })
    expect(refused?.error).toMatch(/node key changed/)
    expect(proc.stderr()).toMatch(/peer refused: its node key changed.*ron-node peers forget/)
    // Nothing goes to it any more: a put does not replicate there.
    const sent = peer.received.length
    const file = join(root, 'pinned.bin')
    await writeFile(file, randomBytes(2048))
    const put = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir])
    expect(put.code, put.stderr).toBe(0)
    expect(peer.received.length).toBe(sent)

    // Forgetting needs a node:admin token.
    const denied = await runCli(['peers', 'forget', peer.url, '--node', summary.admin, '--token', 'not-a-token'])
    expect(denied.code).toBe(4)
    // The operator forgets the pin: the next answer is pinned afresh.
    const forgot = await runCli(['peers', 'forget', peer.url, '--node', summary.admin, '--data-dir', dataDir, '--json'])
    expect(forgot.code, forgot.stderr).toBe(0)
    expect(JSON.parse(forgot.stdout)).toEqual({ admin: peer.url, forgotten: true })
    expect(await eventually(async () => (await peersOf(summary.admin)).find((p) => p.state === 'pinned' && p.nodeKey === key2))).toBeDefined()
    const ls = await runCli(['peers', 'ls', '--node', summary.admin, '--json'])
    expect(JSON.parse(ls.stdout)).toMatchObject({ peers: [{ admin: peer.url, state: 'pinned', nodeId: id, nodeKey: key2 }] })

    // The pin is on disk: after a restart, yet another key is refused from the first answer on.
    proc.child.kill('SIGTERM')
    expect((await proc.exited).code).toBe(0)
    peer.status = { ...peer.status, nodeKey: key3 }
    ;({ proc, summary } = await start(['--data-dir', dataDir, '--peers', peer.url, '--rf', '2']))
    expect(await peersOf(summary.admin)).toEqual([expect.objectContaining({ state: 'refused', nodeKey: key2 })])
    proc.child.kill('SIGTERM')
    expect((await proc.exited).code).toBe(0)

    // A stopped node's pin is forgotten in the data directory (nothing answers at --node).
    const offline = await runCli(['peers', 'forget', peer.url, '--node', 'http://127.0.0.1:1', '--data-dir', dataDir])
    expect(offline.code, offline.stderr).toBe(0)
    expect(offline.stdout).toMatch(/in the data directory/)
    expect((JSON.parse(await readFile(join(dataDir, 'pins.json'), 'utf8')) as { pins: unknown[] }).pins).toEqual([])
    // Forgetting what is not pinned says so (exit 3).
    expect((await runCli(['peers', 'forget', peer.url, '--node', 'http://127.0.0.1:1', '--data-dir', dataDir])).code).toBe(3)
  }, 90_000)

  it('refuses a second peer URL claiming an id already pinned, and a peer reporting this node’s own URLs', async () => {
    const id = newNodeId()
    const key = newKey()
    const first = await fake((url) => ({ name: 'ron-node', nodeId: id, nodeKey: key, version: '0', services: { storage: { url } } }))
    const dataDir = join(root, 'dupes')
    // Pin the first one alone, then list a copycat (same id and key, another URL) and a thief.
    let { proc, summary } = await start(['--data-dir', dataDir, '--peers', first.url])
    proc.child.kill('SIGTERM')
    await proc.exited
    const copycat = await fake((url) => ({ name: 'ron-node', nodeId: id, nodeKey: key, version: '0', services: { storage: { url } } }))
    const thief = await fake(() => ({ name: 'ron-node', nodeId: newNodeId(), nodeKey: newKey(), version: '0', services: {} }))
    ;({ proc, summary } = await start(['--data-dir', dataDir, '--peers', [first.url, copycat.url, thief.url].join(',')]))
    // The thief claims this node's own storage URL as its storage: replicas would come back here.
    thief.status = { ...thief.status, services: { storage: { url: summary.services['storage'] } } }
    const views = await eventually(async () => {
      const v = await peersOf(summary.admin)
      return v.filter((p) => p.state === 'refused').length === 2 ? v : undefined
    })
    expect(views?.find((p) => p.admin === first.url)).toMatchObject({ state: 'pinned', nodeId: id })
    expect(views?.find((p) => p.admin === copycat.url)?.error).toMatch(/pinned for another peer/)
    expect(views?.find((p) => p.admin === thief.url)?.error).toMatch(/this node’s own URL/)
  }, 60_000)
})

describe('what /status states', () => {
  it('states the node key (the data directory’s; amnesia: an ephemeral one) and never the data directory', async () => {
    const dataDir = join(root, 'status-shape')
    const { summary } = await start(['--data-dir', dataDir])
    const text = await (await fetch(`${summary.admin}/status`)).text()
    const status = JSON.parse(text) as Record<string, unknown>
    const kept = (JSON.parse(await readFile(join(dataDir, 'keys', 'node.json'), 'utf8')) as { publicJwk?: { x?: string }; x?: string })
    const x = kept.publicJwk?.x ?? kept.x
    expect(status['nodeKey']).toBe(x)
    expect(status).not.toHaveProperty('dataDir')
    expect(text).not.toContain(dataDir)

    const amnesia = await Promise.all([start(['--amnesia']), start(['--amnesia'])])
    const keys = await Promise.all(amnesia.map(async ({ summary: s }) => ((await (await fetch(`${s.admin}/status`)).json()) as { nodeKey: string }).nodeKey))
    for (const k of keys) expect(k).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(keys[0]).not.toBe(keys[1])
  }, 60_000)

  it('refuses a node.json whose node id is not n + 16 hex (a service name above all), naming the file', async () => {
    for (const bad of ['passport', 'storage', 'node-1']) {
      const dataDir = join(root, `bad-id-${bad}`)
      await mkdir(dataDir, { recursive: true, mode: 0o700 })
      await writeFile(join(dataDir, 'node.json'), JSON.stringify({ format: 2, nodeId: bad, createdAt: 0 }))
      const r = await runCli(['start', '--data-dir', dataDir, '--port-base', '0', '--json'])
      expect(r.code).toBe(1)
      expect(r.stderr).toContain(join(dataDir, 'node.json'))
      expect(r.stderr).toMatch(/not a node id \(n \+ 16 lowercase hex digits/)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
    }
  }, 60_000)
})

describe('the shared passport’s enrolment', () => {
  it('vouches for peers’ keys: an enrolled id with another key is refused; with the enrolled key it is pinned from the enrolment', async () => {
    const { summary: a } = await start(['--data-dir', join(root, 'enrol-a')])
    const ownerToken = (await readFile(a.tokenFile, 'utf8')).trim()
    // B joins A: its node key is enrolled with A's passport (B never needs to run for this).
    const bDir = join(root, 'enrol-b')
    const joinB = await runCli(['join', a.admin, '--token', ownerToken, '--data-dir', bDir, '--json'])
    expect(joinB.code, joinB.stderr).toBe(0)
    const bId = (JSON.parse(joinB.stdout) as { nodeId: string }).nodeId
    const bKey = (JSON.parse(await readFile(join(bDir, 'keys', 'node.json'), 'utf8')) as { x: string }).x
    // Anyone can read the enrolled keys.
    const listed = (await (await fetch(`${a.services['passport']}/v1/passport/node-keys`)).json()) as { nodes: { nodeId: string; nodeKey: string }[] }
    expect(listed.nodes).toContainEqual({ nodeId: bId, nodeKey: bKey })

    const liar = await fake((url) => ({ name: 'ron-node', nodeId: bId, nodeKey: newKey(), version: '0', services: { storage: { url } } }))
    const honest = await fake((url) => ({ name: 'ron-node', nodeId: bId, nodeKey: bKey, version: '0', services: { storage: { url } } }))
    // C joins A too (it uses A's passport) and lists A, the liar and the honest one.
    const cDir = join(root, 'enrol-c')
    const joinC = await runCli(['join', a.admin, '--token', ownerToken, '--data-dir', cDir])
    expect(joinC.code, joinC.stderr).toBe(0)
    const { summary: c, proc } = await start(['--data-dir', cDir, '--peers', [a.admin, liar.url, honest.url].join(',')])
    const peers = await peersOf(c.admin)
    expect(peers.find((p) => p.admin === a.admin)).toMatchObject({ state: 'pinned', nodeId: a.nodeId, source: 'first-contact' })
    expect(peers.find((p) => p.admin === honest.url)).toMatchObject({ state: 'pinned', nodeId: bId, nodeKey: bKey, source: 'enrolment' })
    const lied = peers.find((p) => p.admin === liar.url)
    expect(lied).toMatchObject({ state: 'refused' })
    expect(lied?.error).toMatch(/enrolled with the passport/)
    expect(proc.stderr()).toMatch(/peer refused: node n[0-9a-f]{16} reports key .* but is enrolled/)
    expect(liar.received).toEqual([])
  }, 90_000)
})

describe('what a peer can do with the token it received', () => {
  it('a replica token replayed on the node’s passport mints nothing: no issue, no widening attenuation', async () => {
    const peer = await fake((url) => ({ name: 'ron-node', nodeId: newNodeId(), nodeKey: newKey(), version: '0', services: { storage: { url } } }))
    const dataDir = join(root, 'replay')
    const { summary } = await start(['--data-dir', dataDir, '--peers', peer.url, '--rf', '2', '--write-quorum', '2'])
    const file = join(root, 'replay.bin')
    await writeFile(file, randomBytes(1024))
    const put = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir])
    expect(put.code, put.stderr).toBe(0)
    const stolen = peer.received.find((r) => r.token !== undefined)?.token
    expect(stolen).toBeDefined()
    const passport = summary.services['passport']!
    const post = async (path: string, body: unknown): Promise<{ status: number; code?: string }> => {
      const res = await fetch(`${passport}${path}`, { method: 'POST', headers: { authorization: `Bearer ${stolen!}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const json = (await res.json()) as { error?: { code?: string } }
      return { status: res.status, ...(json.error?.code === undefined ? {} : { code: json.error.code }) }
    }
    // Issuing: its audience is storage, not passport, and it has no passport:issue anyway.
    for (const scope of ['node:admin', 'passport:admin', 'storage:write', 'storage:replicate']) {
      const r = await post('/v1/passport/issue', { sub: 'thief', aud: ['storage'], scope: [scope], ttlSec: 600 })
      expect(r.status, scope).toBeGreaterThanOrEqual(401)
      expect(r.status, scope).toBeLessThanOrEqual(403)
    }
    // Attenuating (holding a token is the right to narrow it, never to widen it).
    for (const scope of ['storage:write', 'storage:admin', 'node:admin']) {
      const r = await runCli(['token', 'attenuate', stolen!, '--scope', scope, '--node', summary.admin, '--data-dir', dataDir])
      expect(r.code, `${scope}: ${r.stderr}`).toBe(4)
    }
    // And a node's service tokens never carry more than the call: the stolen one is storage:replicate only.
    expect(claimsOf(stolen!).scope).toBe('storage:replicate')
  }, 60_000)
})

describe('replica writes from peers', () => {
  it('a pinned peer’s issuer key signs storage:replicate only; a refused peer’s keys are never even read', async () => {
    const pinnedKey = generateIssuerKey({ epoch: 1 })
    const refusedKey = generateIssuerKey({ epoch: 1 })
    const pinned = await fake((url) => ({ name: 'ron-node', nodeId: newNodeId(), nodeKey: newKey(), version: '0', services: { storage: { url } } }))
    pinned.keys = [pinnedKey.publicJwk]
    const refused = await fake((url) => ({ name: 'ron-node', nodeId: 'storage', nodeKey: newKey(), version: '0', services: { storage: { url } } }))
    refused.keys = [refusedKey.publicJwk]
    const { summary } = await start(['--amnesia', '--peers', `${pinned.url},${refused.url}`])
    const storage = summary.services['storage']!
    const push = async (key: typeof pinnedKey, scope: string, path: string): Promise<{ status: number; body: string }> => {
      const token = signToken(key, { sub: 'node:peer', aud: ['storage'], scope: [scope], ttlSec: 60 })
      const body = randomBytes(64)
      const res = await fetch(`${storage}${path}`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'x-expect-address': addressOf(body), 'content-type': 'application/octet-stream' }, body })
      return { status: res.status, body: await res.text() }
    }
    expect((await push(pinnedKey, 'storage:replicate', '/replica')).status).toBe(201)
    // The same key for a client write: refused.
    expect((await push(pinnedKey, 'storage:write', '/o')).status).toBe(401)
    // A refused peer's key is not looked up at all.
    const fromRefused = await push(refusedKey, 'storage:replicate', '/replica')
    expect(fromRefused.status).toBe(401)
    expect(fromRefused.body).toContain('unknown_kid')
    expect(refused.keysCalls()).toBe(0)
    expect(pinned.keysCalls()).toBeGreaterThan(0)
  }, 60_000)
})
