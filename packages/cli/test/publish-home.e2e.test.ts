/**
 * Publishing a name through a node that is not its home (SPEC §6a "Signed name records"): the
 * node answers 409 naming the home, and `ron-node publish` retries there with the user's own token
 * (a shared passport makes it valid on both), storing the directory manifest on the home first —
 * the home's index checks a manifest in its own storage. Nodes never forward writes themselves.
 */

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addressOf, dirManifest, mediaTypeFor } from '@ron/core'
import { placement } from '@ron/storage'
import { assertBuilt, firstJsonLine, killAll, runCli, spawnCli } from './helpers.js'

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  tokenFile: string
}

let root: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-publish-home-'))
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

function getWithStatus(port: string, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function getAs(port: string, host: string, path: string): Promise<string> {
  return (await getWithStatus(port, host, path)).body
}

async function getStatus(port: string, host: string, path: string): Promise<number> {
  return (await getWithStatus(port, host, path)).status
}

describe('publish through a node that is not the name\'s home', () => {
  it('is retried at the home with the same token; the manifest is stored there first', async () => {
    const start = (dir: string): ReturnType<typeof spawnCli> => spawnCli(['start', '--data-dir', dir, '--port-base', '0', '--json', '--log-level', 'warn', '--drain-deadline', '500ms'])
    const a = await firstJsonLine<Summary>(start(join(root, 'a')), 60_000)
    const adminA = (await readFile(a.tokenFile, 'utf8')).trim()
    const joined = await runCli(['join', a.admin, '--token', adminA, '--data-dir', join(root, 'b')])
    expect(joined.code, joined.stderr).toBe(0)
    // rf 1 on B: what B's placement keeps on B never reaches A by replication.
    const b = await firstJsonLine<Summary>(spawnCli(['start', '--data-dir', join(root, 'b'), '--port-base', '0', '--json', '--log-level', 'warn', '--drain-deadline', '500ms', '--rf', '1']), 60_000)

    const site = join(root, 'site')
    await mkdir(site, { recursive: true })
    await writeFile(join(site, 'index.html'), 'first')
    const token = (await runCli(['token', 'issue', '--name-prefix', 'docs.alice', '--node', a.admin, '--token', adminA])).stdout.trim()
    const first = await runCli(['publish', site, '--name', 'docs.alice', '--node', a.admin, '--token', token, '--json'])
    expect(first.code, first.stderr).toBe(0)

    // Republish through B: B's index knows the name is homed on A (a signed record from A). The new
    // page is chosen so that its manifest is placed on B alone: only the CLI can bring it to A.
    let page = ''
    for (let n = 0; ; n++) {
      page = `second ${n}`
      const { bytes } = dirManifest([{ path: 'index.html', content: addressOf(Buffer.from(page)), size: Buffer.byteLength(page), type: mediaTypeFor('index.html') }])
      if (placement(addressOf(bytes), [a.nodeId, b.nodeId], 1)[0] === b.nodeId) break
    }
    await writeFile(join(site, 'index.html'), page)
    const again = await runCli(['publish', site, '--name', 'docs.alice', '--node', b.admin, '--token', token, '--json'])
    expect(again.code, again.stderr).toBe(0)
    const out = JSON.parse(again.stdout) as { manifestAddress: string; previous: string }
    expect(out.previous).toBe((JSON.parse(first.stdout) as { manifestAddress: string }).manifestAddress)
    // The home holds the manifest now (B's placement kept it on B alone: the CLI brought it).
    expect((await fetch(`${a.services['storage']}/o/${out.manifestAddress}`, { method: 'HEAD' })).status).toBe(200)
    // B serves the new site at once: the CLI made B read the name afresh from the home (B had
    // cached the old binding when publish read it), and the page is B's own copy.
    const gw = new URL(b.services['interop']!).port
    expect(await getAs(gw, `docs-alice.localhost:${gw}`, '/')).toBe(page)
    // The record is still A's: the write happened at the home, signed by it.
    const names = (await (await fetch(`${a.services['index']}/names?prefix=docs.alice`)).json()) as { names: { name: string; node: string; seq: number; manifestAddress: string }[] }
    expect(names.names).toEqual([expect.objectContaining({ name: 'docs.alice', node: a.nodeId, seq: 2, manifestAddress: out.manifestAddress })])

    // Removing through B is done at the home too, and B stops serving the site at once.
    const removed = await runCli(['name', 'rm', 'docs.alice', '--node', b.admin, '--token', token, '--json'])
    expect(removed.code, removed.stderr).toBe(0)
    expect((JSON.parse(removed.stdout) as { previous: string }).previous).toBe(out.manifestAddress)
    expect(await getStatus(gw, `docs-alice.localhost:${gw}`, '/')).toBe(404)
  }, 120_000)
})
