/**
 * Issue 23 item 6: a CLI that knows which node it talks to. Real `ron-node` processes (the built
 * bin): two nodes on free ports with their own data dirs and a private runtime directory.
 */

import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { importIssuerKey, signToken } from '@ron/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

let root: string
let env: Record<string, string>
const nodes: { proc: Proc; summary: Summary }[] = []

async function startNode(dataDir: string): Promise<{ proc: Proc; summary: Summary }> {
  const proc = spawnCli(['start', '--port-base', '0', '--json', '--data-dir', dataDir, '--log-level', 'warn'], env)
  const summary = await firstJsonLine<Summary>(proc, 60_000)
  return { proc, summary }
}

async function stop(proc: Proc): Promise<number | null> {
  proc.child.kill('SIGTERM')
  return (await proc.exited).code
}

beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-which-node-'))
  env = { RON_RUNTIME_DIR: join(root, 'run') }
  nodes.push(await startNode(join(root, 'a')), await startNode(join(root, 'b')))
}, 120_000)

afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

describe('--node and --data-dir (real binary)', { timeout: 120_000 }, () => {
  it('--node alone finds that node’s admin token through a private record, and no token is written into it', async () => {
    const [a, b] = nodes
    const file = join(root, 'x.txt')
    await writeFile(file, 'which node')
    for (const n of [a!, b!]) {
      const put = await runCli(['put', file, '--node', n.summary.admin], env)
      expect(put.stderr).toBe('')
      expect(put.code).toBe(0)
      expect(put.stdout.trim()).toMatch(/^b3:[0-9a-f]{64}$/)
      // A service URL names the node too.
      const ls = await runCli(['ls', '--node', n.summary.services['storage']!, '--json'], env)
      expect(ls.code, ls.stderr).toBe(0)
    }
    // The records: user-private (0700 dir, 0600 files), naming the data dir, never holding the token.
    const runDir = join(root, 'run', 'nodes')
    expect((await stat(join(root, 'run'))).mode & 0o077).toBe(0)
    expect((await stat(runDir)).mode & 0o077).toBe(0)
    const key = (s: Summary): string => `127.0.0.1_${new URL(s.admin).port}.json`
    const recordText = await readFile(join(runDir, key(a!.summary)), 'utf8')
    expect((await stat(join(runDir, key(a!.summary)))).mode & 0o777).toBe(0o600)
    expect(JSON.parse(recordText)).toMatchObject({ admin: a!.summary.admin, dataDir: a!.summary.dataDir, nodeId: a!.summary.nodeId })
    const tokenA = (await readFile(a!.summary.tokenFile, 'utf8')).trim()
    expect(recordText).not.toContain(tokenA)
    expect((await stat(join(a!.summary.dataDir, 'run.json'))).mode & 0o777).toBe(0o600)
    // Without the runtime directory (another user's view), --node alone has no token: it says so.
    const none = await runCli(['put', file, '--node', a!.summary.admin], { RON_RUNTIME_DIR: join(root, 'elsewhere') })
    expect(none.code).toBe(4)
    expect(none.stderr).toContain(`no token for ${a!.summary.admin}: no node of this user is recorded at ${a!.summary.admin}`)
  })

  it('a record tying another URL to a node’s data dir is not trusted: that node’s token never reaches the URL', async () => {
    const [, b] = nodes
    const { createServer } = await import('node:http')
    const seen: string[] = []
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '')
      res.setHeader('content-type', 'application/json')
      const self = `http://127.0.0.1:${(server.address() as { port: number }).port}`
      res.end(JSON.stringify({ version: '0', nodeId: b!.summary.nodeId, ready: true, services: { storage: { url: self } } }))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
      const bRecord = JSON.parse(await readFile(join(b!.summary.dataDir, 'run.json'), 'utf8')) as Record<string, unknown>
      const forged = join(root, 'run', 'nodes', 'forged.json')
      await writeFile(forged, JSON.stringify({ ...bRecord, admin: url, services: { storage: url } }), { mode: 0o600 })
      try {
        const r = await runCli(['ls', '--node', url], env)
        expect(r.code).toBe(4)
        expect(r.stderr).toContain(`no token for ${url}`)
        expect(seen.filter((h) => h !== '')).toEqual([])
      } finally {
        await rm(forged, { force: true })
      }
    } finally {
      await new Promise<void>((r) => server.close(() => r()))
    }
  })

  it('--data-dir alone talks to the node on that data dir; a --node that is another node is an error saying so', async () => {
    const [a, b] = nodes
    const stA = await runCli(['status', '--data-dir', a!.summary.dataDir, '--json'], env)
    expect(stA.code, stA.stderr).toBe(0)
    expect(JSON.parse(stA.stdout).nodeId).toBe(a!.summary.nodeId)
    const stB = await runCli(['status', '--data-dir', b!.summary.dataDir, '--json'], env)
    expect(JSON.parse(stB.stdout).nodeId).toBe(b!.summary.nodeId)
    const mismatch = await runCli(['ls', '--node', a!.summary.admin, '--data-dir', b!.summary.dataDir], env)
    expect(mismatch.code).toBe(2)
    expect(mismatch.stderr).toContain(`--node ${a!.summary.admin} is not the node running on --data-dir ${b!.summary.dataDir} (that one is ${b!.summary.nodeId} at ${b!.summary.admin})`)
    // Agreeing flags (admin or a service URL of the same node) are fine.
    const agree = await runCli(['ls', '--node', b!.summary.services['storage']!, '--data-dir', b!.summary.dataDir, '--json'], env)
    expect(agree.code, agree.stderr).toBe(0)
  })

  it('a 401 names the node and where the token came from (flag, env, file, discovered)', async () => {
    const [a, b] = nodes
    const tokenB = (await readFile(b!.summary.tokenFile, 'utf8')).trim()
    const viaFlag = await runCli(['ls', '--node', a!.summary.admin, '--token', tokenB], env)
    expect(viaFlag.code).toBe(4)
    expect(viaFlag.stderr).toContain(`(node ${a!.summary.admin}, token from --token)`)
    const viaEnv = await runCli(['ls', '--node', a!.summary.admin], { ...env, RON_TOKEN: tokenB })
    expect(viaEnv.code).toBe(4)
    expect(viaEnv.stderr).toContain(`(node ${a!.summary.admin}, token from RON_TOKEN)`)
    // A data dir holding another node's token (a copied data dir, say): the file is named.
    const other = join(root, 'other')
    await mkdir(other, { recursive: true, mode: 0o700 })
    await writeFile(join(other, 'admin.token'), tokenB, { mode: 0o600 })
    const viaFile = await runCli(['ls', '--node', a!.summary.admin, '--data-dir', other], env)
    expect(viaFile.code).toBe(4)
    expect(viaFile.stderr).toContain(`(node ${a!.summary.admin}, token from ${join(other, 'admin.token')})`)
    // Discovered: which file was found for which node, and the token itself is never printed.
    const tokenA = (await readFile(a!.summary.tokenFile, 'utf8')).trim()
    await writeFile(b!.summary.tokenFile, tokenA, { mode: 0o600 })
    try {
      const found = await runCli(['ls', '--node', b!.summary.admin], env)
      expect(found.code).toBe(4)
      expect(found.stderr).toContain(`(node ${b!.summary.admin}, token from ${b!.summary.tokenFile} (discovered: the node at ${b!.summary.admin} runs on ${b!.summary.dataDir}))`)
      expect(found.stderr).not.toContain(tokenA)
    } finally {
      await writeFile(b!.summary.tokenFile, tokenB, { mode: 0o600 })
    }
  })

  it('an expired token gets one answer: the node, token verify and the CLI’s own check all say "expired at … (clock tolerance 30 s)"', async () => {
    const [a] = nodes
    const key = importIssuerKey(await readFile(join(a!.summary.dataDir, 'keys', 'issuer.json'), 'utf8'))
    const admin = JSON.parse(Buffer.from((await readFile(a!.summary.tokenFile, 'utf8')).trim().split('.')[1]!, 'base64url').toString('utf8')) as { iss: string; aud: string[]; scope: string }
    const exp = Math.floor(Date.now() / 1000) - 120
    const expired = signToken(key, { iss: admin.iss, sub: 'ci', aud: admin.aud, scope: admin.scope, exp, iat: exp - 600 })
    const words = `token expired at ${new Date(exp * 1000).toISOString()} (clock tolerance 30 s)`
    // The server (a read the CLI does not pre-check).
    const server = await runCli(['ls', '--node', a!.summary.admin, '--token', expired], env)
    expect(server.code).toBe(4)
    expect(server.stderr).toContain(words)
    const verify = await runCli(['token', 'verify', expired, '--node', a!.summary.admin], env)
    expect(verify.code).toBe(4)
    expect(verify.stdout).toContain(`valid      no (expired: ${words})`)
    expect(verify.stderr).toContain(words)
    // The CLI's own check before an upload.
    const file = join(root, 'y.txt')
    await writeFile(file, 'expired')
    const put = await runCli(['put', file, '--node', a!.summary.admin, '--token', expired], env)
    expect(put.code).toBe(4)
    expect(put.stderr).toContain(words)
    // Within the tolerance the node still accepts it, and so does the CLI's check.
    const recent = Math.floor(Date.now() / 1000) - 5
    const fresh = signToken(key, { iss: admin.iss, sub: 'ci', aud: admin.aud, scope: admin.scope, exp: recent, iat: recent - 600 })
    const within = await runCli(['put', file, '--node', a!.summary.admin, '--token', fresh], env)
    expect(within.code, within.stderr).toBe(0)
  })

  it('token revoke and keys rotate print text, JSON with --json', async () => {
    const [a] = nodes
    const issued = await runCli(['token', 'issue', '--sub', 'ci', '--aud', 'storage', '--scope', 'storage:read', '--ttl', '10m', '--node', a!.summary.admin], env)
    expect(issued.code, issued.stderr).toBe(0)
    const revoke = await runCli(['token', 'revoke', issued.stdout.trim(), '--node', a!.summary.admin], env)
    expect(revoke.code, revoke.stderr).toBe(0)
    expect(revoke.stdout).toMatch(/^revoked +1 token \(the token and everything attenuated from it\)\njti +\S+\nfeed seq +\d+/)
    expect(revoke.stdout).not.toContain('{')
    const issued2 = await runCli(['token', 'issue', '--sub', 'ci', '--aud', 'storage', '--scope', 'storage:read', '--ttl', '10m', '--node', a!.summary.admin], env)
    const revokeJson = await runCli(['token', 'revoke', issued2.stdout.trim(), '--node', a!.summary.admin, '--json'], env)
    expect(JSON.parse(revokeJson.stdout)).toMatchObject({ revoked: [expect.any(String)], seq: expect.any(Number) })
    const rotate = await runCli(['keys', 'rotate', '--node', a!.summary.admin], env)
    expect(rotate.code, rotate.stderr).toBe(0)
    expect(rotate.stdout).toMatch(/^current +\S+ \(epoch \d+\): signs new tokens\nnext +\S+ \(epoch \d+\): published/)
    expect(rotate.stdout).toMatch(/\nprevious +\S+ \(epoch \d+\): verify-only, retires \d{4}-/)
    const rotateJson = await runCli(['keys', 'rotate', '--node', a!.summary.admin, '--json'], env)
    expect(JSON.parse(rotateJson.stdout)).toMatchObject({ current: { kid: expect.any(String) }, next: { kid: expect.any(String) } })
  })

  it('a stopped node: put says it is not running (not "no token"), doctor says "not running" once', async () => {
    const c = await startNode(join(root, 'c'))
    expect(await stop(c.proc)).toBe(0)
    const file = join(root, 'z.txt')
    await writeFile(file, 'stopped')
    for (const args of [['--node', c.summary.admin], ['--data-dir', c.summary.dataDir]]) {
      const put = await runCli(['put', file, ...args], env)
      expect(put.code).toBe(6)
      expect(put.stderr).not.toContain('no token')
      expect(put.stderr).toMatch(/^ron-node: the node (at|on data dir) \S+ is not running/)
    }
    // The records went with the node.
    await expect(stat(join(c.summary.dataDir, 'run.json'))).rejects.toMatchObject({ code: 'ENOENT' })
    for (const args of [['--node', c.summary.admin, '--data-dir', c.summary.dataDir], ['--data-dir', c.summary.dataDir]]) {
      const doctor = await runCli(['doctor', ...args], env)
      expect(doctor.code).toBe(1)
      expect(doctor.stdout.match(/not running/g)).toHaveLength(1)
      expect(doctor.stdout).not.toMatch(/FAIL +port/)
      expect(doctor.stderr).toContain('doctor found 1 problem(s)')
    }
  })
})

describe('--ca and --insecure against a node with its own certificate (real binary)', { timeout: 120_000 }, () => {
  it('--ca trusts it for every call (status via fetch, put/get via the transport); --insecure works with a warning; neither: refused', async () => {
    const { execFileSync } = await import('node:child_process')
    const dir = join(root, 'tls')
    await mkdir(dir, { recursive: true })
    const cert = join(dir, 'cert.pem')
    const key = join(dir, 'key.pem')
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ed25519', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' })
    const proc = spawnCli(['start', '--port-base', '0', '--json', '--data-dir', join(dir, 'node'), '--log-level', 'warn', '--tls-cert', cert, '--tls-key', key], env)
    const summary = await firstJsonLine<Summary>(proc, 60_000)
    expect(summary.admin).toMatch(/^https:/)
    const file = join(dir, 'hello.txt')
    await writeFile(file, 'hello over tls')

    const refused = await runCli(['put', file, '--node', summary.admin], env)
    expect(refused.code).toBe(6)
    expect(refused.stderr).toMatch(/SELF_SIGNED|self-signed|unable to verify|DEPTH_ZERO/i)

    const status = await runCli(['status', '--node', summary.admin, '--ca', cert, '--json'], env)
    expect(status.code, status.stderr).toBe(0)
    expect(JSON.parse(status.stdout).nodeId).toBe(summary.nodeId)
    const put = await runCli(['put', file, '--node', summary.admin, '--ca', cert], env)
    expect(put.stderr).toBe('')
    expect(put.code).toBe(0)
    const address = put.stdout.trim()
    const get = await runCli(['get', address, '--node', summary.admin, '--ca', cert], env)
    expect(get.code, get.stderr).toBe(0)
    expect(get.stdout).toBe('hello over tls')

    const insecure = await runCli(['put', file, '--node', summary.admin, '--insecure'], env)
    expect(insecure.code, insecure.stderr).toBe(0)
    expect(insecure.stdout.trim()).toBe(address)
    expect(insecure.stderr).toContain("warning: --insecure: the node's TLS certificate is not checked")

    const notPem = await runCli(['status', '--node', summary.admin, '--ca', file], env)
    expect(notPem.code).toBe(2)
    expect(notPem.stderr).toContain(`--ca ${file} holds no PEM certificate`)
    expect(await stop(proc)).toBe(0)
  })
})
