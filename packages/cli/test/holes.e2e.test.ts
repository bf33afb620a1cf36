/**
 * Small holes of the CLI (issue 20 item 8), each attacked against the real `ron-node` binary:
 * the amnesia admin token in logs, an empty `--token` falling back to the admin token, a data
 * directory that cannot be created or written, a DNS-rebinding page reading the admin listener,
 * and an unmet write quorum answered as a client error.
 */

import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { addressOf } from '@ron/core'
import { mountTmpfs } from '@ron/core/testing'
import { errnoText } from '../src/data-dir.js'
import { assertBuilt, firstJsonLine, freeBases, killAll, killAllBut, runCli, spawnCli, type Proc } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile?: string
  token?: string
  dataDir?: string
}

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-holes-'))
})
// Each test's own nodes stop with it; the shared node (below) runs to the end of the file.
afterEach(() => killAllBut(shared.proc === undefined ? [] : [shared.proc]))
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

async function start(args: string[], logLevel = 'warn'): Promise<{ proc: Proc; summary: Summary }> {
  const proc = spawnCli(['start', ...(args.includes('--port-base') ? [] : ['--port-base', '0']), '--json', '--log-level', logLevel, '--drain-deadline', '500ms', ...args])
  return { proc, summary: await firstJsonLine<Summary>(proc, 60_000) }
}

/**
 * One node with a data directory for the tests that only read its listeners or store an object
 * of their own (the empty token, the admin listener's host check): started once, outside the
 * tests' time budget, so a slow start on a loaded runner cannot eat a test's timeout.
 */
const shared: { dataDir: string; summary: Summary; proc?: Proc } = { dataDir: '', summary: { nodeId: '', admin: '', services: {} } }
async function startShared(): Promise<void> {
  if (shared.proc !== undefined) return
  const dataDir = join(root, 'shared')
  const { proc, summary } = await start(['--data-dir', dataDir])
  Object.assign(shared, { dataDir, summary, proc })
}

/** A raw GET/POST with a chosen Host header (fetch does not let a page, or a test, set it). */
function withHost(url: string, host: string, method = 'GET', headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { host, ...headers }, timeout: 5000 }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (s: string) => (body += s))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('--amnesia', () => {
  it('writes the admin token only in stdout’s ready line, never on stderr, even at log level trace', async () => {
    const { proc, summary } = await start(['--amnesia'], 'trace')
    expect(summary.token).toMatch(/^ey/)
    // The token works (it is the real one) ...
    const res = await fetch(`${summary.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${summary.token!}` }, body: 'x' })
    expect(res.status).toBeLessThan(300)
    await res.body?.cancel()
    proc.child.kill('SIGTERM')
    expect((await proc.exited).code).toBe(0)
    // ... and the logs (which did record the ready line) never saw it, nor any part of it.
    expect(proc.stderr()).toMatch(/"msg":"ready"/)
    expect(proc.stderr()).not.toContain(summary.token!)
    expect(proc.stderr()).not.toContain(summary.token!.split('.')[2]!)
    expect(proc.stdout().split(summary.token!).length - 1).toBe(1)
  }, 60_000)
})

describe('an empty token', () => {
  beforeAll(startShared, 90_000)

  it('is an error (exit 2), never a silent fall back to the admin token: nothing is stored', async () => {
    const { dataDir, summary } = shared
    const file = join(root, 'empty-token.bin')
    const bytes = randomBytes(512)
    await writeFile(file, bytes)
    const address = addressOf(bytes)
    // The admin token file is right there: before, an empty --token used it.
    for (const [args, env] of [
      [['--token', ''], {}],
      [['--token', '  '], {}],
      [[], { RON_TOKEN: '' }],
    ] as const) {
      const r = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir, ...args], { ...env })
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr).toMatch(/(--token|RON_TOKEN) is (set but )?empty/)
    }
    expect((await fetch(`${summary.services['storage']}/o/${address}`, { method: 'HEAD' })).status).toBe(404)
    // Without --token and RON_TOKEN the admin token file is used, as documented.
    const ok = await runCli(['put', file, '--node', summary.admin, '--data-dir', dataDir])
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout.trim()).toBe(address)
  }, 120_000)
})

describe('a data directory that cannot be created or written', () => {
  it('under /proc: one line naming the directory and why, a non-zero exit, no spinning', async () => {
    const t0 = Date.now()
    const r = await runCli(['start', '--data-dir', '/proc/ron', '--port-base', '0'])
    expect(r.code).toBe(1)
    const lines = r.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^ron-node: cannot create data directory \/proc\/ron: \/proc does not allow creating directories in it/)
    // It used to retry mkdir forever at 100% CPU; now it fails at once (generous bound for a loaded CI).
    expect(Date.now() - t0).toBeLessThan(20_000)
  }, 30_000)

  it('on a read-only file system: says "read-only file system" (not "no such file or directory"), for a new and an existing directory', async () => {
    const fs = await mountTmpfs(256 * 1024)
    if (fs === undefined) {
      // Cannot mount here (not root on Linux): the classification is what the message relies on.
      expect(errnoText(Object.assign(new Error('x'), { code: 'EROFS' }))).toBe('read-only file system')
      return
    }
    try {
      await mkdir(join(fs.path, 'existing'), { mode: 0o700 })
      await fs.setReadOnly(true)
      const fresh = await runCli(['start', '--data-dir', join(fs.path, 'ron', 'deeper'), '--port-base', '0'])
      expect(fresh.code).toBe(1)
      expect(fresh.stderr.trim()).toBe(`ron-node: cannot create data directory ${join(fs.path, 'ron', 'deeper')}: read-only file system; pick another with --data-dir`)
      const existing = await runCli(['start', '--data-dir', join(fs.path, 'existing'), '--port-base', '0'])
      expect(existing.code).toBe(1)
      expect(existing.stderr.trim().split('\n')).toHaveLength(1)
      expect(existing.stderr).toContain(join(fs.path, 'existing'))
      expect(existing.stderr).toMatch(/read-only file system/)
    } finally {
      await fs.close()
    }
  }, 60_000)
})

describe('the admin listener and a browser', () => {
  beforeAll(startShared, 90_000)

  it('answers only its own host names: a DNS-rebinding Host gets 403 host_not_allowed on every route', async () => {
    const { dataDir, summary } = shared
    const port = new URL(summary.admin).port
    const token = (await readFile(join(dataDir, 'admin.token'), 'utf8')).trim()
    for (const host of [`evil.example:${port}`, 'evil.example', `localhost.evil.example:${port}`, `127.0.0.1.nip.io:${port}`]) {
      for (const path of ['/status', '/', '/metrics', '/keys', '/readyz']) {
        const r = await withHost(`${summary.admin}${path}`, host)
        expect(r.status, `${host} ${path}`).toBe(403)
        expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'Forbidden', details: { reason: 'host_not_allowed' } } })
        expect(r.body).not.toContain(summary.nodeId)
      }
      // Even with the admin token (a page cannot have it, but nothing behind the check runs).
      const reload = await withHost(`${summary.admin}/admin/reload`, host, 'POST', { authorization: `Bearer ${token}`, 'content-length': '0' })
      expect(reload.status).toBe(403)
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST', `[::1]:${port}`, `10.1.2.3:${port}`]) {
      const r = await withHost(`${summary.admin}/status`, host)
      expect(r.status, host).toBe(200)
      expect(JSON.parse(r.body)).toMatchObject({ nodeId: summary.nodeId })
    }
  }, 60_000)

  it('also answers the advertised host name', async () => {
    const { summary } = await start(['--amnesia', '--advertise', 'ron-a.internal'])
    const port = new URL(summary.admin).port
    const bound = `http://127.0.0.1:${port}`
    expect((await withHost(`${bound}/status`, `ron-a.internal:${port}`)).status).toBe(200)
    expect((await withHost(`${bound}/status`, `ron-b.internal:${port}`)).status).toBe(403)
  }, 60_000)
})

describe('an unmet write quorum', () => {
  it('answers 503 Unavailable with Retry-After (retry), not 422; the CLI exits 6', async () => {
    const dirs = ['qa', 'qb'].map((d) => join(root, d))
    // Two nodes that list each other (each accepts the other's replica tokens), rf 2, write quorum 2.
    const bases = await freeBases(2)
    const admins = bases.map((p) => `http://127.0.0.1:${p}`)
    const node = (i: number): Promise<{ proc: Proc; summary: Summary }> =>
      start(['--data-dir', dirs[i]!, '--port-base', String(bases[i]), '--peers', admins[1 - i]!, '--rf', '2', '--write-quorum', '2'])
    const [a, b] = await Promise.all([node(0), node(1)])
    const token = (await readFile(join(dirs[0]!, 'admin.token'), 'utf8')).trim()
    const put = (body: Uint8Array): Promise<Response> => fetch(`${a.summary.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: new Uint8Array(body) })
    const first = await put(randomBytes(256))
    expect(first.status, await first.text()).toBe(201)

    b.proc.child.kill('SIGTERM')
    await b.proc.exited
    const lost = await put(randomBytes(256))
    expect(lost.status).toBe(503)
    expect(Number(lost.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(await lost.json()).toMatchObject({ error: { code: 'Unavailable', retryable: true, details: { reason: 'write_quorum', copies: 1, required: 2 } } })
    const file = join(root, 'quorum.bin')
    await writeFile(file, randomBytes(256))
    const cli = await runCli(['put', file, '--node', a.summary.admin, '--data-dir', dirs[0]!])
    expect(cli.code, cli.stderr).toBe(6)
  }, 90_000)
})
