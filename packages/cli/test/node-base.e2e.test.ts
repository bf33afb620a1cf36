/**
 * The node's base keys reach every hosted service (issue 21, docs/service-contract.md §8): a
 * real `ron-node` started with node-level `[http]`, `[cors]`, `drainDeadline` and
 * `drainReadWindow` applies them in passport, interop and the others; a service's own
 * `[<service>.http]` wins; a reload of a base key reaches all five.
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNode as startInProcess } from '../src/node.js'
import { EXECUTABLE, assertBuilt, firstJsonLine, killAll, spawnCli, type Proc } from './helpers.js'

interface Summary {
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

const SERVICES = ['storage', 'registry', 'passport', 'index', 'interop'] as const
const APP = 'https://app.example'

let root: string
let proc: Proc
let summary: Summary
let token: string

beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-cli-base-'))
  const config = join(root, 'node.toml')
  await writeFile(
    config,
    [
      'drainDeadline = "1234ms"',
      'drainReadWindow = "7ms"',
      '[http]',
      'jsonBodyLimit = "1KiB"',
      'maxRpsPerIp = 1',
      '[cors]',
      `writeOrigins = ["${APP}"]`,
      '[index.http]',
      'maxRpsPerIp = 1000',
      '',
    ].join('\n'),
  )
  // Through the executable npm links, as a user starts it (it tunes V8 before the services load).
  proc = spawnCli(['start', '--config', config, '--port-base', '0', '--json', '--data-dir', join(root, 'data'), '--log-level', 'info'], {}, 'ignore', undefined, EXECUTABLE)
  summary = await firstJsonLine<Summary>(proc, 60_000)
  token = (await readFile(summary.tokenFile, 'utf8')).trim()
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

/** `n` requests in a row (each waits for the previous answer); their statuses. */
async function statuses(n: number, url: string, init: RequestInit = {}): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, init)
    out.push(res.status)
    await res.body?.cancel()
  }
  return out
}

describe('node-level base keys in a real ron-node', () => {
  it("the executable keeps V8's young generation small (youngGenGrowth 1) from before the services load", async () => {
    // Measured on this node: V8's own sizing (RON_YOUNG_GEN_GROWTH=auto) grows the new space to
    // 16 MiB while the services load, and to 8 MiB when only `start` applies the setting (after
    // loading); the executable applies it first, so it stays at its initial size.
    const text = await (await fetch(`${summary.admin}/metrics`)).text()
    const line = text.split('\n').find((l) => l.startsWith('nodejs_heap_space_size_total_bytes{space="new"}'))
    expect(line, 'the new space is exported').toBeDefined()
    expect(Number(line!.slice(line!.lastIndexOf(' ') + 1))).toBeLessThanOrEqual(4 * 1024 * 1024)
  })

  it('[http] jsonBodyLimit reaches passport and interop: a body over it is 413 OverLimit', async () => {
    const big = JSON.stringify({ token: 'x'.repeat(4096) })
    const p = await fetch(`${summary.services['passport']}/v1/passport/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big })
    expect(p.status).toBe(413)
    expect(((await p.json()) as { error: { code: string } }).error.code).toBe('OverLimit')
    const i = await fetch(`${summary.services['interop']}/admin/webhooks/github/secret`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ secret: 'x'.repeat(4096) }),
    })
    expect(i.status).toBe(413)
    expect(((await i.json()) as { error: { code: string } }).error.code).toBe('OverLimit')
  })

  it('[http] maxRpsPerIp reaches passport and interop (429 past the burst); [index.http] overrides it for index', async () => {
    // maxRpsPerIp = 1: a burst of 2 s worth (the test above took some), then 429 until the bucket
    // refills: of 6 requests in a row at most 3 are served.
    const p = await statuses(6, `${summary.services['passport']}/v1/passport/keys`)
    expect(p[0]).toBe(200)
    expect(p.filter((s) => s === 429).length).toBeGreaterThanOrEqual(3)
    const i = await statuses(6, `${summary.services['interop']}/admin/credentials`, { headers: { authorization: `Bearer ${token}` } })
    expect(i[0]).toBe(200)
    expect(i.filter((s) => s === 429).length).toBeGreaterThanOrEqual(3)
    // index's own [index.http] maxRpsPerIp = 1000 wins over the node's 1.
    const x = await statuses(6, `${summary.services['index']}/names`)
    expect(x).toEqual([200, 200, 200, 200, 200, 200])
  })

  it('[cors] reaches all five: the configured origin may write, an unknown one may not', async () => {
    for (const name of SERVICES) {
      const preflight = (origin: string): Promise<Response> =>
        fetch(`${summary.services[name]}/anything`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } })
      const ok = await preflight(APP)
      expect(ok.status, name).toBe(204)
      expect(ok.headers.get('access-control-allow-origin'), name).toBe(APP)
      await ok.body?.cancel()
      const admin = await preflight(new URL(summary.admin).origin)
      expect(admin.status, `${name}: the admin origin (dashboard) still writes`).toBe(204)
      await admin.body?.cancel()
      const no = await preflight('https://evil.example')
      expect(no.status, name).toBe(403)
      await no.body?.cancel()
    }
  })

  it('drainDeadline and drainReadWindow reach all five: each drains with them on SIGTERM', async () => {
    proc.child.kill('SIGTERM')
    const { code } = await proc.exited
    expect(code).toBe(0)
    const drains = proc
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; service?: string; drainDeadlineMs?: number; readWindowMs?: number })
      .filter((l) => l.msg === 'draining: writes refused')
    expect(drains.map((d) => d.service).sort()).toEqual([...SERVICES].sort())
    for (const d of drains) {
      expect(d.drainDeadlineMs, d.service).toBe(1234)
      // The index has no read window (it is unready as a whole at the start of a drain).
      expect(d.readWindowMs, d.service).toBe(d.service === 'index' ? 0 : 7)
    }
  })
})

describe('node reload of a base key (in-process node)', () => {
  it('a reloaded [cors] reaches every hosted service', async () => {
    const node = await startInProcess({ amnesia: true, portBase: 0, drainDeadlineMs: 200 })
    try {
      const later = 'https://later.example'
      const allowed = async (): Promise<Record<string, number>> => {
        const out: Record<string, number> = {}
        for (const name of SERVICES) {
          const res = await fetch(`${node.services[name]}/x`, { method: 'OPTIONS', headers: { origin: later, 'access-control-request-method': 'PUT' } })
          out[name] = res.status
          await res.body?.cancel()
        }
        return out
      }
      expect(Object.values(await allowed())).toEqual([403, 403, 403, 403, 403])
      const result = await node.reload({ cors: { writeOrigins: [later] } })
      expect(result.reloaded.sort()).toEqual([...SERVICES].sort())
      expect(await allowed()).toEqual({ storage: 204, registry: 204, passport: 204, index: 204, interop: 204 })
    } finally {
      await node.close()
    }
  })
})
