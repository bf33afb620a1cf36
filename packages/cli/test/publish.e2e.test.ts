/**
 * `ron-node publish` against a real node (issue 23): a directory with nested paths becomes a site
 * on its own origin; republishing after one change uploads exactly that file and the new
 * manifest; a token from `token issue --name-prefix` publishes its names and nothing else; the
 * name commands, `stat` as text, and `get` through the gateway.
 */

import { request } from 'node:http'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addressOf, metricValue } from '@ron/core'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli } from './helpers.js'

interface Summary {
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

interface Published {
  manifestAddress: string
  name?: string
  previous?: string | null
  files: number
  uploaded: string[]
  manifestUploaded: boolean
  url?: string
  pathUrl?: string
  skipped: string[]
}

let root: string
let node: Summary
let env: Record<string, string>
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-publish-'))
  const proc = spawnCli(['start', '--port-base', '0', '--json', '--data-dir', join(root, 'data'), '--log-level', 'warn'])
  node = await firstJsonLine<Summary>(proc, 60_000)
  env = { RON_NODE: node.admin, RON_DATA_DIR: node.dataDir }
}, 90_000)
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

/** GET with an explicit Host header (a site's own origin), to 127.0.0.1. */
function getHost(url: string, host: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: u.port, path: `${u.pathname}${u.search}`, headers: { host } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function storagePuts(): Promise<number> {
  const text = await (await fetch(`${node.services['storage']}/metrics`)).text()
  return (metricValue(text, 'http_requests_total', { route: 'PUT /o', method: 'PUT', status: '201' }) ?? 0) + (metricValue(text, 'http_requests_total', { route: 'PUT /o', method: 'PUT', status: '200' }) ?? 0)
}

async function site(dir: string): Promise<void> {
  await mkdir(join(dir, 'css'), { recursive: true })
  await mkdir(join(dir, 'docs', 'guide'), { recursive: true })
  await mkdir(join(dir, '.git'), { recursive: true })
  await writeFile(join(dir, 'index.html'), '<!doctype html><link rel="stylesheet" href="css/site.css"><a href="docs/guide/">guide</a>')
  await writeFile(join(dir, 'css', 'site.css'), 'body { color: rgb(1, 2, 3) }')
  await writeFile(join(dir, 'docs', 'guide', 'index.html'), '<p>guide</p>')
  await writeFile(join(dir, '.git', 'HEAD'), 'ref: refs/heads/main')
}

// Each test runs a dozen CLI processes, each a cold Node start: 120 s, as in cli.e2e, so a loaded
// runner (a 2-core box running two test files and their nodes) does not time them out. The last
// test reads the names the first two published: the tests of this file run in order.
describe('ron-node publish', () => {
  it('publishes nested paths in one command, prints the site origin, and republishing uploads only what changed', async () => {
    const dir = join(root, 'site')
    await site(dir)
    const before = await storagePuts()
    const first = await runCli(['publish', dir, '--name', 'docs.alice', '--json'], env)
    expect(first.code, first.stderr).toBe(0)
    const one = JSON.parse(first.stdout) as Published
    expect(one).toMatchObject({ name: 'docs.alice', previous: null, files: 3, manifestUploaded: true, skipped: [] })
    expect(one.uploaded).toEqual(['css/site.css', 'docs/guide/index.html', 'index.html'])
    const port = new URL(node.services['interop']!).port
    expect(one.url).toBe(`http://docs-alice.localhost:${port}/`)
    expect(one.pathUrl).toBe(`${node.services['interop']}/n/docs.alice/`)
    expect((await storagePuts()) - before).toBe(4)

    const page = await getHost(`http://127.0.0.1:${port}/`, `docs-alice.localhost:${port}`)
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.body.toString()).toContain('css/site.css')
    const css = await getHost(`http://127.0.0.1:${port}/css/site.css`, `docs-alice.localhost:${port}`)
    expect([css.status, css.headers['content-type']]).toEqual([200, 'text/css; charset=utf-8'])
    expect((await getHost(`http://127.0.0.1:${port}/docs/guide`, `docs-alice.localhost:${port}`)).headers['location']).toBe('/docs/guide/')
    // Hidden files stay out.
    expect((await getHost(`http://127.0.0.1:${port}/.git/HEAD`, `docs-alice.localhost:${port}`)).status).toBe(404)

    // Nothing changed: nothing uploaded, the name stays.
    const again = JSON.parse((await runCli(['publish', dir, '--name', 'docs.alice', '--json'], env)).stdout) as Published
    expect(again).toMatchObject({ manifestAddress: one.manifestAddress, uploaded: [], manifestUploaded: false, previous: one.manifestAddress })

    // One file changed: exactly that file and the new manifest are PUT.
    await writeFile(join(dir, 'css', 'site.css'), 'body { color: rgb(4, 5, 6) }')
    const mid = await storagePuts()
    const changed = await runCli(['publish', dir, '--name', 'docs.alice', '--json'], env)
    expect(changed.code, changed.stderr).toBe(0)
    const two = JSON.parse(changed.stdout) as Published
    expect(two).toMatchObject({ uploaded: ['css/site.css'], manifestUploaded: true, previous: one.manifestAddress })
    expect((await storagePuts()) - mid).toBe(2)
    const css2 = await getHost(`http://127.0.0.1:${port}/css/site.css`, `docs-alice.localhost:${port}`)
    expect(css2.body.toString()).toBe('body { color: rgb(4, 5, 6) }')

    // The text output says what happened.
    const text = await runCli(['publish', dir, '--name', 'docs.alice'], env)
    expect(text.stdout).toContain('published 3 files: 0 uploaded')
    expect(text.stdout).toContain(`open      http://docs-alice.localhost:${port}/`)
  }, 120_000)

  it('a token from `token issue --name-prefix` publishes its names only (403, exit 4, for another)', async () => {
    const dir = join(root, 'site-b')
    await site(dir)
    const issued = await runCli(['token', 'issue', '--name-prefix', 'blog.alice'], env)
    expect(issued.code, issued.stderr).toBe(0)
    const token = issued.stdout.trim()
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string; scope: string; aud: string[]; ron: { namePrefix: string } }
    expect(claims).toMatchObject({ sub: 'publisher:blog.alice', scope: 'storage:write index:write', aud: ['storage', 'index'], ron: { namePrefix: 'blog.alice' } })
    const own = await runCli(['publish', dir, '--name', 'www.blog.alice', '--token', token, '--json'], { RON_NODE: node.admin })
    expect(own.code, own.stderr).toBe(0)
    // Refused before a byte is sent ...
    const other = await runCli(['publish', dir, '--name', 'docs.alice', '--token', token], { RON_NODE: node.admin })
    expect(other.code).toBe(4)
    expect(other.stderr).toMatch(/allows names under 'blog\.alice' only/)
    // ... and by the node itself (403 caveat), whatever a client checks.
    const ma = JSON.parse(own.stdout).manifestAddress as string
    const res = await fetch(`${node.services['index']}/names/docs.alice`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ manifestAddress: ma }) })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ error: { details: { caveat: 'namePrefix', namePrefix: 'blog.alice' } } })
    const gone = await runCli(['token', 'issue', '--sub', 'x'], env)
    expect(gone.code).toBe(2)
  }, 120_000)

  it('name ls, get and rm; stat prints text (JSON with --json); get reads through the gateway', async () => {
    const ls = await runCli(['name', 'ls', '--prefix', 'docs.'], env)
    expect(ls.code, ls.stderr).toBe(0)
    expect(ls.stdout).toMatch(/^docs\.alice\s+b3:[0-9a-f]{64}\s+seq \d+$/m)
    const got = await runCli(['name', 'get', 'docs.alice'], env)
    expect(got.stdout).toMatch(/\(a directory\)/)
    expect(got.stdout).toContain(`open       http://docs-alice.localhost:${new URL(node.services['interop']!).port}/`)
    const json = JSON.parse((await runCli(['name', 'get', 'docs.alice', '--json'], env)).stdout) as { kind: string }
    expect(json.kind).toBe('dir')

    const file = join(root, 'stat.txt')
    await writeFile(file, 'some bytes')
    const addr = addressOf(await readFile(file))
    expect((await runCli(['put', file], env)).stdout.trim()).toBe(addr)
    const stat = await runCli(['stat', addr], env)
    expect(stat.code, stat.stderr).toBe(0)
    expect(stat.stdout).toMatch(/^address {4}b3:/m)
    expect(stat.stdout).toMatch(/^local {6}present, verified$/m)
    expect(stat.stdout).not.toMatch(/[{[]/)
    expect(JSON.parse((await runCli(['stat', addr, '--json'], env)).stdout)).toMatchObject({ address: addr, size: 10 })
    const out = join(root, 'back.txt')
    expect((await runCli(['get', addr, '-o', out], env)).code).toBe(0)
    expect(await readFile(out, 'utf8')).toBe('some bytes')

    const rm = await runCli(['name', 'rm', 'www.blog.alice'], env)
    expect(rm.code, rm.stderr).toBe(0)
    expect((await runCli(['name', 'get', 'www.blog.alice'], env)).code).toBe(3)
  }, 120_000)
})
