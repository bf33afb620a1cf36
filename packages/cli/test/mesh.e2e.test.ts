/**
 * The whole mesh through the real binary (issue 15): every service of a node, and every client
 * command against it; restart keeps data, names, keys and the registry log; amnesia writes nothing.
 */

import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile?: string
  token?: string
  dataDir?: string
}

const ALL = ['storage', 'registry', 'passport', 'index', 'interop']

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-mesh-'))
})
afterEach(killAll)
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

async function start(args: string[], env: Record<string, string> = {}): Promise<{ proc: Proc; summary: Summary }> {
  const proc = spawnCli(['start', '--port-base', '0', '--json', '--log-level', 'warn', '--drain-deadline', '500ms', ...args], env)
  return { proc, summary: await firstJsonLine<Summary>(proc, 60_000) }
}

async function stop(proc: Proc): Promise<number | null> {
  proc.child.kill('SIGTERM')
  return (await proc.exited).code
}

describe('ron-node start with every service (real binary)', () => {
  it('runs all five services, and every client command works against them; a restart keeps everything', async () => {
    const dataDir = join(root, 'mesh')
    let { proc, summary } = await start(['--data-dir', dataDir])
    expect(Object.keys(summary.services)).toEqual(ALL)
    const ready = await fetch(`${summary.admin}/readyz`)
    expect(ready.status).toBe(200)
    const status = (await (await fetch(`${summary.admin}/status`)).json()) as { services: Record<string, { ready: boolean }> }
    expect(Object.keys(status.services)).toEqual(ALL)
    expect(Object.values(status.services).every((s) => s.ready)).toBe(true)
    const metrics = await (await fetch(`${summary.admin}/metrics`)).text()
    for (const s of [...ALL, 'node']) expect(metrics).toContain(`service="${s}"`)

    const cli = async (...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => runCli([...args, '--node', summary.admin, '--data-dir', dataDir])
    const ok = async (...args: string[]): Promise<string> => {
      const r = await cli(...args)
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0)
      return r.stdout.trim()
    }

    // Objects and names.
    const file = join(root, 'page.html')
    await writeFile(file, `<h1>${randomBytes(8).toString('hex')}</h1>`)
    const addr = await ok('put', file)
    expect(JSON.parse(await ok('stat', addr, '--json'))).toMatchObject({ address: addr, pinned: false })
    await ok('pin', addr)
    expect(JSON.parse(await ok('stat', addr, '--json'))).toMatchObject({ pinned: true })
    await ok('unpin', addr)
    expect((JSON.parse(await ok('ls', '--json')) as { objects: { address: string }[] }).objects.map((o) => o.address)).toContain(addr)
    const named = JSON.parse(await ok('name', 'set', 'docs.alice', addr, '--type', 'text/html', '--json')) as { manifestAddress: string }
    const resolved = JSON.parse(await ok('resolve', 'docs.alice', '--json')) as { manifestAddress: string; manifest: { content: string; type: string }; providers: { endpoint: string }[] }
    expect(resolved).toMatchObject({ manifestAddress: named.manifestAddress, manifest: { content: addr, type: 'text/html' } })
    expect(resolved.providers.map((p) => p.endpoint)).toContain(summary.services['storage'])

    // Capabilities.
    const token = await ok('token', 'issue', '--sub', 'ci', '--aud', 'storage', '--scope', 'storage:write', '--ttl', '1h')
    expect(JSON.parse(await ok('token', 'verify', token, '--aud', 'storage', '--json'))).toMatchObject({ valid: true, claims: { sub: 'ci' } })
    const child = await ok('token', 'attenuate', token, '--ttl', '10m', '--max-bytes', '100')
    await ok('token', 'revoke', token)
    const revoked = await cli('token', 'verify', child, '--aud', 'storage')
    expect(revoked.code).toBe(4)
    expect(revoked.stdout).toMatch(/revoked/)
    // A revoked token is refused by storage too (every service follows passport's revocations).
    const put = await fetch(`${summary.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: 'x' })
    expect(put.status).toBe(401)
    await put.body?.cancel()

    // Registry: propose → approve (the node's signer) → commit.
    const proposal = join(root, 'set.json')
    await writeFile(proposal, JSON.stringify({ schemaVersion: 1, items: [] }))
    const { proposalId } = JSON.parse(await ok('registry', 'propose', proposal, '--json')) as { proposalId: string }
    await ok('registry', 'approve', proposalId)
    expect(JSON.parse(await ok('registry', 'commit', proposalId, '--json'))).toMatchObject({ version: 1 })
    expect(JSON.parse(await ok('registry', 'head', '--json'))).toMatchObject({ version: 1 })
    expect(JSON.parse(await ok('registry', 'watch', '--from', '0', '--count', '1', '--json'))).toMatchObject({ version: 1 })

    // Webhooks, status, doctor, completion.
    const { receipt } = JSON.parse(await ok('webhook', 'test', 'github', '--json')) as { receipt: string }
    expect(receipt).toMatch(/^b3:/)
    // The receipt re-verifies from storage with the node's secret, and not with another one.
    expect(JSON.parse(await ok('receipt', 'verify', receipt, '--json'))).toMatchObject({ ok: true, provider: 'github', receipt: { provider: 'github' } })
    const forged = await cli('receipt', 'verify', receipt, '--secret', 'not-the-secret')
    expect(forged.code).toBe(5)
    expect(forged.stdout).toMatch(/NOT verified/)
    expect(Object.keys((JSON.parse(await ok('status', '--json')) as { services: object }).services)).toEqual(ALL)
    expect(await ok('status')).toMatch(/passport\s+ready/)
    const findings = JSON.parse(await ok('doctor', '--json')) as { status: string }[]
    expect(findings.every((f) => f.status !== 'fail')).toBe(true)
    expect((await runCli(['completion'])).stdout).toContain('ron-node')

    // Restart: data, names, keys and the registry log are kept.
    expect(await stop(proc)).toBe(0)
    expect(JSON.parse(await ok('registry', 'fsck', '--json'))).toMatchObject({ ok: true, head: 1 })
    ;({ proc, summary } = await start(['--data-dir', dataDir]))
    expect(JSON.parse(await ok('resolve', 'docs.alice', '--json'))).toMatchObject({ manifestAddress: named.manifestAddress })
    expect(JSON.parse(await ok('registry', 'head', '--json'))).toMatchObject({ version: 1 })
    expect((await cli('get', addr)).stdout).toBe(await readFile(file, 'utf8'))
    expect((await cli('token', 'verify', child)).code).toBe(4)
    expect(await stop(proc)).toBe(0)
  }, 240_000)

  it('--amnesia writes nothing to disk: no data directory, home or working directory files; the token is printed', async () => {
    const home = join(root, 'amnesia-home')
    const cwd = join(root, 'amnesia-cwd')
    await mkdir(home)
    await mkdir(cwd)
    const env = { HOME: home, XDG_DATA_HOME: join(home, '.local', 'share'), RON_DATA_DIR: join(home, 'ron') }
    const proc = spawnCli(['start', '--amnesia', '--port-base', '0', '--json', '--log-level', 'warn'], env, 'ignore', cwd)
    const summary = await firstJsonLine<Summary>(proc, 60_000)
    expect(summary.tokenFile).toBeUndefined()
    expect(summary.dataDir).toBeUndefined()
    expect(summary.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(Object.keys(summary.services)).toEqual(ALL)
    const common = ['--node', summary.admin, '--token', summary.token!]
    const file = join(root, 'amnesia.bin')
    await writeFile(file, randomBytes(50_000))
    const put = await runCli(['put', file, ...common], env)
    expect(put.code, put.stderr).toBe(0)
    const addr = put.stdout.trim()
    expect((await runCli(['name', 'set', 'ram.only', addr, ...common], env)).code).toBe(0)
    expect(JSON.parse((await runCli(['resolve', 'ram.only', '--json', ...common], env)).stdout)).toMatchObject({ manifest: { content: addr } })
    expect(await stop(proc)).toBe(0)
    expect(await readdir(home)).toEqual([])
    expect(await readdir(cwd)).toEqual([])
  }, 60_000)
})
