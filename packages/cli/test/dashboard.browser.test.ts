/**
 * The admin dashboard in a real headless browser (Debian's chromium driven by playwright-core):
 * it loads without console errors, shows all five services ready, uploads a file with a pasted
 * token and downloads it back identical, resolves a name; and a page on another origin reads an
 * object through CORS.
 */

import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromium, type Browser } from 'playwright-core'
import { startNode, type RonNode } from '../src/node.js'

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'

describe('admin dashboard in headless chromium', () => {
  let dir: string
  let node: RonNode
  let browser: Browser
  let token: string
  let other: Server

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does: apt-get install -y chromium)`)
    dir = await mkdtemp(join(tmpdir(), 'ron-cli-dashboard-'))
    node = await startNode({ dataDir: join(dir, 'data'), portBase: 0, drainDeadlineMs: 500 })
    await node.whenReady()
    token = (await readFile(node.tokenFile!, 'utf8')).trim()
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    if (other !== undefined) await new Promise<void>((r) => other.close(() => r()))
    await node?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('loads without console errors, shows every service ready, uploads and downloads a file identical, resolves', async () => {
    const page = await browser.newPage()
    const problems: string[] = []
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(node.admin)
    for (const name of ['storage', 'registry', 'passport', 'index', 'interop']) {
      await page.waitForSelector(`tr[data-service="${name}"] td[data-ready="true"]`, { timeout: 15_000 })
    }
    await expect(page.locator('#node').textContent()).resolves.toBe(node.nodeId)

    const content = randomBytes(3000)
    const file = join(dir, 'upload.bin')
    await writeFile(file, content)
    await page.fill('#token', token)
    await page.setInputFiles('#file', file)
    await page.click('#upload')
    const address = await page.locator('#address').textContent({ timeout: 15_000 })
    expect(address).toMatch(/^b3:[0-9a-f]{64}$/)
    const href = await page.locator('#download').getAttribute('href')
    expect(href).toBe(`${node.services['storage']}/o/${address}`)
    // Downloaded by the page itself (cross-origin: the storage port, through CORS).
    const bytes = await page.evaluate(async (url) => Array.from(new Uint8Array(await (await fetch(url)).arrayBuffer())), href!)
    expect(Buffer.from(bytes).equals(content)).toBe(true)

    await page.fill('#key', address!)
    await page.click('#resolve')
    await page.waitForFunction(() => (document.getElementById('resolved')?.textContent ?? '').includes('providers'), undefined, { timeout: 15_000 })
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)

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
})
