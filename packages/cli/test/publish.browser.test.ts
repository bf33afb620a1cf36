/**
 * Issue 23's story, end to end: a directory with nested paths, an image, a stylesheet and a script
 * is published on node 1 of a three-node cluster (real `ron-node` processes on loopback) with ONE
 * command, and opened on node 3 — which holds only what placement gives it (rf = 1), so most of
 * what it serves it reads from node 1, verified — at the name's own
 * origin, `http://docs-alice.localhost:<node 3's interop port>/`, in headless Chromium (Debian's,
 * driven by playwright-core, fresh profile). The stylesheet applies, the image decodes, a relative
 * link navigates, and the page's own script can read neither another site's origin nor the admin
 * origin. Republishing after one change uploads that file and the new manifest, and node 3 follows.
 *
 * The story is two commands: `ron-node publish ./site --name docs.alice`, then opening the URL.
 */

import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromium, type BrowserContext } from 'playwright-core'
import { addressOf, metricValue } from '@ron/core'
import { placement } from '@ron/storage'
import { assertBuilt, clusterNode, firstJsonLine, freeBases, killAll, runCli } from './helpers.js'

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'
/** The flags of the issue: no network of Chromium's own, no sync, no first-run UI. */
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage']
/** A 1×1 PNG (a real one: it must decode). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')

interface Summary {
  nodeId: string
  admin: string
  services: Record<string, string>
  dataDir: string
}

interface Published {
  manifestAddress: string
  uploaded: string[]
  manifestUploaded: boolean
  url: string
}

/** GET `path` from 127.0.0.1:`port` as the browser would ask `host`. */
function getAs(port: string, host: string, path: string): Promise<{ status: number; body: string }> {
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

/** Bounded poll (never a sleep to order events): resolves true once `check` holds. */
async function eventually(check: () => Promise<boolean>, attempts = 300): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check().catch(() => false)) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

async function storagePuts(storageUrl: string): Promise<number> {
  const text = await (await fetch(`${storageUrl}/metrics`)).text()
  return (metricValue(text, 'http_requests_total', { route: 'PUT /o', method: 'PUT', status: '201' }) ?? 0) + (metricValue(text, 'http_requests_total', { route: 'PUT /o', method: 'PUT', status: '200' }) ?? 0)
}

let root: string
let context: BrowserContext | undefined
beforeAll(async () => {
  assertBuilt()
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does: apt-get install -y chromium)`)
  root = await mkdtemp(join(tmpdir(), 'ron-cli-publish-browser-'))
})
afterAll(async () => {
  await context?.close()
  await killAll()
  await rm(root, { recursive: true, force: true })
})

describe('publish on node 1, open on node 3 in Chromium', () => {
  it('two commands: the site renders on its own origin from any node, isolated from other origins', async () => {
    const bases = await freeBases(3)
    const dirs = bases.map((_, i) => join(root, `node-${i + 1}`))
    const start = clusterNode(bases, dirs, ['--rf', '1'])
    const procs = bases.map((_, i) => start(i))
    const [n1, n2, n3] = await Promise.all(procs.map((p) => firstJsonLine<Summary>(p, 90_000)))
    const gw3 = new URL(n3!.services['interop']!).port
    const gw2 = new URL(n2!.services['interop']!).port

    // Another site, on node 2: the page must not be able to read it.
    const other = join(root, 'other')
    await mkdir(other, { recursive: true })
    await writeFile(join(other, 'index.html'), '<p>secret of bob</p>')
    const bob = await runCli(['publish', other, '--name', 'other.bob', '--node', n2!.admin, '--data-dir', dirs[1]!, '--json'])
    expect(bob.code, bob.stderr).toBe(0)

    // The site: nested paths, an image, a stylesheet, a script that probes other origins.
    const site = join(root, 'site')
    await mkdir(join(site, 'css'), { recursive: true })
    await mkdir(join(site, 'img'), { recursive: true })
    await mkdir(join(site, 'js'), { recursive: true })
    await mkdir(join(site, 'docs', 'guide'), { recursive: true })
    // The page itself is placed away from node 3 (a comment picks its address), so node 3 surely
    // reads something from another node.
    const ids = [n1!.nodeId, n2!.nodeId, n3!.nodeId]
    let html = ''
    for (let nonce = 0; ; nonce++) {
      html =
        `<!doctype html><!-- ${nonce} --><html><head><title>docs.alice</title><link rel="stylesheet" href="css/site.css"></head>` +
        '<body><h1>Alice\'s docs</h1><img id="logo" src="img/logo.png" alt="logo"><a id="guide" href="docs/guide/">the guide</a>' +
        '<pre id="probe">pending</pre><script src="js/probe.js"></script></body></html>'
      if (!placement(addressOf(Buffer.from(html)), ids, 1).includes(n3!.nodeId)) break
    }
    await writeFile(join(site, 'index.html'), html)
    await writeFile(join(site, 'css', 'site.css'), 'body { background-color: rgb(1, 2, 3); color: rgb(250, 250, 250) }')
    await writeFile(join(site, 'img', 'logo.png'), PNG)
    await writeFile(join(site, 'docs', 'guide', 'index.html'), '<!doctype html><link rel="stylesheet" href="../../css/site.css"><h1 id="title">The guide</h1><a href="../../">home</a>')
    const targets = {
      otherSite: `http://other-bob.localhost:${gw2}/`,
      otherSiteHere: `http://other-bob.localhost:${gw3}/`,
      admin: `${n3!.admin}/status`,
      adminByName: `http://localhost:${new URL(n3!.admin).port}/status`,
      pathGateway: `http://localhost:${gw3}/n/other.bob/`,
    }
    await writeFile(
      join(site, 'js', 'probe.js'),
      `const targets = ${JSON.stringify(targets)};
(async () => {
  const out = {};
  for (const [k, url] of Object.entries(targets)) {
    try { const r = await fetch(url); out[k] = 'read ' + r.status + ': ' + (await r.text()).slice(0, 40) }
    catch (e) { out[k] = 'refused' }
  }
  document.getElementById('probe').textContent = JSON.stringify(out);
})();
`,
    )

    // Command 1: publish on node 1.
    const pub = await runCli(['publish', site, '--name', 'docs.alice', '--node', n1!.admin, '--data-dir', dirs[0]!, '--json'])
    expect(pub.code, pub.stderr).toBe(0)
    const first = JSON.parse(pub.stdout) as Published
    expect(first.url).toBe(`http://docs-alice.localhost:${new URL(n1!.services['interop']!).port}/`)
    expect(first.uploaded.sort()).toEqual(['css/site.css', 'docs/guide/index.html', 'img/logo.png', 'index.html', 'js/probe.js'])

    // What placement does not give node 3, node 3 never holds: it serves those bytes from node 1.
    const files = ['index.html', 'css/site.css', 'img/logo.png', 'js/probe.js', 'docs/guide/index.html']
    const addresses = [...(await Promise.all(files.map(async (f) => addressOf(await readFile(join(site, f)))))), first.manifestAddress]
    const elsewhere = addresses.filter((a) => !placement(a as `b3:${string}`, ids, 1).includes(n3!.nodeId))
    expect(elsewhere.length).toBeGreaterThan(0)
    for (const a of elsewhere) expect((await fetch(`${n3!.services['storage']}/o/${a}`, { method: 'HEAD' })).status, a).toBe(404)

    // Command 2: open it — on node 3.
    const url = `http://docs-alice.localhost:${gw3}/`
    context = await chromium.launchPersistentContext(await mkdtemp(join(root, 'profile-')), { executablePath: CHROMIUM, headless: true, args: FLAGS })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    const res = await page.goto(url)
    expect(res?.status()).toBe(200)
    expect(await page.title()).toBe('docs.alice')
    // The stylesheet applied.
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(1, 2, 3)')
    // The image decoded.
    await page.waitForFunction(() => (document.getElementById('logo') as HTMLImageElement).complete)
    expect(await page.evaluate(() => (document.getElementById('logo') as HTMLImageElement).naturalWidth)).toBeGreaterThan(0)
    // The page's script could read neither another site nor the admin origin.
    await page.waitForFunction(() => document.getElementById('probe')?.textContent !== 'pending', undefined, { timeout: 30_000 })
    const probe = JSON.parse((await page.locator('#probe').textContent()) ?? '{}') as Record<string, string>
    expect(probe).toEqual({ otherSite: 'refused', otherSiteHere: 'refused', admin: 'refused', adminByName: 'refused', pathGateway: 'refused' })
    // Those origins do serve that content (to a browser tab of their own): refused means refused to this page.
    expect((await getAs(gw3, `other-bob.localhost:${gw3}`, '/')).body).toContain('secret of bob')
    // A relative link navigates (and its own relative stylesheet applies).
    await page.click('#guide')
    await page.waitForURL(`${url}docs/guide/`)
    expect(await page.locator('#title').textContent()).toBe('The guide')
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(1, 2, 3)')
    expect(problems).toEqual([])
    const remoteReads = metricValue(await (await fetch(`${n3!.services['interop']}/metrics`)).text(), 'gateway_remote_reads_total', { result: 'ok' }) ?? 0
    expect(remoteReads).toBeGreaterThanOrEqual(elsewhere.length)
    // `ron-node get` against node 3 reads what only another node holds, verified (through node 3's gateway).
    const far = elsewhere[0]!
    const out = join(root, 'far.bin')
    const get = await runCli(['get', far, '-o', out, '--node', n3!.admin, '--data-dir', dirs[2]!])
    expect(get.code, get.stderr).toBe(0)
    expect(addressOf(await readFile(out))).toBe(far)
    // Each node's storage announces the URL its /status reports, so no index refused an announcement.
    for (const n of [n1!, n2!, n3!]) {
      const text = await (await fetch(`${n.services['index']}/metrics`)).text()
      for (const reason of ['not_own_node', 'bad_endpoint', 'unknown_endpoint']) expect(metricValue(text, 'index_announcements_refused_total', { reason }), reason).toBe(0)
      const status = (await (await fetch(`${n.admin}/status`)).json()) as { services: Record<string, { url: string }> }
      expect(status.services['storage']?.url).toBe(n.services['storage'])
    }

    // Republish after one change: that file and the new manifest are uploaded, nothing else.
    await writeFile(join(site, 'css', 'site.css'), 'body { background-color: rgb(4, 5, 6) }')
    const before = await storagePuts(n1!.services['storage']!)
    const again = await runCli(['publish', site, '--name', 'docs.alice', '--node', n1!.admin, '--data-dir', dirs[0]!, '--json'])
    expect(again.code, again.stderr).toBe(0)
    const second = JSON.parse(again.stdout) as Published
    expect(second.uploaded).toEqual(['css/site.css'])
    expect(second.manifestUploaded).toBe(true)
    expect((await storagePuts(n1!.services['storage']!)) - before).toBe(2)
    // Node 3 follows once its cached answer for the name expires (index cache TTL, 10 s).
    expect(await eventually(async () => (await getAs(gw3, `docs-alice.localhost:${gw3}`, '/css/site.css')).body.includes('rgb(4, 5, 6)'))).toBe(true)
    // A load that bypasses the browser's own cache (names are cached briefly: max-age=10) shows it.
    await page.route('**/*', (route) => route.continue())
    await page.goto(url, { waitUntil: 'load' })
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(4, 5, 6)')
    await page.close()
  }, 240_000)
})
