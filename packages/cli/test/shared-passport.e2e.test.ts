/**
 * Three real `ron-node` processes on loopback sharing one passport and one registry (SPEC.md §5,
 * §6b): node A runs everything; B and C `join` A (their node keys enrolled with A's passport, their
 * config written) and then start with no flags beyond the data dir and free ports. A token A's
 * passport issued works on B; once revoked on A, B and C refuse it within the revocation staleness
 * bound; B's replica traffic (service tokens from A's passport by client assertion) still works.
 */

import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadNodeConfig, remoteServices } from '../src/config.js'
import { CliError } from '../src/exit-codes.js'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-shared-passport-'))
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

/** Bounded poll: resolves with the first value `check` returns that is not undefined (at most attempts × 50 ms). */
async function eventually<T>(check: () => Promise<T | undefined>, attempts = 300): Promise<T | undefined> {
  for (let i = 0; i < attempts; i++) {
    const v = await check()
    if (v !== undefined) return v
    await new Promise((r) => setTimeout(r, 50))
  }
  return undefined
}

async function putRaw(storage: string, token: string, body: Buffer): Promise<{ status: number; text: string }> {
  const res = await fetch(`${storage}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' }, body: new Uint8Array(body) })
  return { status: res.status, text: await res.text() }
}

describe('nodes joined to another node’s passport and registry', () => {
  it('join, verify with the shared passport, refuse a revoked token everywhere, keep replicating', async () => {
    const start = (dir: string): ReturnType<typeof spawnCli> => spawnCli(['start', '--data-dir', dir, '--port-base', '0', '--json', '--log-level', 'warn', '--drain-deadline', '500ms'])
    const a = start(join(root, 'a'))
    const sa = await firstJsonLine<Summary>(a)
    const adminA = (await readFile(sa.tokenFile, 'utf8')).trim()

    // B and C join A: enrolled with A's passport, config written in their data dirs.
    const joined = await Promise.all(
      ['b', 'c'].map(async (n) => {
        const r = await runCli(['join', sa.admin, '--token', adminA, '--data-dir', join(root, n), '--json'])
        expect(r.code, r.stderr).toBe(0)
        return JSON.parse(r.stdout) as { nodeId: string; passport: string; registry: string; peer: string; configFile: string }
      }),
    )
    for (const j of joined) {
      expect(j).toMatchObject({ passport: sa.services['passport'], registry: sa.services['registry'], peer: sa.admin })
      expect(JSON.parse(await readFile(j.configFile, 'utf8'))).toMatchObject({ passport: { url: sa.services['passport'] }, registry: { url: sa.services['registry'] }, peers: [sa.admin] })
    }

    const [b, c] = [start(join(root, 'b')), start(join(root, 'c'))]
    const [sb, sc] = await Promise.all([firstJsonLine<Summary>(b), firstJsonLine<Summary>(c)])
    // They host neither passport nor registry; /status lists A's as remote.
    expect(Object.keys(sb.services).sort()).toEqual(['index', 'interop', 'storage'])
    const status = (await (await fetch(`${sb.admin}/status`)).json()) as { services: Record<string, { url: string; remote?: boolean }> }
    expect(status.services['registry']).toMatchObject({ url: sa.services['registry'], remote: true })
    expect(status.services['passport']).toMatchObject({ url: sa.services['passport'], remote: true })

    // A token issued by A's passport works for a put on B.
    const issue = await runCli(['token', 'issue', '--sub', 'ci', '--aud', 'storage', '--scope', 'storage:write', '--ttl', '1h', '--node', sa.admin, '--token', adminA, '--json'])
    expect(issue.code, issue.stderr).toBe(0)
    const token = (JSON.parse(issue.stdout) as { token: string }).token
    const file = join(root, 'one.bin')
    await writeFile(file, randomBytes(4096))
    const put = await runCli(['put', file, '--node', sb.admin, '--token', token, '--json'])
    expect(put.code, put.stderr).toBe(0)
    const address = (JSON.parse(put.stdout) as { address: string }).address

    // B's replica traffic (rf 2 with its peer A) reaches A, signed by A's passport for node B.
    const replicated = await eventually(async () => ((await fetch(`${sa.services['storage']}/o/${address}`, { method: 'HEAD' })).status === 200 ? true : undefined))
    expect(replicated).toBe(true)

    // Revoked on A: B and C refuse it (401, reason revoked) within the staleness bound.
    const revoke = await runCli(['token', 'revoke', token, '--node', sa.admin, '--token', adminA, '--json'])
    expect(revoke.code, revoke.stderr).toBe(0)
    for (const s of [sb, sc]) {
      const refused = await eventually(async () => {
        const r = await putRaw(s.services['storage']!, token, randomBytes(64))
        return r.status === 401 && r.text.includes('revoked') ? r : undefined
      }, 200)
      expect(refused, `${s.nodeId} still accepts the revoked token`).toBeDefined()
    }

    // A fresh token still works on B and its replica still reaches A.
    const again = await runCli(['token', 'issue', '--sub', 'ci2', '--aud', 'storage', '--scope', 'storage:write', '--ttl', '1h', '--node', sa.admin, '--token', adminA, '--json'])
    const token2 = (JSON.parse(again.stdout) as { token: string }).token
    const body = randomBytes(2048)
    const r2 = await putRaw(sb.services['storage']!, token2, body)
    expect(r2.status, r2.text).toBeLessThan(300)
    const addr2 = (JSON.parse(r2.text) as { address: string }).address
    expect(await eventually(async () => ((await fetch(`${sa.services['storage']}/o/${addr2}`, { method: 'HEAD' })).status === 200 ? true : undefined))).toBe(true)

    for (const p of [a, b, c]) p.child.kill('SIGTERM')
    const exits = await Promise.all([a, b, c].map((p) => p.exited))
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0])
  }, 60_000)
})

describe('passport.url / registry.url configuration', () => {
  it('reads them from RON_PASSPORT_URL / RON_REGISTRY_URL, flags, or passport.url / registry.url in a file, and keeps them out of the service sections', async () => {
    const fromEnv = loadNodeConfig({ env: { RON_PASSPORT_URL: 'http://10.0.0.1:7703/', RON_REGISTRY_URL: 'http://10.0.0.1:7702' }, flags: { dataDir: join(root, 'none') } })
    expect(remoteServices(fromEnv)).toEqual({ passportUrl: 'http://10.0.0.1:7703', registryUrl: 'http://10.0.0.1:7702' })
    const dir = join(root, 'cfg')
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'config.json'), JSON.stringify({ passport: { url: 'http://10.0.0.1:7703', policy: {} }, registry: { url: 'http://10.0.0.1:7702' } }))
    // <data-dir>/config.json is read when no --config is given; a flag wins over it.
    const fromFile = loadNodeConfig({ env: {}, flags: { dataDir: dir } })
    expect(remoteServices(fromFile)).toEqual({ passportUrl: 'http://10.0.0.1:7703', registryUrl: 'http://10.0.0.1:7702', passport: { policy: {} }, registry: {} })
    expect(remoteServices(loadNodeConfig({ env: {}, flags: { dataDir: dir, passportUrl: 'http://10.0.0.9:7703' } })).passportUrl).toBe('http://10.0.0.9:7703')
  })

  it('refuses a passport URL that is not http(s) with exit 2 naming the key', () => {
    expect(() => loadNodeConfig({ env: { RON_PASSPORT_URL: 'ftp://x' }, flags: { dataDir: join(root, 'none') } })).toThrow(/passportUrl/)
    const bad = loadNodeConfig({ env: {}, flags: { dataDir: join(root, 'none'), passport: { url: 'nope' } } })
    expect(() => remoteServices(bad)).toThrow(CliError)
    expect(() => remoteServices(bad)).toThrow(/passport\.url/)
  })

  it('join without a token exits 4 and says where to find one; start refuses --passport-url with --amnesia (exit 2)', async () => {
    const r = await runCli(['join', 'http://127.0.0.1:1', '--data-dir', join(root, 'nojoin')])
    expect(r.code).toBe(4)
    expect(r.stderr).toMatch(/admin token/)
    const s = await runCli(['start', '--amnesia', '--port-base', '0', '--passport-url', 'http://127.0.0.1:1'])
    expect(s.code).toBe(2)
    expect(s.stderr).toMatch(/passport\.url needs a data directory/)
  })
})
