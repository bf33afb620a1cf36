/**
 * Issue 20's full-disk findings against a real `ron-node` (the built binary): a node whose data
 * directory is on a small tmpfs that the test fills to ENOSPC. A name write (`PUT /names`), a
 * registry commit, a passport revoke and an interop webhook (its dedupe journal) each answer 503
 * `NotReady` `disk_full` — they used to answer 500, and index then exited on an unhandled LMDB
 * "Commit failed" — the process stays up, reads go on, and writes come back once there is room.
 * A revocation refused on the full disk is refused every time (it used to be applied in memory,
 * answer 500, then 202 on a retry, and be forgotten at the restart); once acknowledged it holds
 * across a restart.
 *
 * Where no tmpfs can be mounted (not root, not Linux) — or with `RON_E2E_INJECT_DISK=1` — the
 * node runs with `enospc-preload.ts`, which makes every `node:fs` write under passport's,
 * registry's and interop's directories fail with ENOSPC while a flag file exists. LMDB writes from
 * native code and cannot be reached that way: index's share is then
 * `packages/index/test/disk-fault-injected.test.ts`.
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { delimiter, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { setTimeout as delay } from 'node:timers/promises'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { mountTmpfs, type Tmpfs } from '@ron/core/testing'
import { signWebhook } from '@ron/interop'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  admin: string
  services: Record<string, string>
  tokenFile: string
}

interface Answer {
  status: number
  body: Record<string, unknown> & { error?: { code: string; details: Record<string, unknown> } }
}

/** How the test fills the disk: a real tmpfs, or the preload's ENOSPC flag. */
interface Disk {
  /** The node's data directory. */
  readonly dataDir: string
  /** Extra environment of the node (the preload, for the injected fault). */
  readonly env: Record<string, string>
  /** True on a real volume: every service's writes fail, LMDB's (index) too; else passport's, registry's and interop's. */
  readonly real: boolean
  fill(): Promise<void>
  unfill(): Promise<void>
  close(): Promise<void>
}

/** Storage turns writes unready below 64 MiB free: the volume holds that and some room for the test. */
const TMPFS_BYTES = 80 * 1024 * 1024
/** `enospc-preload.ts`, run through tsx's loader (a dev dependency) in the node under test. */
const PRELOAD = fileURLToPath(new URL('./enospc-preload.ts', import.meta.url))
const TSX = createRequire(import.meta.url).resolve('tsx')

let root: string
let disk: Disk
let proc: Proc
let node: Summary
let admin: string
let config: string

async function openDisk(): Promise<Disk> {
  const fs: Tmpfs | undefined = process.env['RON_E2E_INJECT_DISK'] === '1' ? undefined : await mountTmpfs(TMPFS_BYTES)
  if (fs !== undefined) {
    return { dataDir: join(fs.path, 'node'), env: {}, real: true, fill: () => fs.fill(), unfill: () => fs.unfill(), close: () => fs.close() }
  }
  const dataDir = join(root, 'node')
  const flag = join(root, 'disk-full')
  return {
    dataDir,
    // Passport's, registry's and interop's directories: storage keeps room, so a webhook's receipt
    // is stored and its dedupe journal — interop's own disk — is what fails.
    env: { NODE_OPTIONS: `--import=${pathToFileURL(TSX).href} --import=${pathToFileURL(PRELOAD).href}`, RON_TEST_ENOSPC_UNDER: ['passport', 'registry', 'interop'].map((d) => join(dataDir, d)).join(delimiter), RON_TEST_ENOSPC_FLAG: flag },
    real: false,
    fill: () => writeFile(flag, ''),
    unfill: () => rm(flag, { force: true }),
    close: () => Promise.resolve(),
  }
}

async function startNode(): Promise<void> {
  proc = spawnCli(['start', '--port-base', '0', '--json', '--log-level', 'warn', '--drain-deadline', '500ms', '--data-dir', disk.dataDir, '--config', config], disk.env)
  node = await firstJsonLine<Summary>(proc, 60_000)
  admin = (await readFile(node.tokenFile, 'utf8')).trim()
}

async function stopNode(): Promise<void> {
  proc.child.kill('SIGTERM')
  expect((await proc.exited).code).toBe(0)
}

async function call(service: string, method: string, path: string, token: string | undefined, body?: unknown): Promise<Answer> {
  const raw = typeof body === 'string' || body instanceof Uint8Array
  const res = await fetch(`${node.services[service]}${path}`, {
    method,
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': raw ? 'application/octet-stream' : 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : body instanceof Uint8Array ? new Uint8Array(body) : JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) }
}

/** `{status, code, reason}` of an answer, for one-line expectations. */
const outcome = (a: Answer): { status: number; code?: string; reason?: unknown } => ({ status: a.status, ...(a.body.error === undefined ? {} : { code: a.body.error.code, reason: a.body.error.details['reason'] }) })
const DISK_FULL = { status: 503, code: 'NotReady', reason: 'disk_full' }

/** A service's `/readyz`: `writeReady` and what is missing. */
async function readiness(service: string): Promise<{ writeReady: boolean; missing: string[] }> {
  const r = (await (await fetch(`${node.services[service]}/readyz`)).json()) as { writeReady: boolean; missing?: string[] }
  return { writeReady: r.writeReady, missing: r.missing ?? [] }
}

/** Bounded poll: resolves once `check` is true (at most attempts × 50 ms); false if it never is. */
async function eventually(check: () => Promise<boolean>, attempts = 400): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true
    await delay(50)
  }
  return false
}

/** Stores `bytes` on the node's storage; its address. */
async function store(bytes: string): Promise<string> {
  const r = await call('storage', 'PUT', '/o', admin, bytes)
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300)
  return r.body['address'] as string
}

/** A manifest (and its content) stored on the node. */
async function manifest(text: string): Promise<string> {
  return store(JSON.stringify({ content: await store(text), size: Buffer.byteLength(text), type: 'text/html' }))
}

/** A proposal proposed and approved through the CLI (the node's signer key), ready to commit. */
async function approvedProposal(note: string): Promise<string> {
  const set = join(root, `${note}.json`)
  await writeFile(set, JSON.stringify({ schemaVersion: 1, items: [], meta: { note } }))
  const cli = async (...args: string[]): Promise<string> => {
    const r = await runCli([...args, '--node', node.admin, '--data-dir', disk.dataDir])
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0)
    return r.stdout
  }
  const { proposalId } = JSON.parse(await cli('registry', 'propose', set, '--json')) as { proposalId: string }
  await cli('registry', 'approve', proposalId)
  return proposalId
}

async function webhook(id: string): Promise<Answer> {
  const secret = (JSON.parse(await readFile(join(disk.dataDir, 'interop', 'webhook-secrets.json'), 'utf8')) as { github: string }).github
  const w = signWebhook({ provider: 'github', secret, body: `{"delivery":"${id}"}`, nowMs: Date.now(), deliveryId: id })
  const res = await fetch(`${node.services['interop']}${w.path}`, { method: 'POST', headers: w.headers, body: new Uint8Array(w.body) })
  return { status: res.status, body: (await res.json()) as Answer['body'] }
}

/** Passport's public verdict on a token for an audience. */
async function verifies(token: string, aud: string): Promise<boolean> {
  const r = await call('passport', 'POST', '/v1/passport/verify', undefined, { token, aud })
  return r.body['valid'] === true
}

beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-disk-full-'))
  config = join(root, 'node.json')
  await writeFile(config, JSON.stringify({}))
  disk = await openDisk()
  await startNode()
}, 90_000)

afterEach(async () => {
  // The node is shared by the tests of this file: a fault must never end it.
  await disk.unfill()
  expect(proc.child.exitCode).toBeNull()
})

afterAll(async () => {
  await killAll()
  await disk?.close()
  await rm(root, { recursive: true, force: true })
})

/**
 * A token with a subtree large enough that its revocation needs fresh blocks of a full volume (a
 * short line that fits in the file's last page is genuinely written, even on a full volume).
 */
async function tokenWithSubtree(sub: string): Promise<{ token: string; children: string[] }> {
  const issued = await call('passport', 'POST', '/v1/passport/issue', admin, { sub, aud: ['storage'], scope: ['storage:write'], ttlSec: 600 })
  expect(issued.status).toBe(200)
  const token = issued.body['token'] as string
  const children: string[] = []
  for (let i = 0; i < 120; i++) {
    const c = await call('passport', 'POST', '/v1/passport/attenuate', undefined, { token, ttlSec: 300 })
    expect(c.status).toBe(200)
    children.push(c.body['token'] as string)
  }
  return { token, children }
}

describe('ron-node on a full disk (real process)', () => {
  it('PUT /names, registry commit, passport revoke and webhooks answer 503 disk_full; the node stays up, reads go on, writes come back', async () => {
    // Made while there is room: a bound name, a manifest to bind, a proposal to commit, a token to revoke.
    const before = await manifest('<h1>before</h1>')
    expect(outcome(await call('index', 'PUT', '/names/kept.site', admin, { manifestAddress: before }))).toEqual({ status: 200 })
    const during = await manifest('<h1>during</h1>')
    const proposal = await approvedProposal('on-a-full-disk')
    const victim = await tokenWithSubtree('victim')
    expect(outcome(await webhook('before-full'))).toEqual({ status: 202 })

    await disk.fill()
    const refused: Record<string, unknown> = {
      registry: outcome(await call('registry', 'POST', `/registry/commit/${proposal}`, admin)),
      passport: outcome(await call('passport', 'POST', '/v1/passport/revoke', admin, { token: victim.token })),
      interop: outcome(await webhook('while-full')),
      ...(disk.real ? { index: outcome(await call('index', 'PUT', '/names/new.site', admin, { manifestAddress: during })) } : {}),
    }
    // They used to answer 500 (registry, passport), and index then exited. On a real volume a
    // webhook's receipt meets storage first, which may find the volume under its free-space floor
    // (low_space) before it is full.
    const viaStorage = { status: 503, code: 'NotReady', reason: expect.stringMatching(/^(disk_full|low_space)$/) as unknown }
    expect(refused).toEqual({ registry: DISK_FULL, passport: DISK_FULL, ...(disk.real ? { index: DISK_FULL, interop: viaStorage } : { interop: DISK_FULL }) })
    // Writes turn unready; a second attempt is refused as well, without a 500 or an exit.
    const unready = ['registry', 'passport', ...(disk.real ? ['index', 'storage'] : ['interop'])]
    for (const s of unready) expect(await eventually(async () => !(await readiness(s)).writeReady), s).toBe(true)
    expect(outcome(await call('registry', 'POST', `/registry/commit/${proposal}`, admin)).status).toBe(503)
    expect(outcome(await call('passport', 'POST', '/v1/passport/revoke', admin, { token: victim.token })).status).toBe(503)
    expect(outcome(await webhook('while-full')).status).toBe(503)
    if (disk.real) expect(outcome(await call('index', 'PUT', '/names/new.site', admin, { manifestAddress: during })).status).toBe(503)
    // Reads go on.
    expect((await call('index', 'GET', '/resolve/kept.site', undefined)).body).toMatchObject({ manifestAddress: before })
    expect((await call('registry', 'GET', '/registry/head', undefined)).body).toMatchObject({ version: 0 })
    expect((await call('storage', 'GET', `/o/${before}`, undefined)).status).toBe(200)
    expect(proc.child.exitCode).toBeNull()

    await disk.unfill()
    for (const s of unready) expect(await eventually(async () => (await readiness(s)).writeReady), `${s} writes again`).toBe(true)
    expect(outcome(await call('registry', 'POST', `/registry/commit/${proposal}`, admin))).toEqual({ status: 201 })
    expect((await call('registry', 'GET', '/registry/head', undefined)).body).toMatchObject({ version: 1 })
    expect(outcome(await call('index', 'PUT', '/names/new.site', admin, { manifestAddress: during }))).toEqual({ status: 200 })
    expect(outcome(await webhook('while-full'))).toEqual({ status: 202 })
    expect(outcome(await call('passport', 'POST', '/v1/passport/revoke', admin, { token: victim.token }))).toEqual({ status: 202 })
    expect(await verifies(victim.token, 'storage')).toBe(false)
  }, 120_000)

  it('regression: a revocation refused on a full disk is refused every time and applied nowhere; once acknowledged it survives a restart', async () => {
    expect(await eventually(async () => (await readiness('storage')).writeReady)).toBe(true)
    const victim = await tokenWithSubtree('forgotten')
    const last = victim.children[victim.children.length - 1]!
    expect(outcome(await call('storage', 'PUT', '/o', last, 'written by a child'))).toEqual({ status: 201 })

    await disk.fill()
    for (let attempt = 0; attempt < 2; attempt++) {
      // It used to be applied in memory, answer 500, and the retry 202 — with nothing on disk.
      expect(outcome(await call('passport', 'POST', '/v1/passport/revoke', admin, { token: victim.token })), `attempt ${attempt}`).toEqual(DISK_FULL)
      // Nothing was applied: passport says the token and its subtree are valid, its feed is silent.
      expect(await verifies(victim.token, 'storage')).toBe(true)
      expect(await verifies(last, 'storage')).toBe(true)
    }
    const feed = (await call('passport', 'GET', '/v1/passport/revocations?since=0', undefined)).body['items'] as Array<{ jti: string }>
    const jtiOf = (t: string): string => (JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string }).jti
    expect(feed.map((r) => r.jti)).not.toContain(jtiOf(victim.token))

    await disk.unfill()
    expect(await eventually(async () => (await readiness('passport')).writeReady)).toBe(true)
    const acked = await call('passport', 'POST', '/v1/passport/revoke', admin, { token: victim.token })
    expect(acked.status).toBe(202)
    expect(acked.body['revoked']).toHaveLength(121)

    // Restarted on the same data directory, the revocation holds: passport and storage refuse the
    // token and its children.
    await stopNode()
    await startNode()
    expect(await verifies(victim.token, 'storage')).toBe(false)
    expect(await verifies(last, 'storage')).toBe(false)
    for (const t of [victim.token, last]) {
      const r = await call('storage', 'PUT', '/o', t, 'after the restart')
      expect(r.status).toBe(401)
    }
  }, 120_000)
})
