/**
 * The admin dashboard in a real headless browser (Debian's chromium driven by playwright-core),
 * used as a person would: it loads without console errors and shows all five services ready and
 * labelled charts; it uploads a file with a pasted token and downloads it back identical; it lists
 * and shows objects; it lists, sets, opens and removes names; it publishes a folder (chosen, or
 * dropped) into the same manifest `ron-node publish` makes and opens the site in the gateway; it
 * shows peers up, down and when last seen with their services; every failure reads as a sentence,
 * never JSON. And a page on another origin reads an object through CORS.
 */

import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromium, type Browser, type Page } from 'playwright-core'
import { HttpTransport, addressOf, dirManifest, mediaTypeFor } from '@ron/core'
import { createPassportClient } from '@ron/passport'
import { startNode, type RonNode } from '../src/node.js'

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'
/** A 1×1 PNG (a real one: it must decode). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')

/** A loopback URL where nothing listens (a port bound, then released). */
async function deadUrl(): Promise<string> {
  const s = createNetServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((r) => s.close(() => r()))
  return `http://127.0.0.1:${port}`
}

describe('admin dashboard in headless chromium', () => {
  let dir: string
  let node: RonNode
  let peer: RonNode | undefined
  let dead: string
  let browser: Browser
  let token: string
  let publisher: string
  let other: Server

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does: apt-get install -y chromium)`)
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-dashboard-'))
    // A peer that answers (it hosts a passport only, so it takes no part in placement) and one
    // where nothing listens.
    peer = await startNode({ dataDir: join(dir, 'peer'), portBase: 0, drainDeadlineMs: 500, services: ['passport'] })
    await peer.whenReady()
    dead = await deadUrl()
    node = await startNode({ dataDir: join(dir, 'data'), portBase: 0, drainDeadlineMs: 500, peers: [peer.admin, dead], peerWaitMs: 1000 })
    await node.whenReady()
    token = (await readFile(node.tokenFile!, 'utf8')).trim()
    // What `ron-node token issue --name-prefix docs.alice` issues.
    const transport = new HttpTransport({ targets: { passport: node.services['passport']! } })
    try {
      publisher = (await createPassportClient(transport, { token }).issue({ sub: 'publisher:docs.alice', aud: ['storage', 'index'], scope: ['storage:write', 'index:write'], caveats: { namePrefix: 'docs.alice' } })).token
    } finally {
      await transport.close()
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    if (other !== undefined) await new Promise<void>((r) => other.close(() => r()))
    await node?.close()
    await peer?.close()
    await rm(dir, { recursive: true, force: true })
  })

  /** A dashboard page, with every console error and page error collected. */
  async function open(): Promise<{ page: Page; problems: string[]; requests: string[] }> {
    const page = await browser.newPage()
    const problems: string[] = []
    const requests: string[] = []
    page.on('request', (r) => requests.push(r.url()))
    page.on('console', (m) => {
      // Chromium logs every answer that is not 2xx; the page shows those itself (checked apart).
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource: the server responded with a status of')) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(node.admin)
    await page.waitForSelector('tr[data-service="storage"] td[data-ready="true"]', { timeout: 15_000 })
    return { page, problems, requests }
  }

  /** The text of a message element once it is no longer a progress note. */
  async function settled(page: Page, id: string): Promise<{ text: string; error: boolean }> {
    await page.waitForFunction((i) => /\b(done|error)\b/.test(document.getElementById(i)?.className ?? ''), id, { timeout: 20_000 })
    return page.evaluate((i) => {
      const e = document.getElementById(i)!
      return { text: e.textContent ?? '', error: e.classList.contains('error') }
    }, id)
  }

  it('loads without console errors, shows every service ready and labelled charts, uploads and downloads a file identical, resolves', async () => {
    const { page, problems, requests } = await open()
    for (const name of ['storage', 'registry', 'passport', 'index', 'interop']) {
      await page.waitForSelector(`tr[data-service="${name}"] td[data-ready="true"]`, { timeout: 15_000 })
    }
    await expect(page.locator('#node').textContent()).resolves.toBe(node.nodeId)
    // The page is opened at the node's own address: no warning about where writes are accepted.
    expect(await page.locator('#origin-msg').textContent()).toBe('')

    // Charts: a title, an axis title and ticks with their unit, time labels, a legend by service.
    await page.waitForSelector('#rate polyline', { timeout: 20_000 })
    expect(await page.locator('#rate text.axis').textContent()).toBe('requests per second')
    expect(await page.locator('#latency text.axis').textContent()).toBe('mean latency (ms)')
    const rateTicks = await page.locator('#rate text.tick').allTextContents()
    expect(rateTicks).toHaveLength(3)
    for (const t of rateTicks) expect(t).toMatch(/^[0-9.]+ req\/s$/)
    for (const t of await page.locator('#latency text.tick').allTextContents()) expect(t).toMatch(/^[0-9.]+ ms$/)
    expect(await page.locator('#rate text.time').allTextContents()).toEqual(['5 min ago', '2.5 min ago', 'now'])
    expect(await page.locator('#legend span[data-service="node"]').textContent()).toBe('node')

    const content = randomBytes(3000)
    const file = join(dir, 'upload.bin')
    await writeFile(file, content)
    await page.fill('#token', token)
    expect(await page.locator('#token-info').textContent()).toContain('node:admin')
    await page.setInputFiles('#file', file)
    await page.click('#upload')
    const address = await page.locator('#address').textContent({ timeout: 15_000 })
    expect(address).toMatch(/^b3:[0-9a-f]{64}$/)
    expect(address).toBe(addressOf(content))
    const href = await page.locator('#download').getAttribute('href')
    expect(href).toBe(`${node.services['storage']}/o/${address}`)
    // Downloaded by the page itself (cross-origin: the storage port, through CORS).
    const bytes = await page.evaluate(async (url) => Array.from(new Uint8Array(await (await fetch(url)).arrayBuffer())), href!)
    expect(Buffer.from(bytes).equals(content)).toBe(true)

    // Resolve: an answer in words, not JSON.
    await page.fill('#key', address!)
    await page.click('#resolve')
    await page.waitForSelector('#resolved dd[data-field="providers"]', { timeout: 15_000 })
    expect(await page.locator('#resolved dd[data-field="providers"]').textContent()).toContain(node.nodeId)
    expect(await page.locator('#resolved').textContent()).not.toContain('{')
    expect(problems).toEqual([])
    // Nothing was asked of anything but this node: the page, its polls, and its own services.
    const own = new Set([node.admin, ...Object.values(node.services)].map((u) => new URL(u).origin))
    expect(requests.length).toBeGreaterThan(3)
    expect(requests.filter((u) => !u.startsWith('data:') && !own.has(new URL(u).origin))).toEqual([])
    await page.close()
  }, 60_000)

  it('errors read as sentences with what to do, never as JSON', async () => {
    const { page } = await open()
    await writeFile(join(dir, 'small.txt'), 'small')
    await page.setInputFiles('#file', join(dir, 'small.txt'))

    // No token: said before anything is sent.
    await page.click('#upload')
    const none = await settled(page, 'uploaded')
    expect(none).toEqual({ text: 'this needs a token: paste one in “Token” above', error: true })

    // A token the node refuses: the SPEC code and message, and what to do.
    await page.fill('#token', 'x.eyJzY29wZSI6WyJzdG9yYWdlOndyaXRlIl19.y')
    await page.click('#upload')
    const refused = await settled(page, 'uploaded')
    expect(refused.error).toBe(true)
    expect(refused.text).toMatch(/^Unauthorized: .+ — paste a valid token above/)
    expect(refused.text).not.toMatch(/[{}]/)

    // A token without storage:admin cannot list objects: the scope it needs is named.
    await page.fill('#token', publisher)
    expect(await page.locator('#token-info').textContent()).toContain('names docs.alice and under it only')
    await page.click('#list-objects')
    const listing = await settled(page, 'objects-msg')
    expect(listing).toEqual({ text: 'Forbidden: token lacks scope storage:admin — this needs a token with scope storage:admin', error: true })

    // A name outside the token's prefix is refused before anything is uploaded.
    await page.fill('#set-name', 'other.bob')
    await page.fill('#set-address', addressOf(Buffer.from('small')))
    await page.click('#set')
    expect(await settled(page, 'set-msg')).toEqual({ text: 'this token cannot write other.bob: it allows docs.alice and names under it only', error: true })

    // An address this node does not hold.
    await page.fill('#set-name', 'x.docs.alice')
    await page.fill('#set-address', `b3:${'0'.repeat(64)}`)
    await page.click('#set')
    expect((await settled(page, 'set-msg')).text).toMatch(/^b3:0{10}…0{6} is not stored on this node: upload it first$/)

    // A name nobody has.
    await page.fill('#key', 'nobody.alice')
    await page.click('#resolve')
    expect(await settled(page, 'resolve-msg')).toEqual({ text: 'nothing is known of nobody.alice: no node has this name', error: true })
    // A name the index refuses: its message, not its envelope.
    await page.fill('#key', 'nobody.example')
    await page.click('#resolve')
    expect(await settled(page, 'resolve-msg')).toEqual({ text: "Malformed: name 'nobody.example' is reserved", error: true })
    await page.close()
  }, 60_000)

  it('lists objects, shows one, downloads it', async () => {
    const { page, problems } = await open()
    const content = randomBytes(5000)
    const res = await fetch(`${node.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: content })
    const { address } = (await res.json()) as { address: string }
    await page.fill('#token', token)
    await page.click('#list-objects')
    const row = page.locator(`#objects tr[data-address="${address}"]`)
    await row.waitFor({ timeout: 15_000 })
    expect(await row.locator('td').nth(1).textContent()).toBe('4.9 KiB')
    await row.locator('button.show').click()
    await page.waitForSelector('#stat-out dd[data-field="size"]', { timeout: 15_000 })
    expect(await page.locator('#stat-out dd[data-field="size"]').textContent()).toBe('4.9 KiB (5000 bytes)')
    expect(await page.locator('#stat-out dd[data-field="copy here"]').textContent()).toBe('present, intact')
    expect(await page.locator('#stat-out dd[data-field="placed on"]').textContent()).toBe(`${node.nodeId} (this node)`)
    const href = await page.locator('#stat-out dd[data-field="content"] a').getAttribute('href')
    const bytes = await page.evaluate(async (url) => Array.from(new Uint8Array(await (await fetch(url)).arrayBuffer())), href!)
    expect(Buffer.from(bytes).equals(content)).toBe(true)
    // Unknown address: said plainly.
    await page.fill('#stat-key', `b3:${'1'.repeat(64)}`)
    await page.click('#stat')
    expect((await settled(page, 'stat-msg')).text).toMatch(/this node has no copy of b3:1{10}…1{6}/)
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)

  it('publishes a folder into the manifest ron-node publish makes, opens it in the gateway, lists, sets and removes names', async () => {
    const site = join(dir, 'site')
    await mkdir(join(site, 'css'), { recursive: true })
    await mkdir(join(site, 'img'), { recursive: true })
    const files: Record<string, string | Buffer> = {
      'index.html': '<!doctype html><title>from the dashboard</title><link rel="stylesheet" href="css/site.css"><img id="logo" src="img/logo.png"><h1>hello</h1>',
      'css/site.css': 'body { background-color: rgb(7, 8, 9) }',
      'img/logo.png': PNG,
    }
    for (const [p, c] of Object.entries(files)) await writeFile(join(site, p), c)
    await writeFile(join(site, '.secret'), 'left out, as ron-node publish leaves it out')
    const expected = dirManifest(Object.entries(files).map(([path, c]) => ({ path, content: addressOf(Buffer.from(c)), size: Buffer.byteLength(c), type: mediaTypeFor(path) })))

    const { page, problems } = await open()
    await page.fill('#token', publisher)
    await page.setInputFiles('#folder', site)
    expect(await page.locator('#publish-files').textContent()).toBe('3 files (248 B) from site; 1 hidden left out')
    await page.fill('#publish-name', 'docs.alice')
    await page.click('#publish')
    const done = await settled(page, 'publish-msg')
    expect(done.error, done.text).toBe(false)
    // The same bytes, so the same address, as the CLI's manifest.
    expect(await page.locator('#publish-manifest').textContent()).toBe(addressOf(expected.bytes))
    const gw = new URL(node.services['interop']!).port
    const url = `http://docs-alice.localhost:${gw}/`
    expect(await page.locator('#site-url').getAttribute('href')).toBe(url)

    // Open it in the gateway, on its own origin.
    const site1 = await browser.newPage()
    await site1.goto(url)
    expect(await site1.title()).toBe('from the dashboard')
    expect(await site1.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(7, 8, 9)')
    await site1.waitForFunction(() => (document.getElementById('logo') as HTMLImageElement).complete)
    expect(await site1.evaluate(() => (document.getElementById('logo') as HTMLImageElement).naturalWidth)).toBe(1)
    // A site's script cannot write names or objects, even holding a token: only the admin origin may write cross-origin.
    const writes = await site1.evaluate(
      async ({ index, storage, t }) => {
        const tryIt = (url: string, body: string): Promise<string> =>
          fetch(url, { method: 'PUT', headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' }, body }).then((r) => `answered ${r.status}`, () => 'refused')
        return [await tryIt(`${index}/names/docs.alice`, '{"manifestAddress":"b3:' + '0'.repeat(64) + '"}'), await tryIt(`${storage}/o`, 'defaced')]
      },
      { index: node.services['index']!, storage: node.services['storage']!, t: publisher },
    )
    expect(writes).toEqual(['refused', 'refused'])
    await site1.close()

    // Publishing it again changes nothing.
    await page.click('#publish')
    await page.waitForFunction(() => document.getElementById('publish-msg')?.textContent?.includes('docs.alice already named it'), undefined, { timeout: 20_000 })

    // A folder dropped on the page (files, no name): reachable by its address.
    await page.evaluate(() => {
      const dt = new DataTransfer()
      dt.items.add(new File(['<p>dropped</p>'], 'index.html', { type: 'text/html' }))
      document.getElementById('drop')!.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }))
    })
    await page.waitForFunction(() => document.getElementById('publish-files')?.textContent?.startsWith('1 file'), undefined, { timeout: 10_000 })
    await page.fill('#publish-name', '')
    await page.click('#publish')
    await page.waitForFunction(() => document.getElementById('publish-msg')?.textContent?.includes('/o/b3:'), undefined, { timeout: 20_000 })
    const byAddress = await page.locator('#site-url').getAttribute('href')
    expect(byAddress).toMatch(new RegExp(`^${node.services['interop']}/o/b3:[0-9a-f]{64}/$`))
    expect(await (await fetch(byAddress!)).text()).toBe('<p>dropped</p>')

    // Names: listed with a link that opens the site.
    await page.click('#list-names')
    const row = page.locator('#names tr[data-name="docs.alice"]')
    await row.waitFor({ timeout: 15_000 })
    expect(await row.locator('a.open').getAttribute('href')).toBe(url)
    expect(await row.locator('td').nth(2).textContent()).toBe('1')

    // Set a name to a single file: wrapped in a file manifest of the type given.
    const text = 'a plain note'
    await fetch(`${node.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: text })
    await page.fill('#set-name', 'note.docs.alice')
    await page.fill('#set-address', addressOf(Buffer.from(text)))
    await page.fill('#set-type', 'text/plain; charset=utf-8')
    await page.click('#set')
    const set = await settled(page, 'set-msg')
    expect(set.error, set.text).toBe(false)
    expect(set.text).toContain('a file manifest for')
    expect(await (await fetch(`${node.services['interop']}/n/note.docs.alice/`)).text()).toBe(text)
    await page.locator('#names tr[data-name="note.docs.alice"]').waitFor({ timeout: 15_000 })

    // Remove it: a second click confirms.
    const rm = page.locator('#names tr[data-name="note.docs.alice"] button.remove')
    await rm.click()
    expect(await rm.textContent()).toBe('really remove note.docs.alice?')
    await rm.click()
    expect(await settled(page, 'names-msg')).toEqual({ text: 'removed note.docs.alice', error: false })
    expect(await page.locator('#names tr[data-name="note.docs.alice"]').count()).toBe(0)
    expect((await fetch(`${node.services['index']}/resolve/note.docs.alice`)).status).toBe(404)
    expect(problems).toEqual([])
    await page.close()
  }, 90_000)

  it('a page on another origin reads an object through CORS', async () => {
    const res = await fetch(`${node.services['storage']}/o`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: 'shared across origins' })
    const { address } = (await res.json()) as { address: string }
    const objectUrl = `${node.services['storage']}/o/${address}`
    other = createServer((_req, r) => {
      r.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      r.end(`<!doctype html><p id="out">pending</p><script>fetch(${JSON.stringify(objectUrl)}).then((r) => r.text()).then((t) => { document.getElementById('out').textContent = t }, (e) => { document.getElementById('out').textContent = 'failed: ' + e })</script>`)
    })
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
    const page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${(other.address() as { port: number }).port}/`)
    await page.waitForFunction(() => document.getElementById('out')?.textContent !== 'pending', undefined, { timeout: 15_000 })
    expect(await page.locator('#out').textContent()).toBe('shared across origins')
    await page.close()
  }, 60_000)

  it('opened at another host name than the node\'s own, it says where changes are accepted', async () => {
    const page = await browser.newPage()
    await page.goto(node.admin.replace('127.0.0.1', 'localhost'))
    await page.waitForFunction(() => (document.getElementById('origin-msg')?.textContent ?? '') !== '', undefined, { timeout: 15_000 })
    expect(await page.locator('#origin-msg').textContent()).toContain(`accepts changes (uploads, names, publishing) only from ${node.admin}`)
    expect(await page.locator('#origin-msg a').getAttribute('href')).toBe(`${node.admin}/`)
    // And a write from there is indeed refused by the browser: the message says where to go.
    await page.fill('#token', token)
    await writeFile(join(dir, 'x.txt'), 'x')
    await page.setInputFiles('#file', join(dir, 'x.txt'))
    await page.click('#upload')
    const msg = await settled(page, 'uploaded')
    expect(msg.error).toBe(true)
    expect(msg.text).toContain(`its services accept changes only from the dashboard at ${node.admin}`)
    await page.close()
  }, 60_000)

  // Last: it stops the peer.
  it('shows peers up and down, when last seen, and their services', async () => {
    const { page } = await open()
    const up = page.locator(`#peers tr[data-peer="${peer!.admin}"]`)
    await up.locator('td.state[data-state="up"]').waitFor({ timeout: 15_000 })
    expect(await up.locator('td.services').textContent()).toBe(`passport ${peer!.services['passport']}`)
    expect(await up.locator('td').nth(3).textContent()).toBe(peer!.nodeId)
    expect(await up.locator('td.seen').textContent()).toMatch(/^\d+ s ago$/)
    const down = page.locator(`#peers tr[data-peer="${dead}"]`)
    await down.locator('td.state[data-state="down"]').waitFor({ timeout: 15_000 })
    expect(await down.locator('td.seen').textContent()).toBe('never')
    expect(await page.locator('#summary').textContent()).toContain('2 peers, 1 up')

    await peer!.close()
    peer = undefined
    // The node notices within its refresh period (2 s); the page within its own (2 s).
    await up.locator('td.state[data-state="down"]').waitFor({ timeout: 20_000 })
    expect(await up.locator('td.seen').textContent()).toMatch(/^\d+ s ago$/)
    expect(await page.locator('#summary').textContent()).toContain('2 peers, 0 up')
    await page.close()
  }, 60_000)
})
