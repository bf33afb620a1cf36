/**
 * Issue 20 on a real `ron-node` process: slow clients are cut everywhere (item 5) and the small
 * HTTP holes (item 8): trickling uploads against webhooks, a trickled webhook body, JSON routes
 * with another Content-Type, `X-Expect-Address` on uploads, Node's own 431 in the error envelope,
 * webhook dedupe across a restart. Loopback only; the node runs interop with short slow-client
 * limits so every wait is a few seconds.
 */
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addressOf } from '@ron/core'
import { signWebhook } from '@ron/interop'
import { assertBuilt, firstJsonLine, killAll, spawnCli, type Proc } from './helpers.js'

interface Summary {
  admin: string
  services: Record<string, string>
  tokenFile: string
  dataDir: string
}

const KEYS = ['a', 'b', 'c'].map((client) => ({ client, key: `ronk_${client}_${'e2e'.repeat(10)}` }))
/** Interop's slow-client rules for this node: the defaults' shape over 3 s instead of 10 s. */
const WINDOW_MS = 3000

let root: string
let config: string
beforeAll(async () => {
  assertBuilt()
  root = await mkdtemp(join(tmpdir(), 'ron-slow-clients-'))
  config = join(root, 'node.json')
  await writeFile(
    config,
    JSON.stringify({
      interop: {
        apiKeys: KEYS.map((k) => ({ client: k.client, keyHash: `sha256:${createHash('sha256').update(k.key).digest('hex')}` })),
        http: { rateWindowMs: WINDOW_MS, requestTimeoutMs: WINDOW_MS },
      },
    }),
  )
})
afterAll(async () => {
  await killAll()
  await rm(root, { recursive: true, force: true })
})

async function startNode(dataDir: string): Promise<{ proc: Proc; summary: Summary }> {
  const proc = spawnCli(['start', '--port-base', '0', '--json', '--data-dir', dataDir, '--config', config, '--log-level', 'warn'])
  return { proc, summary: await firstJsonLine<Summary>(proc, 60_000) }
}

async function stop(proc: Proc): Promise<void> {
  proc.child.kill('SIGTERM')
  await proc.exited
}

/** The node's GitHub webhook secret (created at its first start). */
async function githubSecret(dataDir: string): Promise<string> {
  return (JSON.parse(await readFile(join(dataDir, 'interop', 'webhook-secrets.json'), 'utf8')) as { github: string }).github
}

async function webhook(interop: string, secret: string, id: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const w = signWebhook({ provider: 'github', secret, body: `{"delivery":"${id}"}`, nowMs: Date.now(), deliveryId: id })
  const res = await fetch(`${interop}${w.path}`, { method: 'POST', headers: w.headers, body: new Uint8Array(w.body) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/** A raw HTTP exchange over one socket: `head` (and `body`, if any) sent, then one byte every `trickleMs` until the response is complete. */
function rawExchange(base: string, head: string, trickleMs?: number): Promise<{ status: number; text: string; json: unknown; ms: number }> {
  const url = new URL(base)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const sock = connect(Number(url.port), url.hostname)
    let got = ''
    let timer: ReturnType<typeof setInterval> | undefined
    const finish = (): void => {
      if (timer !== undefined) clearInterval(timer)
      sock.destroy()
      const sep = got.indexOf('\r\n\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)
      const text = sep === -1 ? '' : got.slice(sep + 4)
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      resolve({ status, text: got, json, ms: performance.now() - started })
    }
    sock.setEncoding('utf8')
    sock.on('data', (d: string) => {
      got += d
      const sep = got.indexOf('\r\n\r\n')
      const len = /\r\ncontent-length: (\d+)/i.exec(got.slice(0, sep))?.[1]
      if (sep !== -1 && len !== undefined && got.length - sep - 4 >= Number(len)) finish()
    })
    sock.on('close', finish)
    sock.on('error', (e) => (got === '' ? reject(e) : finish()))
    sock.write(head)
    if (trickleMs !== undefined) timer = setInterval(() => sock.writable && sock.write('x'), trickleMs)
  })
}

const reasonOf = (json: unknown): string | undefined => (json as { error?: { details?: { reason?: string } } } | undefined)?.error?.details?.reason

describe('ron-node under slow clients (real process)', () => {
  let node: { proc: Proc; summary: Summary }
  let dataDir: string
  beforeAll(async () => {
    dataDir = join(root, 'node')
    node = await startNode(dataDir)
  })
  afterAll(async () => {
    await stop(node.proc)
  })

  it('regression: 3 API keys × 8 uploads trickling 1 byte every 2 s — every webhook is acknowledged, the trickles are cut with 408 (or refused 429), interop never browns out', { timeout: 60_000 }, async () => {
    const interop = node.summary.services['interop']!
    const secret = await githubSecret(dataDir)
    const uploads: Promise<{ status: number; json: unknown; ms: number }>[] = []
    for (let i = 0; i < 8; i++) {
      for (const k of KEYS) {
        uploads.push(rawExchange(interop, `POST /put HTTP/1.1\r\nhost: x\r\nx-api-key: ${k.key}\r\ncontent-length: 100\r\n\r\n`, 2000))
      }
    }
    const hooks: { status: number; body: Record<string, unknown> }[] = []
    // Webhooks while the trickles hold their slots, and on past the cut (2 × the window).
    const until = performance.now() + 2 * WINDOW_MS
    for (let i = 0; performance.now() < until; i++) {
      hooks.push(await webhook(interop, secret, `trickle-${i}`))
      await new Promise((r) => setTimeout(r, 200))
    }
    // Several webhooks answered across the whole window (how many depends on the machine's load).
    expect(hooks.length).toBeGreaterThanOrEqual(5)
    expect(hooks.filter((h) => h.status !== 202)).toEqual([])
    const cut = await Promise.all(uploads)
    for (const u of cut) expect(`${u.status} ${reasonOf(u.json)}`).toMatch(/^(408 (min_rate|deadline)|429 (per_client|uploads))$/)
    const timedOut = cut.filter((u) => u.status === 408)
    expect(timedOut.length).toBe(8)
    for (const u of timedOut) expect(u.ms).toBeLessThan(WINDOW_MS + 2500)
    const ready = (await (await fetch(`${interop}/readyz`)).json()) as { paths: Record<string, boolean> }
    expect(ready.paths).toMatchObject({ webhooks: true, uploads: true })
    const metrics = await (await fetch(`${interop}/metrics`)).text()
    expect(metrics).toMatch(/brownout_active\{component="webhooks",service="interop"\} 0/)
    expect(metrics).toMatch(/breaker_state\{target="storage\/write",service="interop"\} 0/)
  })

  it('a webhook body trickled at 1 byte per 1.5 s is cut with 408 after the window, not held open for 60 s', { timeout: 30_000 }, async () => {
    const interop = node.summary.services['interop']!
    const res = await rawExchange(interop, 'POST /webhooks/github HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{', 1500)
    expect(res.status).toBe(408)
    expect(res.text).toMatch(/\r\nconnection: close\r\n/i)
    expect(reasonOf(res.json)).toMatch(/^(min_rate|deadline)$/)
    expect(res.ms).toBeLessThan(WINDOW_MS + 2000)
  })

  it('JSON routes refuse a body with another Content-Type, or none, with 415 UnsupportedMediaType', async () => {
    const token = (await readFile(node.summary.tokenFile, 'utf8')).trim()
    const passport = node.summary.services['passport']!
    const index = node.summary.services['index']!
    const issue = JSON.stringify({ sub: 'x', aud: ['storage'], scope: ['storage:read'], ttlSec: 60 })
    // A browser's "simple" cross-origin POST (text/plain) and a body without a type: both refused.
    const plain = await fetch(`${passport}/v1/passport/issue`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' }, body: issue })
    expect(plain.status).toBe(415)
    expect(await plain.json()).toMatchObject({ error: { code: 'UnsupportedMediaType', details: { contentType: 'text/plain' } } })
    const untyped = await fetch(`${index}/names/e2e-name`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: new Blob([JSON.stringify({ manifestAddress: `b3:${'0'.repeat(64)}` })]) })
    expect(untyped.status).toBe(415)
    // The same call as JSON (with a charset) gets past the type check.
    const typed = await fetch(`${passport}/v1/passport/issue`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' }, body: issue })
    expect(typed.status).not.toBe(415)
    await typed.body?.cancel()
  })

  it('POST /put honours X-Expect-Address: a body that hashes otherwise is 422 IntegrityFailed and kept under neither address', async () => {
    const interop = node.summary.services['interop']!
    const storage = node.summary.services['storage']!
    const body = `uploaded ${Date.now()}`
    const actual = addressOf(new TextEncoder().encode(body))
    const claimed = addressOf(new TextEncoder().encode(`${body} (what the uploader said)`))
    const upload = (expectAddress: string): Promise<Response> =>
      fetch(`${interop}/put`, { method: 'POST', headers: { 'x-api-key': KEYS[0]!.key, 'content-type': 'application/octet-stream', 'x-expect-address': expectAddress }, body })
    const refused = await upload(claimed)
    expect(refused.status).toBe(422)
    expect(await refused.json()).toMatchObject({ error: { code: 'IntegrityFailed' } })
    for (const a of [actual, claimed]) expect((await fetch(`${storage}/o/${a}`, { method: 'HEAD' })).status, a).toBe(404)
    // The right address is stored.
    const ok = await upload(actual)
    expect(ok.status).toBeLessThan(300)
    expect(await ok.json()).toMatchObject({ address: actual })
    expect((await fetch(`${storage}/o/${actual}`, { method: 'HEAD' })).status).toBe(200)
  })

  it("Node's own 431 (header overflow) carries the SPEC error envelope on every listener", async () => {
    for (const base of [node.summary.admin, node.summary.services['interop']!, node.summary.services['storage']!]) {
      const res = await rawExchange(base, `GET /readyz HTTP/1.1\r\nhost: x\r\nx-pad: ${'a'.repeat(20_000)}\r\n\r\n`)
      expect(res.status, base).toBe(431)
      expect(res.json).toMatchObject({ error: { code: 'OverLimit', retryable: false, details: { source: 'headers' } } })
      expect(res.text).toMatch(/\r\nx-corr-id: \S+/i)
    }
  })
})

describe('webhook dedupe across a restart (real process)', () => {
  it('regression: a delivery acknowledged before a restart is a duplicate after it, with the same receipt', { timeout: 120_000 }, async () => {
    const dataDir = join(root, 'restart')
    const first = await startNode(dataDir)
    const secret = await githubSecret(dataDir)
    const body = '{"delivery":"across-restart"}'
    const w = signWebhook({ provider: 'github', secret, body, nowMs: Date.now(), deliveryId: 'across-restart' })
    const send = async (interop: string): Promise<{ status: number; json: Record<string, unknown> }> => {
      const res = await fetch(`${interop}${w.path}`, { method: 'POST', headers: w.headers, body: new Uint8Array(w.body) })
      return { status: res.status, json: (await res.json()) as Record<string, unknown> }
    }
    const acked = await send(first.summary.services['interop']!)
    expect(acked.status).toBe(202)
    await stop(first.proc)
    const second = await startNode(dataDir)
    const again = await send(second.summary.services['interop']!)
    expect(again.status).toBe(200)
    expect(again.json).toEqual({ accepted: true, receipt: acked.json['receipt'], duplicate: true })
    await stop(second.proc)
  })
})
